// SPDX-License-Identifier: Apache-2.0

// Package status is what gpufleet writes back to a fleet repository and
// reads from it on the next run: each fleet's status (conditions, cost,
// instances, last actions), the repository's own state (blocklist, retired
// tokens, preemptions seen), and how those files are read and written
// without leaving the checkout.
package status
