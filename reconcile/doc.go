// SPDX-License-Identifier: Apache-2.0

// Package reconcile is gpufleet's main loop: fetch the fleet repository,
// observe the clouds, plan, apply the difference, and commit a status report
// back to the repository, as named steps that record status on every exit.
package reconcile
