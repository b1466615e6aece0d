// SPDX-License-Identifier: Apache-2.0

// Package armsim is the emulator's Azure Resource Manager front: an
// http.Handler that serves, on the wire exactly as ARM does, Microsoft.Compute
// virtual machines (PUT, GET, DELETE, list, the power actions deallocate,
// powerOff, start and restart, async operations), proximity placement
// groups, usages and Resource SKUs; Microsoft.Network virtual networks,
// subnets and network interfaces; and ARM's own resource groups and
// subscriptions with their locations, backed by a sim.World, so that
// clients nobody here wrote — the official Go SDK (armcompute), the Azure
// SDK for Python — run against it unchanged, with the GA api-versions they
// send. As ARM's front door does, it turns away a request without a bearer
// token (any token is taken), content past 4 MB, a subscription id that is
// not a GUID and a resource group name ARM would not take, before any
// resource provider sees the request. A deallocated VM holds neither
// capacity nor quota in the world; starting it is a placement again.
//
// A VM PUT is checked as Compute checks it, down to custom data, Linux
// sign-in, managed identities (a user-assigned one must be the world's
// account's), the OS disk and accelerated networking, and what it
// references — its resource group, the interfaces it attaches (each one
// VM's at a time), the subnets of the interfaces it makes — must exist, in
// its location; a subscription has, without anyone making it, the network
// gpufleet's example uses (fixture.go). A PUT of a VM whose creation failed
// creates it again. Custom data is kept in the world's instance properties
// (customData, decoded) and, as in ARM, never returned. The world's rate
// limits meter each subscription's reads and writes, reported in the
// x-ms-ratelimit-remaining-subscription-* headers; an empty bucket answers
// 429 TooManyRequests with the wait until its next token.
package armsim
