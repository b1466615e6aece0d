// SPDX-License-Identifier: Apache-2.0

package reconcile

import (
	"testing"

	"github.com/gpufleet/gpufleet/providers/sim"
)

// With every cloud metering requests in token buckets far smaller than a
// 1,000-node run asks for at once, the run still converges the first time:
// the SDKs' retryers back off on each cloud's throttling error, and the
// throttled attempts stay a fraction of the calls — no retry storm.
func TestThrottledCloudsConvergeWithoutARetryStorm(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("a fleet of 1,000 nodes; the providers' retry tests cover throttling under -short")
	}
	const n = 1000
	e := newEnvFrom(t, sim.Config{Seed: 9, Capacity: 1 << 20, Quota: 1 << 20}, threeClouds(n))
	if err := e.World.SetRateLimits(
		sim.RateLimit{Cloud: "aws", Class: sim.ClassMutating, Rate: 5, Burst: 2},
		sim.RateLimit{Cloud: "aws", Class: sim.ClassNonMutating, Rate: 20, Burst: 5},
		sim.RateLimit{Cloud: "azure", Class: sim.ClassWrite, Rate: 400, Burst: 20},
		sim.RateLimit{Cloud: "azure", Class: sim.ClassRead, Rate: 800, Burst: 40},
		sim.RateLimit{Cloud: "gcp", Class: sim.ClassWrite, Rate: 5, Burst: 1},
		sim.RateLimit{Cloud: "gcp", Class: sim.ClassRead, Rate: 20, Burst: 3},
	); err != nil {
		t.Fatal(err)
	}
	res := e.mustRun(nil)
	live, twice := liveNodes(e)
	calls, throttled := 0, 0
	for _, c := range e.World.Calls() {
		calls += c
	}
	for _, c := range e.World.Throttled() {
		throttled += c
	}
	t.Logf("first run: %s in %d rounds, %d live, %d API calls, %d throttled (%v)", OutcomeOf(res, nil), res.Rounds, live, calls, throttled, e.World.Throttled())
	switch {
	case OutcomeOf(res, nil) != Converged:
		t.Errorf("not converged: %v", res.NotConverged)
	case live != n || twice != 0:
		t.Errorf("%d live, %d twice, want %d once each", live, twice, n)
	case throttled == 0:
		t.Error("nothing was throttled: the buckets did not bite")
	case float64(throttled) > 0.5*float64(calls):
		t.Errorf("%d of %d calls throttled: a retry storm", throttled, calls)
	}
}
