// SPDX-License-Identifier: Apache-2.0

package planner

import (
	"testing"

	"github.com/gpufleet/gpufleet/schema"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// A fleet's own migrationThreshold and spotRiskPremium win over
// gpufleet's: of two fleets alike but for them, one moves and one stays.
func TestAFleetsOwnDefaultsWin(t *testing.T) {
	old := OfferKey{"aws", "us-east-1", "us-east-1a", "g6.xlarge", catalog.OnDemand}
	in := Input{
		Defaults: schema.Defaults{MigrationThreshold: 0.10, SpotRiskPremium: 0.15},
		Offers: []Offer{
			offer("aws", "us-east-1", "us-east-1a", "g6.xlarge", catalog.OnDemand, "L4", 1, 1.00, Unlimited),
			// 20 % cheaper than the running node's offer.
			offer("aws", "us-east-1", "us-east-1b", "g6.xlarge", catalog.OnDemand, "L4", 1, 0.80, Unlimited),
			// Cheaper still, unless spot is weighted up a lot.
			offer("aws", "us-east-1", "us-east-1c", "g6.xlarge", catalog.Spot, "L4", 1, 0.40, Unlimited),
		},
	}
	high, heavy := 0.6, 5.0
	for _, f := range []struct {
		name string
		own  schema.FleetDefaults
	}{{"plain", schema.FleetDefaults{}}, {"sticky", schema.FleetDefaults{MigrationThreshold: &high}}, {"wary", schema.FleetDefaults{SpotRiskPremium: &heavy}}} {
		w := workloadSpec("w", "L4", 1, 1)
		in.Fleets = append(in.Fleets, schema.Fleet{Name: f.name, Owner: "me", Defaults: f.own, Workloads: []schema.Workload{w}})
		in.Observed = append(in.Observed, Instance{ID: "i-" + f.name, Fleet: f.name, Workload: "w", OfferKey: old, State: StateRunning})
	}
	plan, err := Solve(in)
	if err != nil {
		t.Fatal(err)
	}
	where := func(fleet string) string {
		pl := plan.Workload(fleet, "w").Placements
		if len(pl) != 1 {
			t.Fatalf("%s: placements %v", fleet, pl)
		}
		return pl[0].Offer.Zone
	}
	if got := where("plain"); got != "us-east-1c" {
		t.Errorf("plain fleet on %s, want moved to spot in us-east-1c", got)
	}
	if got := where("sticky"); got != "us-east-1a" {
		t.Errorf("a fleet with migrationThreshold 0.6 on %s, want kept in us-east-1a", got)
	}
	if got := where("wary"); got != "us-east-1b" {
		t.Errorf("a fleet with spotRiskPremium 5 on %s, want moved to on-demand in us-east-1b", got)
	}
}
