// SPDX-License-Identifier: Apache-2.0

// Package ocisim is the emulator's Oracle Cloud Infrastructure front: an
// http.Handler that speaks OCI's Core Services API (compute, version
// 20160918) and the identity API's availability domains over the shared
// sim.World, closely enough that the official OCI Go SDK's ComputeClient
// and IdentityClient run against it unchanged. It serves the availability
// domains of a region, the shapes each offers, and instances (launch,
// list, get, terminate), with the API's HTTP signatures and its error
// envelope, {"code","message"}, and an opc-request-id on every answer.
//
// One listener serves every region: a request is routed by its Host, the
// regional endpoint the SDK signed (iaas.<region>.oraclecloud.com, or
// identity.<region>.oci.oraclecloud.com), so a client keeps its real host
// and sends its requests to the emulator's address. An availability domain
// is a zone of the world, named gpuf:<zone> as a tenancy's prefix names it
// on OCI; a shape is an instance type, sold on demand; a compartment is an
// instance's scope. An instance's display name is only a label, which any
// number of instances may share.
//
// A launch is idempotent on its opc-retry-token for the tenancy in the
// region: a repeat answers the instance the first made, and a different
// request with the same token is a 409 Conflict. The world honours a token
// for 24 hours after its launch, and for as long as its instance lives. A
// new instance is provisioning for the world's launch time, then running;
// a terminated one is terminating for its operation time, then gone. The
// instance's metadata is echoed without its user_data, which is never
// kept: it holds bootstrap secrets the world's state file has no business
// keeping.
//
// The world's rate limits meter each tenancy's launches (class launch)
// apart from its other requests (class general); an empty bucket answers
// 429 TooManyRequests with a Retry-After in whole seconds. OCI publishes
// no numbers; DefaultRateLimits are modest ones, and a world has none
// until set. The world's faults apply to every operation (OpLaunchInstance,
// OpListInstances, …), a fault's Code naming the API error code to answer
// with. A stock-out is OCI's 500 InternalError "Out of host capacity.", an
// exhausted quota its 400 LimitExceeded. OCI reports a launch's failure on
// the request, so a fail-later fault is a launch whose answer was lost: the
// instance is made and the caller hears a 500, and a retry with the same
// token finds it.
package ocisim
