// SPDX-License-Identifier: Apache-2.0

// Package conformance is the one test suite every provider passes,
// identically: against the emulator for all three clouds, and for AWS
// against moto as well. It checks what the reconciler relies on — idempotent
// creates, ownership, error classification, paging, preemption — and counts
// the API calls each create and delete costs.
package conformance
