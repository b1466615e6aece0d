// SPDX-License-Identifier: Apache-2.0

package planner

import (
	"testing"

	"github.com/gpufleet/gpufleet/schema"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// A zone gang runs whole in one zone: with the cheap region's zones
// holding three nodes each, four nodes go to a dearer zone that holds all
// four, and where no zone does, none run. A region gang may use both
// cheap zones.
func TestAZoneGangRunsWholeInOneZone(t *testing.T) {
	offers := []Offer{
		offer("aws", "us-east-1", "us-east-1a", "p5", catalog.OnDemand, "H100", 8, 90, 3),
		offer("aws", "us-east-1", "us-east-1b", "p5", catalog.OnDemand, "H100", 8, 90, 3),
		offer("aws", "us-west-2", "us-west-2a", "p5", catalog.OnDemand, "H100", 8, 99, 4),
	}
	plan := func(gang string, nodes int) WorkloadPlan {
		w := workloadSpec("train", "H100", 8, nodes)
		w.Placement.Gang = gang
		p := solve(t, Input{Fleets: []schema.Fleet{{Name: "ml", Workloads: []schema.Workload{w}}}, Offers: offers})
		return p.Fleets[0].Workloads[0]
	}
	zone := plan("zone", 4)
	if zone.Placed != 4 || len(zone.Placements) != 1 || zone.Placements[0].Offer.Zone != "us-west-2a" {
		t.Errorf("zone gang of 4: %+v, want all in us-west-2a", zone.Placements)
	}
	region := plan("region", 4)
	if region.Placed != 4 || len(region.Placements) != 2 || region.Placements[0].Offer.Region != "us-east-1" {
		t.Errorf("region gang of 4: %+v, want it over us-east-1's two zones", region.Placements)
	}
	none := plan("zone", 5)
	if none.Placed != 0 || none.Shortfall == nil || none.Shortfall.Cause != CauseGang {
		t.Errorf("zone gang of 5: placed %d, shortfall %+v; want none placed, for the gang", none.Placed, none.Shortfall)
	}
}
