// SPDX-License-Identifier: Apache-2.0

// Package providers is the boundary between gpufleet and the clouds: the
// small interface the reconciler consumes, the instance model, and the typed
// errors every cloud's failures are classified into. One subpackage per
// cloud implements it: on the cloud's official SDK (aws, azure, gcp), or on
// its REST API where it has no maintained Go client (lambda, Lambda Cloud);
// providers/sim emulates the clouds' APIs for tests and demos.
package providers
