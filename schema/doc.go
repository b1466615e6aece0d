// Package schema defines what a gpufleet repository may contain — the CUE
// schema in schema.cue — and loads a repository into typed Go values with
// defaults applied. Every problem it finds carries the file, line, column
// and CUE path of its cause, and all of them are reported at once.
package schema
