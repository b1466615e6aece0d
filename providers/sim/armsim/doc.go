// Package armsim is the emulator's Azure Resource Manager front: an
// http.Handler that serves Microsoft.Compute virtual machines (PUT, GET,
// DELETE, list, async operations), usages and Resource SKUs on the wire
// exactly as ARM does, backed by a sim.World, so the official armcompute
// client runs against it unchanged.
package armsim
