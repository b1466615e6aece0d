// SPDX-License-Identifier: Apache-2.0

package planner

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gpufleet/gpufleet/schema/catalog"
)

// A running node is never deleted because its offer's price is unknown: a
// catalog of zeros, one that lost the offer, or an implausible price keeps
// every node where it runs, counted as placed, and says so.
func TestNodesOnOffersWithoutAValidPriceStay(t *testing.T) {
	base := exampleInput(t)
	base.Observed = observe(solve(t, base))
	tests := []struct {
		name  string
		price func(o Offer) (int64, bool) // new price, and whether to keep the offer at all
	}{
		{"every price zero", func(Offer) (int64, bool) { return 0, true }},
		{"every price negative", func(o Offer) (int64, bool) { return -o.PriceMicros, true }},
		{"every price absurd", func(o Offer) (int64, bool) { return o.PriceMicros * 100_000, true }},
		{"the running offers vanished from the catalog", func(o Offer) (int64, bool) { return o.PriceMicros, !runsOn(base.Observed, o.OfferKey) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := base
			in.Offers = nil
			for _, o := range base.Offers {
				price, keep := tt.price(o)
				if keep {
					o.PriceMicros = price
					in.Offers = append(in.Offers, o)
				}
			}
			plan := solve(t, in)
			changes := Diff(plan, in.Observed, DiffOptions{})
			for _, a := range changes.Actions {
				if a.Kind == Delete {
					t.Errorf("deleted a running node: %v", a)
				}
			}
			held := 0
			for _, f := range plan.Fleets {
				for _, w := range f.Workloads {
					for _, pl := range w.Placements {
						if pl.Unpriced {
							held += pl.Count
						}
					}
				}
			}
			if held == 0 {
				t.Error("no placement is marked unpriced")
			}
			if !strings.Contains(strings.Join(plan.Warnings, "\n"), "no valid price") {
				t.Errorf("no warning says why nodes were kept: %q", plan.Warnings)
			}
		})
	}
}

func runsOn(observed []Instance, k OfferKey) bool {
	for _, inst := range observed {
		if inst.OfferKey == k {
			return true
		}
	}
	return false
}

func TestCheckPricesRefusesACloudWithoutOne(t *testing.T) {
	good := offer("aws", "us-east-1", "us-east-1a", "p5.48xlarge", catalog.OnDemand, "H100", 8, 98.32, Unlimited)
	zero := offer("gcp", "us-central1", "us-central1-a", "a3-highgpu-8g", catalog.OnDemand, "H100", 8, 0, Unlimited)
	absurd := offer("gcp", "us-central1", "us-central1-b", "a3-highgpu-8g", catalog.OnDemand, "H100", 8, 9000, Unlimited)
	if err := CheckPrices([]Offer{good}, []string{"aws"}, "snapshot"); err != nil {
		t.Errorf("a valid price was refused: %v", err)
	}
	err := CheckPrices([]Offer{good, zero, absurd}, []string{"aws", "gcp"}, "catalog.json")
	if err == nil || !strings.Contains(err.Error(), "no valid offer for gcp") || !strings.Contains(err.Error(), "catalog.json") {
		t.Errorf("error %v, want one naming gcp and the source", err)
	}
	if err := CheckPrices(nil, []string{"azure"}, "empty"); err == nil {
		t.Error("no offers at all was accepted")
	}
}

// Every delete says what is true of it.
func TestDeletesCarryTheirTrueCause(t *testing.T) {
	other := OfferKey{"gcp", "us-central1", "us-central1-b", "a3-highgpu-8g", catalog.Spot}
	tests := []struct {
		name     string
		plan     func() *Plan
		observed []Instance
		want     map[string]Cause // instance → cause
	}{{
		name:     "fewer nodes asked for",
		plan:     func() *Plan { return onePlacement(map[OfferKey]int{cheap: 1}) },
		observed: []Instance{running("a", cheap, StateRunning, 1), running("b", cheap, StateRunning, 2)},
		want:     map[string]Cause{"b": CauseSurplus},
	}, {
		name:     "moved to a cheaper offer",
		plan:     func() *Plan { return onePlacement(map[OfferKey]int{cheap: 2}) },
		observed: []Instance{running("a", pricey, StateRunning, 1), running("b", pricey, StateRunning, 2)},
		want:     map[string]Cause{"a": CauseMoved, "b": CauseMoved},
	}, {
		name: "part moved, part surplus",
		plan: func() *Plan { return onePlacement(map[OfferKey]int{cheap: 1}) },
		observed: []Instance{
			running("a", pricey, StateRunning, 1), running("b", pricey, StateRunning, 2), running("c", other, StateRunning, 3),
		},
		want: map[string]Cause{"a": CauseSurplus, "b": CauseSurplus, "c": CauseMoved},
	}, {
		name: "the spec rules the offer out",
		plan: func() *Plan {
			p := onePlacement(map[OfferKey]int{cheap: 1})
			p.Fleets[0].Workloads[0].Unfit = []UnfitOffer{{Offer: pricey, Reason: RejectRegion}}
			return p
		},
		observed: []Instance{running("a", pricey, StateRunning, 1)},
		want:     map[string]Cause{"a": CauseDisallowed},
	}, {
		name: "shed for the budget",
		plan: func() *Plan {
			p := onePlacement(map[OfferKey]int{cheap: 1})
			w := &p.Fleets[0].Workloads[0]
			w.Desired = 2
			w.Shortfall = &Shortfall{Nodes: 1, Cause: CauseBudget, Message: "over budget"}
			return p
		},
		observed: []Instance{running("a", cheap, StateRunning, 1), running("b", cheap, StateRunning, 2)},
		want:     map[string]Cause{"b": CauseShed},
	}, {
		name: "leftovers are collected",
		plan: func() *Plan { return onePlacement(map[OfferKey]int{cheap: 1}) },
		observed: []Instance{
			running("a", cheap, StateRunning, 1), running("f", cheap, StateFailed, 2),
			running("s", cheap, StateStopping, 3), running("p", cheap, StatePreempted, 4), running("gone", cheap, StateTerminated, 5),
		},
		want: map[string]Cause{"f": CauseFailed, "s": CauseStopped, "p": CausePreempted},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			changes := Diff(tt.plan(), tt.observed, DiffOptions{})
			got := map[string]Cause{}
			for _, a := range changes.Actions {
				if a.Kind == Delete {
					got[a.Instance] = a.Cause
					if a.Reason == "" {
						t.Errorf("delete of %s has no reason", a.Instance)
					}
				}
			}
			if len(got) != len(tt.want) {
				t.Errorf("deletes %v, want %v", got, tt.want)
			}
			for id, cause := range tt.want {
				if got[id] != cause {
					t.Errorf("%s deleted as %q, want %q", id, got[id], cause)
				}
			}
		})
	}
}

// Failed and stopped instances of a removed fleet are counted with its
// orphans, not forgotten.
func TestOrphansIncludeLeftovers(t *testing.T) {
	plan := &Plan{}
	observed := []Instance{running("a", cheap, StateRunning, 1), running("f", cheap, StateFailed, 2), running("t", cheap, StateTerminated, 3)}
	changes := Diff(plan, observed, DiffOptions{})
	if len(changes.Orphans) != 2 || len(changes.Actions) != 0 {
		t.Errorf("orphans %v, actions %v; want the running and the failed instance as orphans", changes.Orphans, changes.Actions)
	}
}

// A moved node's reason says where it goes and what that saves, from the
// price of the offer it leaves, which the plan keeps for it.
func TestAMoveSaysWhereToAndHowMuchCheaper(t *testing.T) {
	in := exampleInput(t)
	from := OfferKey{"aws", "eu-central-1", "eu-central-1a", "g4dn.xlarge", catalog.Spot}
	price := map[OfferKey]int64{}
	for _, o := range in.Offers {
		price[o.OfferKey] = o.PriceMicros
	}
	if price[from] == 0 {
		t.Fatalf("the catalog has no %s", from)
	}
	in.Observed = []Instance{
		{ID: "a", OfferKey: from, Fleet: "batch", Workload: "eval", State: StateRunning},
		{ID: "b", OfferKey: from, Fleet: "batch", Workload: "eval", State: StateRunning},
	}
	changes := Diff(solve(t, in), in.Observed, DiffOptions{})
	moved := 0
	for _, a := range changes.Actions {
		if a.Kind != Delete {
			continue
		}
		moved++
		if a.Cause != CauseMoved || !strings.HasPrefix(a.Reason, "moved to ") {
			t.Errorf("delete of %s: %s %q, want a move", a.Instance, a.Cause, a.Reason)
			continue
		}
		to, pct, ok := strings.Cut(strings.TrimPrefix(a.Reason, "moved to "), ", ")
		k, err := ParseOfferKey(to)
		if !ok || err != nil {
			t.Fatalf("reason %q names no offer", a.Reason)
		}
		want := fmt.Sprintf("%.0f%% cheaper", 100*float64(price[from]-price[k])/float64(price[from]))
		if pct != want {
			t.Errorf("delete of %s moves to %s: %q, want %q (%d → %d micro-dollars)", a.Instance, k, pct, want, price[from], price[k])
		}
	}
	if moved != 2 {
		t.Errorf("%d nodes moved, want 2: %v", moved, changes.Actions)
	}
}
