// SPDX-License-Identifier: Apache-2.0

// Package glfake is a fake of the slice of GitLab's REST API that gpufleet's
// merge-request commenter uses, for its tests and the command's scripts:
// a merge request's notes, listed in pages (X-Next-Page and a Link header,
// as GitLab sends them), created, updated and deleted, with every call
// recorded.
package glfake
