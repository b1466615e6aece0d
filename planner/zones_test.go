// SPDX-License-Identifier: Apache-2.0

package planner

import (
	"testing"

	"github.com/gpufleet/gpufleet/schema"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// 1,000 nodes that would all land in the cheapest zone are spread by
// maxPerZone: no zone holds more than its cap, the cheapest zones fill
// first, and a cap the zones cannot meet leaves a spread shortfall.
func TestMaxPerZoneSpreadsNodes(t *testing.T) {
	in := Input{Defaults: schema.Defaults{MigrationThreshold: 0.1}}
	prices := map[string]float64{"us-east-1a": 0.50, "us-east-1b": 0.60, "us-east-1c": 0.70, "us-east-1d": 0.80, "us-east-1f": 0.90}
	for zone, price := range prices {
		in.Offers = append(in.Offers, offer("aws", "us-east-1", zone, "g6.xlarge", catalog.OnDemand, "L4", 1, price, Unlimited))
	}
	w := workloadSpec("chat", "L4", 1, 1000)
	w.Capacity = schema.CapacityOnDemand
	in.Fleets = []schema.Fleet{{Name: "inference", Owner: "me", Workloads: []schema.Workload{w}}}

	perZone := func(plan *Plan) map[string]int {
		out := map[string]int{}
		for _, pl := range plan.Workload("inference", "chat").Placements {
			out[pl.Offer.Zone] += pl.Count
		}
		return out
	}
	unspread, err := Solve(in)
	if err != nil {
		t.Fatal(err)
	}
	if got := perZone(unspread); got["us-east-1a"] != 1000 {
		t.Fatalf("without a cap: %v, want every node in the cheapest zone", got)
	}

	in.Fleets[0].Workloads[0].Spread.MaxPerZone = 250
	plan, err := Solve(in)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"us-east-1a": 250, "us-east-1b": 250, "us-east-1c": 250, "us-east-1d": 250}
	got := perZone(plan)
	if len(got) != len(want) || !plan.Optimal {
		t.Fatalf("with 250 a zone: %v (optimal %v), want %v", got, plan.Optimal, want)
	}
	for zone, n := range want {
		if got[zone] != n {
			t.Errorf("%s holds %d, want %d", zone, got[zone], n)
		}
	}

	// Nodes running in a zone count against its cap.
	for i := range 300 {
		in.Observed = append(in.Observed, Instance{ID: string(rune('a'+i%26)) + string(rune('a'+i/26)), Fleet: "inference", Workload: "chat",
			OfferKey: OfferKey{"aws", "us-east-1", "us-east-1a", "g6.xlarge", catalog.OnDemand}, State: StateRunning})
	}
	kept, err := Solve(in)
	if err != nil {
		t.Fatal(err)
	}
	if got := perZone(kept); got["us-east-1a"] != 250 {
		t.Errorf("with 300 running in us-east-1a: %v, want 250 kept there", got)
	}
	in.Observed = nil

	in.Fleets[0].Workloads[0].Spread.MaxPerZone = 150
	short, err := Solve(in)
	if err != nil {
		t.Fatal(err)
	}
	wp := short.Workload("inference", "chat")
	if wp.Placed != 750 || wp.Shortfall == nil || wp.Shortfall.Cause != CauseSpread {
		t.Fatalf("with 150 a zone in 5 zones: placed %d, shortfall %+v; want 750 and a spread shortfall", wp.Placed, wp.Shortfall)
	}
	if want := "the spread limit of 150 per zone leaves room for 750 of 1000 nodes"; wp.Shortfall.Message != want {
		t.Errorf("shortfall says %q, want %q", wp.Shortfall.Message, want)
	}
}
