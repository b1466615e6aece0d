// SPDX-License-Identifier: Apache-2.0

package lambdasim

import (
	"github.com/gpufleet/gpufleet/providers/sim"
)

// requestClass is the request class of an operation: Lambda Cloud meters
// launches apart from every other request, each API key on its own. A
// launch draws on the launch bucket only, so the general limit never
// makes the scarcer one scarcer still.
func requestClass(op string) string {
	if op == OpLaunch {
		return sim.ClassLaunch
	}
	return sim.ClassGeneral
}

// The limits Lambda Cloud documents, which DefaultRateLimits models: about
// one request a second per API key, and one launch every twelve seconds.
// The burst of the general bucket is a small allowance the documentation
// leaves unsaid.
const (
	GeneralRate  = 1.0
	GeneralBurst = 2
	LaunchRate   = 1.0 / 12
	LaunchBurst  = 1
)

// DefaultRateLimits are Lambda Cloud's documented rate limits as world
// rules, for the emulator to set with sim.World.SetRateLimits beside
// those of the other clouds. A world has none unless told: tests, and the
// demo, which would wait twelve seconds a node, set lower ones or none.
func DefaultRateLimits() []sim.RateLimit {
	return []sim.RateLimit{
		{Cloud: cloud, Class: sim.ClassGeneral, Rate: GeneralRate, Burst: GeneralBurst},
		{Cloud: cloud, Class: sim.ClassLaunch, Rate: LaunchRate, Burst: LaunchBurst},
	}
}
