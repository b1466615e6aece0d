// SPDX-License-Identifier: Apache-2.0

// Package testenv is the end-to-end environment gpufleet's tests share: a
// fleet repository in a bare Git repository on disk, the emulated clouds
// beside it, and what a person does to the repository meanwhile. Only
// tests import it. It does not import reconcile, so reconcile's own tests
// can use it.
package testenv
