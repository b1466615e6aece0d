// SPDX-License-Identifier: Apache-2.0

// Package gcp is gpufleet's Compute Engine provider. It launches, lists and
// deletes labelled GPU VMs through the official compute/v1 REST client,
// waits on GCE's long-running operations with its own bounded loop, reads
// the project's GPU quotas and each zone's machine types, and classifies
// GCE's errors, synchronous or reported on an operation, into
// providers.Error. A VM boots with its bootstrap in its metadata
// (user-data for cloud-init, startup-script for a script), runs as the
// configured service account, gets an external address only when
// configured to, and boots from a disk of a type its machine series takes.
// A zone gang's placement group is a compact (COLLOCATED) resource policy,
// marked as gpufleet's in its description, as resource policies have no
// labels.
package gcp
