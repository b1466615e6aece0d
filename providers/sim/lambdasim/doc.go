// SPDX-License-Identifier: Apache-2.0

// Package lambdasim is the emulator's Lambda Cloud front: an http.Handler
// that speaks Lambda Cloud's public REST API (v1, under /api/v1) over the
// shared sim.World. It serves the instance types with the regions that
// have room for one more of each now, the account's instances (list, get,
// launch, terminate) and its SSH keys (list, add, delete), with the API's
// bearer or basic authentication and its error envelope,
// {"error":{"code","message","suggestion"}}.
//
// Lambda Cloud has no zones, no spot market, no tags and no idempotency
// token: a region is one zone of the world named as the region, every
// instance is on-demand, and two identical launches make two instances.
// A launch is all or nothing, and is refused with the field it names when
// its region or type is unknown, it names other than exactly one SSH key
// or one the account lacks, or its name is over 64 characters. A new
// instance is booting for the world's launch time, then active; a
// terminated one is terminating for its operation time, then gone.
//
// The world's rate limits meter each API key's launches (class launch)
// apart from its other requests (class general); an empty bucket answers
// 429 global/too-many-requests with a Retry-After in whole seconds.
// Lambda documents about one request a second, and one launch every
// twelve seconds (DefaultRateLimits); a world has no limits until set. The
// world's faults apply to every operation (OpLaunch, OpList, …), a fault's
// Code naming the API error code to answer with. Lambda reports every
// failure on the request, so a fail-later fault on a launch is a launch
// whose answer was lost: the instances are made and the caller hears a
// 500. A preemption finds no spot instance to take back. Quotas are the
// world's, from the catalog; the API publishes none.
package lambdasim
