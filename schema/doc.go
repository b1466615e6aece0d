// SPDX-License-Identifier: Apache-2.0

// Package schema defines what a gpufleet repository may contain — the CUE
// schema in schema.cue — and loads a repository into typed Go values with
// defaults applied. Every problem it finds carries the file, line, column
// and CUE path of its cause, and all of them are reported at once.
//
// schema is gpufleet's lowest layer, so the leaves every layer shares live
// under it: catalog (what the clouds sell, which specs are checked against
// and plans are priced by) and atomicfile (files replaced in one step).
package schema
