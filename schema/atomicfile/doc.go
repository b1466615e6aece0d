// SPDX-License-Identifier: Apache-2.0

// Package atomicfile replaces files in one step, for every file gpufleet
// writes that someone else reads: status files, the emulator's state,
// vendored schemas and price catalogs. A reader, or a crash, sees the old
// file or the new one, never half of either.
package atomicfile
