// SPDX-License-Identifier: Apache-2.0

// Package conformance is the one test suite every provider passes,
// identically: against the emulator for every cloud, and for AWS against
// moto as well. Where a cloud lacks what a check relies on (Lambda Cloud's
// spot market), the Harness says so and the check is skipped with that
// reason. It checks what the reconciler relies on — idempotent
// creates, ownership, error classification, paging, preemption — and counts
// the API calls each create and delete costs.
package conformance
