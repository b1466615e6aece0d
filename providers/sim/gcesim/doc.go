// Package gcesim is the emulator's Compute Engine front: an http.Handler
// that speaks the compute/v1 REST API (instances insert, bulkInsert, get,
// delete and aggregatedList, zonal operations, regions.get and projects.get
// with their quotas, machine types by zone) over the shared sim.World, so
// that cloud.google.com/go/compute/apiv1 runs unchanged against it.
// Responses are the SDK's own computepb messages, so their shape is the real
// one. A fault whose code is "forbidden" or "insufficientPermissions" denies
// the call as GCE does, naming the IAM permission it needs. The world's
// rate limits meter each project's read and write requests; an empty
// bucket answers 403 rateLimitExceeded.
package gcesim
