// Package gcp is gpufleet's Compute Engine provider. It launches, lists and
// deletes labelled GPU VMs through the official compute/v1 REST client,
// waits on GCE's long-running operations with its own bounded loop, reads
// the project's GPU quotas and each zone's machine types, and classifies
// GCE's errors, synchronous or reported on an operation, into
// providers.Error.
package gcp
