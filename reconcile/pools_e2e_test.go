// SPDX-License-Identifier: Apache-2.0

package reconcile

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/reconcile/render"
	"github.com/gpufleet/gpufleet/reconcile/testenv"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// emptyPools sets the capacity of a share of a cloud's pools to nothing,
// drawn from a seeded source, and of the pools the plan would use first:
// those are the ones a stock-out must be routed around.
func emptyPools(e *env, share float64, seed uint64, planned []string) int {
	r := rand.New(rand.NewPCG(seed, 1))
	emptied := 0
	for _, o := range e.World.Catalog().Offers {
		region, ok := e.World.Region(o.Cloud, o.Region)
		if !ok {
			continue
		}
		for _, zone := range region.Zones {
			if o.Zone != "" && o.Zone != zone {
				continue
			}
			key := o.Cloud + "/" + o.Region + "/" + zone + "/" + o.InstanceType + "/" + string(o.Market)
			if r.Float64() < share || slices.Contains(planned, key) {
				e.World.SetCapacity(o.Cloud, zone, o.InstanceType, o.Market, 0)
				emptied++
			}
		}
	}
	return emptied
}

// liveNodes counts the live instances and the node tokens held twice.
func liveNodes(e *env) (live, twice int) {
	seen := map[string]bool{}
	for _, inst := range e.World.Instances() {
		if inst.State != sim.StatePending && inst.State != sim.StateRunning {
			continue
		}
		live++
		token := testenv.NodeToken(inst)
		if seen[token] {
			twice++
		}
		seen[token] = true
	}
	return live, twice
}

// With 15% of the pools empty, and the pools the plan would fill first
// among them, the first run still converges, and few calls fail.
func TestFifteenPercentOfPoolsEmpty(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("a fleet of 1,000 nodes; TestStockOutFailsOverToTheNextCheapest covers empty pools under -short")
	}
	const n = 1000
	e := newEnvFrom(t, sim.Config{Seed: 5, Capacity: 1 << 20, Quota: 1 << 20}, threeClouds(n))
	dry := e.mustRun(func(o *Options) { o.DryRun = true })
	var planned []string
	for _, f := range dry.Report.Plan.Fleets {
		for _, w := range f.Workloads {
			for _, p := range w.Placements {
				planned = append(planned, p.Offer.String())
			}
		}
	}
	emptied := emptyPools(e, 0.15, 5, planned)
	calls := newCallCounter()
	res := e.mustRun(func(o *Options) { calls.wrap(o) })
	live, twice := liveNodes(e)
	mutating, failed := calls.totals()
	perNode := float64(failed) / float64(max(1, live))
	t.Logf("%d pools emptied, %d planned first; first run: %s in %d rounds, %d live, %d mutating calls, %d failed (%.4f per created node), %d twice",
		emptied, len(planned), OutcomeOf(res, nil), res.Rounds, live, mutating, failed, perNode, twice)
	switch {
	case OutcomeOf(res, nil) != Converged:
		t.Errorf("the first run did not converge: %v", res.NotConverged)
	case live != n || twice != 0:
		t.Errorf("%d live, %d of them twice; want %d once each", live, twice, n)
	case failed == 0:
		t.Error("no call failed: the empty pools were not in the way")
	case perNode > 0.02:
		t.Errorf("%.4f failed calls per created node, want at most 0.02", perNode)
	}
}

// fiveThousandT4 is a spot fleet far larger than the emulator's pools,
// which hold 64 nodes each.
var fiveThousandT4 = fstest.MapFS{
	"gpufleet.cue": {Data: []byte(`package gpufleet

gpufleet: clouds: {
	aws: regions: ["us-east-1", "us-west-2"]
	azure: {subscription: "00000000-0000-0000-0000-000000000000", resourceGroup: "gpufleet", regions: ["eastus"], launch: {adminUsername: "mlops", sshPublicKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHq3bWl2Zm9vYmFyYmF6cXV4cXV1eHF1dXpxdXV6 mlops@example.com", subnetByRegion: eastus: "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/gpufleet/providers/Microsoft.Network/virtualNetworks/gpu-eastus/subnets/nodes"}}
}
gpufleet: defaults: maxDeletions: 10000
`)},
	"fleets/infer.cue": {Data: []byte(`package gpufleet

fleets: infer: {
	owner: "platform"
	workloads: serve: {gpu: {model: "T4", perNode: 1}, nodes: 5000, capacity: "spot"}
}
`)},
}

// A fleet far larger than the pools: the first run fills what exists, with
// few failed calls, and the next one headlines how far short it is rather
// than "No changes". -short skips it.
func TestAFleetFarLargerThanThePools(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("a fleet of 5,000 nodes; run without -short")
	}
	e := newEnvFrom(t, sim.Config{Seed: 11}, fiveThousandT4)
	calls := newCallCounter()
	first := e.mustRun(func(o *Options) { calls.wrap(o) })
	live, twice := liveNodes(e)
	mutating, failed := calls.totals()
	perNode := float64(failed) / float64(max(1, live))
	t.Logf("first run: %d rounds, %d live of 5000, %d mutating calls, %d failed (%.4f per created node)", first.Rounds, live, mutating, failed, perNode)
	if twice != 0 {
		t.Fatalf("%d nodes live twice", twice)
	}
	if perNode > 0.05 {
		t.Errorf("%.4f failed calls per created node, want at most 0.05", perNode)
	}
	// Every pool is full: a second launch anywhere fails. The plan knows
	// it from what the first run learned, and asks for nothing.
	before := e.Creates()
	second := e.mustRun(nil)
	if e.Creates() != before {
		t.Errorf("the second run made %d create calls on full pools", e.Creates()-before)
	}
	headline := render.PlanSummary(second.Report)
	t.Logf("second run: %s", strings.ReplaceAll(headline, "\n", " / "))
	if !strings.HasPrefix(headline, "Short ") || !strings.Contains(headline, "of 5000 nodes") || strings.HasPrefix(headline, "No changes") {
		t.Errorf("the second run's headline does not state the shortfall: %q", headline)
	}
	if got := OutcomeOf(second, nil); got != NotConverged {
		t.Errorf("the second run ended %s, want not converged", got)
	}
	// Filled: every pool the fleet may use holds all the emulator gives a
	// pool, and the nodes live are those.
	pools, placed := 0, 0
	for _, o := range e.World.Catalog().Offers {
		if o.GPUModel != "T4" || o.GPUs != 1 || o.Market != catalog.Spot || !slices.Contains([]string{"us-east-1", "us-west-2", "eastus"}, o.Region) {
			continue
		}
		// An offer of one zone is that zone's pool; one with no zone is
		// sold in every zone of its region.
		if o.Zone != "" {
			pools++
			continue
		}
		region, _ := e.World.Region(o.Cloud, o.Region)
		pools += len(region.Zones)
	}
	for _, w := range second.Report.Plan.Fleets[0].Workloads {
		placed += w.Placed
	}
	if live != pools*64 || placed != live {
		t.Errorf("%d live and %d placed, want the %d pools' %d", live, placed, pools, pools*64)
	}
}
