// SPDX-License-Identifier: Apache-2.0

// Package emulator runs the fronts of the cloud emulator — EC2, Azure
// Resource Manager, Compute Engine, Lambda Cloud and OCI, and the
// hyperscalers' price APIs — on loopback over one simulated world, saving
// the world to its state file before answering a request that changed it,
// so an answer survives a crash. It is what `gpufleet sim serve` and
// gpufleet's embedded demo mode start.
package emulator
