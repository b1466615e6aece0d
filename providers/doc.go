// SPDX-License-Identifier: Apache-2.0

// Package providers is the boundary between gpufleet and the clouds: the
// small interface the reconciler consumes, the instance model, and the typed
// errors every cloud's failures are classified into. One subpackage per
// cloud implements it on that cloud's official SDK; providers/sim emulates
// the three clouds' APIs for tests and demos.
package providers
