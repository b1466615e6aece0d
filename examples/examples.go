// Package examples carries the example fleet repository inside the gpufleet
// binary, so `gpufleet demo` works from any directory and in the container
// image.
package examples

import "embed"

// FleetRepo is examples/fleet-repo.
//
//go:embed all:fleet-repo
var FleetRepo embed.FS
