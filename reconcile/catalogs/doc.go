// SPDX-License-Identifier: Apache-2.0

// Package catalogs refreshes the price catalog file from the clouds' own
// price APIs, all or nothing: every cloud asked for is read to the end,
// and only when all of them were read is the merged catalog written, in
// one step, and its changed prices appended to the price history. `gpufleet
// catalog refresh` runs one refresh; `gpufleet serve` runs one on a
// schedule and plans with the catalog the last good one wrote.
package catalogs
