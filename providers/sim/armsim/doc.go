// Package armsim is the emulator's Azure Resource Manager front: an
// http.Handler that serves Microsoft.Compute virtual machines (PUT, GET,
// DELETE, list, async operations), proximity placement groups, usages and
// Resource SKUs on the wire
// exactly as ARM does, backed by a sim.World, so the official armcompute
// client runs against it unchanged. A PUT is checked as Compute checks it,
// down to custom data, Linux sign-in, managed identities, the OS disk and
// accelerated networking; custom data is kept in the world's instance
// properties (customData, decoded) and, as in ARM, never returned. The
// world's rate limits meter each
// subscription's reads and writes, reported in the
// x-ms-ratelimit-remaining-subscription-* headers; an empty bucket answers
// 429 TooManyRequests with the wait until its next token.
package armsim
