// SPDX-License-Identifier: Apache-2.0

// Package redact keeps the values of secrets out of everything gpufleet
// writes and sends: command output, logs, status files, commit messages,
// plans, comments and notifications. A Set knows the values in use — the
// bootstrap secrets and credentials of the environment, and what a run
// reads as it goes — and masks each wherever it appears, in the forms a
// value takes in text: as it is, JSON-escaped, quoted, URL-escaped or in
// base64, and each line of one that spans lines.
package redact
