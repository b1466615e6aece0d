// Package emulator runs the three fronts of the cloud emulator — EC2,
// Azure Resource Manager and Compute Engine — on loopback over one
// simulated world, saving the world to its state file as it changes. It is
// what `gpufleet sim serve` and gpufleet's embedded demo mode start.
package emulator
