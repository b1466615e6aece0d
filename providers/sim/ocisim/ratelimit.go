// SPDX-License-Identifier: Apache-2.0

package ocisim

import (
	"github.com/gpufleet/gpufleet/providers/sim"
)

// requestClass is the request class of an operation: the front meters
// launches apart from every other request, each tenancy on its own. A
// launch draws on the launch bucket only, so the general limit never
// makes the scarcer one scarcer still.
func requestClass(op string) string {
	if op == OpLaunchInstance {
		return sim.ClassLaunch
	}
	return sim.ClassGeneral
}

// The limits DefaultRateLimits sets. OCI publishes no numbers for Core
// Services or Identity: it throttles each tenancy as load requires and
// answers 429 TooManyRequests when it does. These are modest guesses,
// low enough that a caller meets a 429 under a burst of calls and must
// back off, high enough that a fleet of tens of nodes reconciles without
// waiting: ten requests a second with a burst of twenty, and a launch
// every two seconds with a burst of five.
const (
	GeneralRate  = 10.0
	GeneralBurst = 20
	LaunchRate   = 0.5
	LaunchBurst  = 5
)

// DefaultRateLimits are the front's modest OCI rate limits as world rules,
// for the emulator to set with sim.World.SetRateLimits beside those of the
// other clouds. A world has none unless told.
func DefaultRateLimits() []sim.RateLimit {
	return []sim.RateLimit{
		{Cloud: cloud, Class: sim.ClassGeneral, Rate: GeneralRate, Burst: GeneralBurst},
		{Cloud: cloud, Class: sim.ClassLaunch, Rate: LaunchRate, Burst: LaunchBurst},
	}
}
