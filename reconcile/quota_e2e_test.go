// SPDX-License-Identifier: Apache-2.0

package reconcile

import (
	"cmp"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// fiveHundredL4 is a 500-node L4 fleet that may run in two clouds and five
// regions, on demand.
var fiveHundredL4 = fstest.MapFS{
	"gpufleet.cue": {Data: []byte(`package gpufleet

gpufleet: clouds: {
	aws: regions: ["us-east-1", "us-west-2"]
	gcp: {project: "acme-gpu-fleet", regions: ["us-central1", "us-east4", "europe-west4"]}
}
gpufleet: defaults: maxDeletions: 1000
`)},
	"fleets/infer.cue": {Data: []byte(`package gpufleet

fleets: infer: {
	owner: "platform"
	workloads: serve: {gpu: {model: "L4", perNode: 1}, nodes: 500, capacity: "on-demand", placement: clouds: ["aws", "gcp"]}
}
`)},
}

// The 500-node L4 fleet, with a quota on the L4 GPUs of the region the plan
// fills first, the cheapest: the first run places what the quota allows
// with no quota error, few failed calls per created node, and converges. It
// runs on the emulator's default zones (64 nodes of a type each), with a
// quota of twice what the region's zones of its cheapest type hold, so they
// run dry before the quota is full; and on zones of 100 with random
// stock-outs on 1% of creates besides, with a quota of three quarters of
// what those zones hold, so the quota is filled and the plan says it is
// full.
func TestFiveHundredNodesWithinTheQuota(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("a fleet of 500 nodes; planner's quota tests and TestQuotasAndOfferingsSteerThePlan cover quotas under -short")
	}
	for _, tt := range []struct {
		name     string
		cfg      sim.Config
		stockOut float64
		// quota is the limit set, and least the nodes that must land in
		// the cheapest region, given what its zones of the cheapest type
		// hold.
		quota, least func(held int) int
	}{
		{name: "default zones", cfg: sim.Config{Seed: 7},
			quota: func(held int) int { return 2 * held }, least: func(held int) int { return held }},
		{name: "zones of 100 and random stock-outs", cfg: sim.Config{Seed: 7, Capacity: 100}, stockOut: 0.01,
			quota: func(held int) int { return held * 3 / 4 }, least: func(held int) int { return held * 3 / 4 * 5 / 6 }},
	} {
		t.Run(tt.name, func(t *testing.T) { fiveHundredWithinTheQuota(t, tt.cfg, tt.stockOut, tt.quota, tt.least) })
	}
}

func fiveHundredWithinTheQuota(t *testing.T, cfg sim.Config, stockOut float64, quotaOf, leastOf func(int) int) {
	e := newEnvFrom(t, cfg, fiveHundredL4)
	// The cheapest offer of the plan, made before any quota is set, is
	// where the quota goes; what it holds is its type's pools in its
	// region.
	dry := e.mustRun(func(o *Options) { o.DryRun = true })
	serve := dry.Report.Plan.Workload("infer", "serve")
	if serve == nil || len(serve.Placements) == 0 {
		t.Fatalf("the dry run places no node: %+v", serve)
	}
	cheapest := slices.MinFunc(serve.Placements, func(a, b planner.Placement) int { return cmp.Compare(a.PriceMicros, b.PriceMicros) }).Offer
	if cheapest.Cloud != catalog.GCP {
		t.Fatalf("the plan fills %s first; this test sets GCP's per-region L4 quota", cheapest)
	}
	region := cheapest.Region
	capacity := cmp.Or(cfg.Capacity, 64)
	held := 0
	for _, o := range e.World.Catalog().Offers {
		if o.Cloud != cheapest.Cloud || o.Region != region || o.InstanceType != cheapest.InstanceType || o.Market != cheapest.Market {
			continue
		}
		// An offer with no zone is sold in every zone of its region.
		zones := 1
		if o.Zone == "" {
			r, _ := e.World.Region(o.Cloud, o.Region)
			zones = len(r.Zones)
		}
		held += zones * capacity
	}
	quota, least := quotaOf(held), leastOf(held)
	e.World.SetQuota(catalog.GCP, region, "NVIDIA_L4_GPUS", quota)
	if stockOut > 0 {
		if err := e.World.AddFaults(&sim.Fault{Op: "instances.insert", Kind: sim.FaultCapacity, Rate: stockOut}, &sim.Fault{Op: "instances.bulkInsert", Kind: sim.FaultCapacity, Rate: stockOut}, &sim.Fault{Op: "RunInstances", Kind: sim.FaultCapacity, Rate: stockOut}); err != nil {
			t.Fatal(err)
		}
	}
	calls := newCallCounter()
	res := e.mustRun(func(o *Options) { calls.wrap(o) })
	live := e.Live()["infer/serve"]
	_, failed := calls.totals()
	quotaErrors := 0
	for _, a := range res.Applied {
		if strings.Contains(a.Error, "QUOTA_EXCEEDED") || strings.Contains(a.Error, "quotaExceeded") || strings.Contains(a.Error, "VcpuLimitExceeded") {
			quotaErrors++
		}
	}
	inCheapest := 0
	for _, inst := range e.World.Instances() {
		if inst.Cloud == cheapest.Cloud && inst.Region == region && (inst.State == sim.StatePending || inst.State == sim.StateRunning) {
			inCheapest++
		}
	}
	perNode := float64(failed) / float64(max(1, live))
	t.Logf("%s's %s hold %d, quota %d; first run: %d live, %d in %s, %d rounds, %d create calls, %d failed (%.3f per created node), %d quota errors",
		region, cheapest.InstanceType, held, quota, live, inCheapest, region, res.Rounds, e.Creates(), failed, perNode, quotaErrors)
	switch {
	case live != 500:
		t.Errorf("%d nodes live after the first run, want all 500", live)
	case quotaErrors != 0:
		t.Errorf("%d creates ran into the quota", quotaErrors)
	case inCheapest > quota:
		t.Errorf("%d nodes in %s, over the quota's %d", inCheapest, region, quota)
	case inCheapest < least:
		t.Errorf("only %d nodes in %s, the cheapest region, whose quota holds %d", inCheapest, region, quota)
	case perNode > 0.05:
		t.Errorf("%.3f failed create calls per created node, want at most 0.05", perNode)
	}
	// The plan names the quota that holds it back.
	full := false
	for _, q := range res.Report.Plan.Quotas {
		if q.Name == "NVIDIA_L4_GPUS" && q.Region == region {
			full = q.Full || q.Planned == int64(quota)
		}
	}
	if !full && inCheapest == quota {
		t.Errorf("the plan does not say the %s L4 quota is full: %+v", region, res.Report.Plan.Quotas)
	}
	// Converged: the next run has nothing to do.
	before := e.Creates()
	e.mustRun(nil)
	if e.Creates() != before {
		t.Errorf("the second run created %d more", e.Creates()-before)
	}
}
