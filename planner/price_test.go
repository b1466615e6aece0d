// SPDX-License-Identifier: Apache-2.0

package planner

import (
	"strings"
	"testing"

	"github.com/gpufleet/gpufleet/schema/catalog"
)

// A price is valid from a cent per GPU-hour: below it is a placeholder.
// The cheapest GPU of the public price lists (an Azure spot slice of a
// Radeon MI25, $0.02563 a node-hour) and every price of the embedded
// catalog pass.
func TestAPriceUnderACentPerGPUHourIsAPlaceholder(t *testing.T) {
	tests := []struct {
		name   string
		gpus   int
		micros int64
		valid  bool
	}{
		{"three micro-dollars", 1, 3, false},
		{"just under a cent", 1, 9_999, false},
		{"a cent", 1, 10_000, true},
		{"the cheapest listed GPU", 1, 25_630, true},
		{"five cents for eight GPUs", 8, 50_000, false},
		{"eight cents for eight GPUs", 8, 80_000, true},
		{"no GPU count, a cent", 0, 10_000, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := Offer{GPUs: tt.gpus, PriceMicros: tt.micros}
			if got := ValidPrice(o); got != tt.valid {
				t.Errorf("ValidPrice(%d GPUs at %d micro-dollars) = %v, want %v", tt.gpus, tt.micros, got, tt.valid)
			}
		})
	}
	for _, o := range catalog.Default().Offers {
		if o.PriceMicros > 0 && !ValidPrice(Offer{GPUs: o.GPUs, PriceMicros: o.PriceMicros}) {
			t.Errorf("the embedded catalog's %s/%s/%s %s at %d micro-dollars is refused", o.Cloud, o.Region, o.InstanceType, o.Market, o.PriceMicros)
		}
	}
}

// An offer whose price is a placeholder of a few micro-dollars is not
// planned with: no running node moves to it.
func TestAPlaceholderPriceMovesNoNode(t *testing.T) {
	in := exampleInput(t)
	in.Observed = observe(solve(t, in))
	placeholders := 0
	for i, o := range in.Offers {
		if o.Cloud == "gcp" && o.InstanceType == "g2-standard-4" && !runsOn(in.Observed, o.OfferKey) {
			in.Offers[i].PriceMicros = 3
			placeholders++
		}
	}
	if placeholders == 0 {
		t.Fatal("no offer got a placeholder price; the test proves nothing")
	}
	if changes := Diff(solve(t, in), in.Observed, DiffOptions{}); len(changes.Actions) != 0 {
		t.Errorf("a placeholder price changed the fleets: %v", changes.Actions)
	}
}

// A move must save something: with a migration threshold of 0, an offer
// as cheap as the one a node runs on does not take it.
func TestATieMovesNoNode(t *testing.T) {
	in := exampleInput(t)
	in.Defaults.MigrationThreshold = 0
	in.Observed = observe(solve(t, in))
	var price int64
	for _, o := range in.Offers {
		if o.Cloud == "gcp" && o.InstanceType == "g2-standard-4" && o.Market == catalog.OnDemand && runsOn(in.Observed, o.OfferKey) {
			price = o.PriceMicros
		}
	}
	if price == 0 {
		t.Fatal("no node runs on a GCP L4 offer; the test proves nothing")
	}
	for i, o := range in.Offers {
		if o.Cloud == "gcp" && o.InstanceType == "g2-standard-4" && o.Market == catalog.OnDemand {
			in.Offers[i].PriceMicros = price
		}
	}
	if changes := Diff(solve(t, in), in.Observed, DiffOptions{}); len(changes.Actions) != 0 {
		t.Errorf("offers as cheap as where the nodes run moved them: %v", changes.Actions)
	}
}

// A move's reason says what is true of it: cheaper, cheaper once its
// data's egress is counted, or no saving at all.
func TestAMoveSaysWhatItSaves(t *testing.T) {
	from := OfferKey{"gcp", "us-central1", "us-central1-a", "g2-standard-4", catalog.OnDemand}
	to := OfferKey{"gcp", "europe-west4", "europe-west4-a", "g2-standard-4", catalog.OnDemand}
	tests := []struct {
		name                 string
		price, egressBefore  int64
		newPrice, egressThen int64
		want                 string
	}{
		{"a lower price", 700_000, 0, 560_000, 0, "moved to " + to.String() + ", 20% cheaper"},
		{"nearer its data", 700_000, 300_000, 700_000, 0, "moved to " + to.String() + ", nearer its data: 30% cheaper with egress"},
		{"no saving", 700_000, 0, 700_000, 0, "moved to " + to.String() + " at no saving: "},
		{"dearer", 700_000, 0, 800_000, 0, "moved to " + to.String() + " at no saving: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := WorkloadPlan{
				Name: "train", Fleet: "ml", Desired: 1, Placed: 1,
				Placements: []Placement{{Offer: to, Count: 1, PriceMicros: tt.newPrice, EgressMicros: tt.egressThen}},
				Leaving:    []Placement{{Offer: from, Count: 1, PriceMicros: tt.price, EgressMicros: tt.egressBefore}},
			}
			plan := &Plan{Fleets: []FleetPlan{{Name: "ml", Workloads: []WorkloadPlan{w}}}}
			changes := Diff(plan, []Instance{running("old", from, StateRunning, 1)}, DiffOptions{})
			if c, d := changes.Counts(); c != 1 || d != 1 {
				t.Fatalf("%v: want one create and one delete", changes.Actions)
			}
			del := changes.Actions[1]
			if del.Cause != CauseMoved || !strings.HasPrefix(del.Reason, tt.want) {
				t.Errorf("delete: %s %q, want moved, %q", del.Cause, del.Reason, tt.want)
			}
			if strings.Contains(del.Reason, "data") != (tt.egressBefore > 0) {
				t.Errorf("delete: %q speaks of its data when egress is %d", del.Reason, tt.egressBefore)
			}
		})
	}
}
