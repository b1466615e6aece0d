// SPDX-License-Identifier: Apache-2.0

package planner

import (
	"testing"

	"github.com/gpufleet/gpufleet/schema"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// Placing one more node wins over any saving: here the gang must move to a
// dearer region so that a node only the cheap region can take is placed.
// A penalty of the dearest node's price for each unplaced node is not
// enough, since the move costs the gang's whole price difference.
func TestAGangMovesSoThatOneMoreNodeIsPlaced(t *testing.T) {
	gang := workloadSpec("train", "H100", 8, 2)
	gang.Placement.Gang = "region"
	gang.Priority = 0
	solo := workloadSpec("solo", "H100", 8, 1)
	solo.Placement.Regions.Allow = []string{"us-east-1"}
	solo.Priority = 0
	in := Input{
		Fleets: []schema.Fleet{{Name: "f", Owner: "o", Workloads: []schema.Workload{gang, solo}}},
		Offers: []Offer{
			offer("aws", "us-east-1", "us-east-1a", "p5", catalog.OnDemand, "H100", 8, 10, 2),
			offer("aws", "us-west-2", "us-west-2a", "p5", catalog.OnDemand, "H100", 8, 30, 2),
		},
	}
	plan := solve(t, in)
	if s, g := plan.Workload("f", "solo"), plan.Workload("f", "train"); s.Placed != 1 || g.Placed != 2 {
		t.Fatalf("solo placed %d, the gang %d: want all 3 nodes placed", s.Placed, g.Placed)
	}
	for _, pl := range plan.Workload("f", "train").Placements {
		if pl.Offer.Region != "us-west-2" {
			t.Errorf("the gang runs in %s, want us-west-2", pl.Offer.Region)
		}
	}
	if !plan.Optimal {
		t.Error("not marked optimal")
	}
}

// The same holds without gangs: a chain of moves can place one more node
// at a cost above any single node's price.
func TestAChainOfMovesPlacesOneMoreNode(t *testing.T) {
	spec := func(name string, allow ...string) schema.Workload {
		w := workloadSpec(name, "H100", 8, 1)
		w.Priority = 0
		w.Placement.Regions.Allow = allow
		return w
	}
	// c fits only in us-east-1, b in us-east-1 or (pulling its data across
	// for $29 an hour) us-west-2, a in us-west-2 or eu-west-1 at $30.
	// Placing c moves b and then a: $58 more for one more node, when no
	// node costs over $30.
	b := spec("b", "us-east-1", "us-west-2")
	b.Data = &schema.Data{Cloud: "aws", Region: "us-east-1", SizeGB: 1450}
	b.RunHours = 1
	in := Input{
		Fleets: []schema.Fleet{{Name: "f", Owner: "o", Workloads: []schema.Workload{spec("a", "us-west-2", "eu-west-1"), b, spec("c", "us-east-1")}}},
		Offers: []Offer{
			offer("aws", "us-east-1", "us-east-1a", "p5", catalog.OnDemand, "H100", 8, 1, 1),
			offer("aws", "us-west-2", "us-west-2a", "p5", catalog.OnDemand, "H100", 8, 1, 1),
			offer("aws", "eu-west-1", "eu-west-1a", "p5", catalog.OnDemand, "H100", 8, 30, 1),
		},
		Egress: []catalog.Egress{{Cloud: "aws", InterRegionMicrosPerGB: 20_000}},
	}
	plan := solve(t, in)
	placed := 0
	for _, name := range []string{"a", "b", "c"} {
		placed += plan.Workload("f", name).Placed
	}
	if placed != 3 {
		t.Errorf("placed %d of 3 nodes", placed)
	}
}

// Priorities order the nodes placed: one node of a higher priority beats
// any number of a lower one.
func TestOneHigherPriorityNodeBeatsManyLowerOnes(t *testing.T) {
	big := workloadSpec("big", "H100", 8, 3)
	big.Priority = 10
	vip := workloadSpec("vip", "H100", 8, 1)
	vip.Priority = 20
	vip.Placement.Regions.Allow = []string{"us-east-1"}
	in := Input{
		Fleets: []schema.Fleet{{Name: "f", Owner: "o", Workloads: []schema.Workload{big, vip}}},
		Offers: []Offer{
			offer("aws", "us-east-1", "us-east-1a", "p5", catalog.OnDemand, "H100", 8, 10, 3),
		},
	}
	plan := solve(t, in)
	if v, b := plan.Workload("f", "vip").Placed, plan.Workload("f", "big").Placed; v != 1 || b != 2 {
		t.Errorf("vip %d, big %d: want the vip's node, then 2 of big", v, b)
	}
}
