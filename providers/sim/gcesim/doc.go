// Package gcesim is the emulator's Compute Engine front: an http.Handler
// that speaks the compute/v1 REST API (instances insert, bulkInsert, get,
// delete and aggregatedList, zonal operations, regions.get and projects.get
// with their quotas, machine types by zone, disks.get for boot disks,
// group placement resource policies with their regional operations) over
// the shared sim.World, so that cloud.google.com/go/compute/apiv1 runs
// unchanged against it. Responses are the SDK's own computepb messages, so
// their shape is the real one. An instance keeps what it was created with
// and returns it: its metadata, service account, access config and boot
// disk type. Metadata beyond GCE's limits, and a boot disk type its
// machine series does not take, are refused with GCE's 400. A fault whose
// code is "forbidden" or "insufficientPermissions" denies the call as GCE
// does, naming the IAM permission it needs. The world's rate limits meter
// each project's read and write requests; an empty bucket answers 403
// rateLimitExceeded. Resource policies are kept by the front, not the
// world, so they do not outlive the process.
package gcesim
