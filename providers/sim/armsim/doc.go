// Package armsim is the emulator's Azure Resource Manager front: an
// http.Handler that serves Microsoft.Compute virtual machines (PUT, GET,
// DELETE, list, async operations), usages and Resource SKUs on the wire
// exactly as ARM does, backed by a sim.World, so the official armcompute
// client runs against it unchanged. The world's rate limits meter each
// subscription's reads and writes, reported in the
// x-ms-ratelimit-remaining-subscription-* headers; an empty bucket answers
// 429 TooManyRequests with the wait until its next token.
package armsim
