// SPDX-License-Identifier: Apache-2.0

// Package gcesim is the emulator's Compute Engine front: an http.Handler
// that speaks the compute/v1 REST API over the shared sim.World, so that
// cloud.google.com/go/compute/apiv1 and gcloud run unchanged against it.
// It serves instances (insert, bulkInsert, get, delete, list,
// aggregatedList) with their zonal operations (get, wait, list), Google's
// batch endpoint that gcloud sends several calls through, zones, regions
// and projects with the world's quotas, machine, accelerator and disk
// types, public images, the boot disks of instances, networks and
// subnetworks with their global and regional operations, and group
// placement resource policies. Responses are the SDK's own computepb
// messages, so their shape is the real one.
//
// Links (selfLink, zone, targetLink, network…) are written under the base
// the request came on, so clients that follow them come back to the
// emulator; a request to a googleapis.com host gets GCE's own base. A
// request may name a resource by a full URL under either base, by a
// partial URL, or, where GCE allows it, by name; what it names must exist
// (a network, subnetwork, public image, machine or accelerator type,
// resource policy), or it is refused with GCE's own error.
//
// An instance keeps what it was created with and returns it with what GCE
// adds: its metadata, service account, NIC with its address in its
// subnetwork, boot disk, accelerators and CPU platform. With the world's
// operation time above zero, operations run for that long and instances
// go PROVISIONING, STAGING, RUNNING, and STOPPING when deleted. A fault
// whose code is "forbidden" or "insufficientPermissions" denies the call
// as GCE does, naming the IAM permission it needs. The world's rate limits
// meter each project's read and write requests; an empty bucket answers
// 403 rateLimitExceeded. Networks, subnetworks and the records of
// operations live in the world's resource store; resource policies are
// kept by the front, so they do not outlive the process.
package gcesim
