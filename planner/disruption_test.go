// SPDX-License-Identifier: Apache-2.0

package planner

import (
	"fmt"
	"testing"

	"github.com/gpufleet/gpufleet/schema"
)

// fleetOf makes n instances of the ml/train workload on an offer.
func fleetOf(prefix string, n int, k OfferKey, state State) []Instance {
	out := make([]Instance, n)
	for i := range out {
		out[i] = running(fmt.Sprintf("%s-%04d", prefix, i), k, state, i)
	}
	return out
}

func percent(p int) schema.Disruption {
	return schema.Disruption{Budget: schema.Budget{Percent: true, Hundredths: p * 100, Field: "defaults.disruption.budget", Raw: fmt.Sprintf("%d%%", p)}}
}

func count(n int) schema.Disruption {
	return schema.Disruption{Budget: schema.Budget{Nodes: n, Field: "defaults.disruption.budget", Raw: fmt.Sprint(n)}}
}

func TestDiffUnderADisruptionBudget(t *testing.T) {
	refuse := func(d schema.Disruption, n int) schema.Disruption {
		d.RefuseOver, d.RefuseField = &n, "defaults.disruption.refuseOver"
		return d
	}
	tests := []struct {
		name       string
		plan       *Plan
		observed   []Instance
		disruption schema.Disruption
		spent      int
		// What goes, what waits and what is refused, as creates and
		// deletes.
		creates, deletes               int
		deferCreates, deferDeletes     int
		refusedCreates, refusedDeletes int
		deferral, refusal              string
	}{{
		name:       "576 on-demand moved to spot, 1,424 missing",
		plan:       onePlacement(map[OfferKey]int{cheap: 2000}),
		observed:   fleetOf("od", 576, pricey, StateRunning),
		disruption: percent(10),
		creates:    1424 + 58, deletes: 58,
		deferCreates: 518, deferDeletes: 518,
		deferral: "defaults.disruption.budget 10% of fleet ml's 576 live nodes: 58 per run",
	}, {
		name:       "2,000 to 10",
		plan:       onePlacement(map[OfferKey]int{cheap: 10}),
		observed:   fleetOf("n", 2000, cheap, StateRunning),
		disruption: percent(10),
		deletes:    200, deferDeletes: 1790,
		deferral: "defaults.disruption.budget 10% of fleet ml's 2000 live nodes: 200 per run",
	}, {
		name:       "a count",
		plan:       onePlacement(map[OfferKey]int{cheap: 10}),
		observed:   fleetOf("n", 2000, cheap, StateRunning),
		disruption: count(500),
		deletes:    500, deferDeletes: 1490,
		deferral: "defaults.disruption.budget 500: 500 live nodes of fleet ml per run",
	}, {
		name:       "a budget of 0 defers every live deletion, and the creates that replace nothing go",
		plan:       onePlacement(map[OfferKey]int{cheap: 2000}),
		observed:   fleetOf("od", 576, pricey, StateRunning),
		disruption: count(0),
		creates:    1424, deferCreates: 576, deferDeletes: 576,
		deferral: "defaults.disruption.budget 0: no live node of fleet ml is deleted",
	}, {
		name:       "a share rounds up to a node",
		plan:       onePlacement(map[OfferKey]int{cheap: 3}),
		observed:   fleetOf("od", 3, pricey, StateRunning),
		disruption: percent(10),
		creates:    1, deletes: 1, deferCreates: 2, deferDeletes: 2,
		deferral: "defaults.disruption.budget 10% of fleet ml's 3 live nodes: 1 per run",
	}, {
		name: "preempted and failed instances are never held",
		plan: onePlacement(map[OfferKey]int{cheap: 3}),
		observed: append(fleetOf("run", 1, cheap, StateRunning),
			running("pre", cheap, StatePreempted, 0), running("fail", cheap, StateFailed, 0), running("stop", cheap, StateStopping, 0)),
		disruption: count(0),
		creates:    2, deletes: 3,
	}, {
		name:       "a later round spends what is left",
		plan:       onePlacement(map[OfferKey]int{cheap: 10}),
		observed:   fleetOf("n", 100, cheap, StateRunning),
		disruption: count(30),
		spent:      25,
		deletes:    5, deferDeletes: 85,
		deferral: "defaults.disruption.budget 30: 30 live nodes of fleet ml per run, 25 spent this run",
	}, {
		name:           "the circuit breaker refuses the whole change",
		plan:           onePlacement(map[OfferKey]int{cheap: 2000}),
		observed:       fleetOf("od", 576, pricey, StateRunning),
		disruption:     refuse(percent(10), 100),
		refusedCreates: 2000, refusedDeletes: 576,
		refusal: "refusing to delete 576 running instances of fleet ml: defaults.disruption.refuseOver allows 100 per run; raise it, or remove it to roll the change out under the disruption budget",
	}, {
		name:       "under the circuit breaker the budget rolls",
		plan:       onePlacement(map[OfferKey]int{cheap: 10}),
		observed:   fleetOf("n", 20, cheap, StateRunning),
		disruption: refuse(count(4), 10),
		deletes:    4, deferDeletes: 6,
		deferral: "defaults.disruption.budget 4: 4 live nodes of fleet ml per run",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			budgets := Budgets(nil, schema.Defaults{Disruption: tt.disruption}, tt.observed)
			b := budgets["ml"]
			b.Spent = tt.spent
			budgets["ml"] = b
			changes := Diff(tt.plan, tt.observed, DiffOptions{Budgets: budgets})
			split := func(actions []Action) (c, d int) {
				return Changes{Actions: actions}.Counts()
			}
			check := func(what string, actions []Action, creates, deletes int) {
				t.Helper()
				if c, d := split(actions); c != creates || d != deletes {
					t.Errorf("%s: %d creates, %d deletes; want %d, %d", what, c, d, creates, deletes)
				}
			}
			check("actions", changes.Actions, tt.creates, tt.deletes)
			check("deferred", changes.Deferred, tt.deferCreates, tt.deferDeletes)
			check("refused", changes.Refused, tt.refusedCreates, tt.refusedDeletes)
			if changes.Deferral != tt.deferral {
				t.Errorf("deferral = %q\nwant       %q", changes.Deferral, tt.deferral)
			}
			if changes.Refusal != tt.refusal {
				t.Errorf("refusal = %q\nwant      %q", changes.Refusal, tt.refusal)
			}
			// Every delete of a live node that goes ahead is within the
			// budget, and those that wait are live ones only.
			live := 0
			for _, a := range changes.Actions {
				if a.Kind == Delete && a.Cause.Live() {
					live++
				}
			}
			if tt.refusal == "" && live > max(0, b.Limit-tt.spent) {
				t.Errorf("%d live deletions go ahead, over the budget's %d", live, b.Limit-tt.spent)
			}
			for _, a := range changes.Deferred {
				if a.Kind == Delete && !a.Cause.Live() {
					t.Errorf("deferred a delete that does no work: %v", a)
				}
			}
			// Creates before deletes, in both lists.
			for _, list := range [][]Action{changes.Actions, changes.Deferred, changes.Refused} {
				for i := 1; i < len(list); i++ {
					if list[i-1].Kind == Delete && list[i].Kind == Create {
						t.Fatalf("a create after a delete at %d", i)
					}
				}
			}
		})
	}
}

// The deletions that go ahead are of the most expensive nodes, the same
// ones on every diff of the same inputs.
func TestDiffBudgetTakesTheMostExpensiveFirst(t *testing.T) {
	plan := onePlacement(map[OfferKey]int{cheap: 2})
	plan.Fleets[0].Workloads[0].Leaving = []Placement{{Offer: pricey, Count: 3, PriceMicros: 98_320_000}}
	observed := append(fleetOf("spot", 3, cheap, StateRunning), fleetOf("od", 3, pricey, StateRunning)...)
	budgets := Budgets(nil, schema.Defaults{Disruption: count(3)}, observed)
	first := Diff(plan, observed, DiffOptions{Budgets: budgets})
	var deleted []string
	for _, a := range first.Actions {
		if a.Kind == Delete {
			deleted = append(deleted, a.Instance)
			if a.Offer != pricey {
				t.Errorf("delete %v: want the pricey nodes first", a)
			}
		}
	}
	if len(first.Deferred) != 1 || first.Deferred[0].Offer != cheap {
		t.Errorf("deferred %v, want one cheap node", first.Deferred)
	}
	if len(deleted) != 3 {
		t.Fatalf("deleted %v, want 2", deleted)
	}
	again := Diff(plan, observed, DiffOptions{Budgets: budgets})
	for i := range first.Actions {
		if first.Actions[i] != again.Actions[i] {
			t.Fatalf("diff %d differs: %v vs %v", i, first.Actions[i], again.Actions[i])
		}
	}
}

// A fleet's own budget wins over gpufleet's, and a fleet only observed
// (removed from the repository) has gpufleet's.
func TestBudgetsOfEachFleet(t *testing.T) {
	five := 5
	fleets := []schema.Fleet{{Name: "ml", Defaults: schema.FleetDefaults{Disruption: &schema.Disruption{
		Budget: schema.Budget{Nodes: 3, Field: "fleets.ml.defaults.disruption.budget", Raw: "3"}, RefuseOver: &five, RefuseField: "fleets.ml.defaults.disruption.refuseOver"}}}}
	observed := fleetOf("n", 40, cheap, StateRunning)
	gone := fleetOf("g", 40, cheap, StateRunning)
	for i := range gone {
		gone[i].Fleet = "old"
	}
	budgets := Budgets(fleets, schema.Defaults{Disruption: percent(10)}, append(observed, gone...))
	if b := budgets["ml"]; b.Limit != 3 || b.RefuseOver == nil || *b.RefuseOver != 5 || b.Says != "fleets.ml.defaults.disruption.budget 3: 3 live nodes of fleet ml per run" {
		t.Errorf("ml: %+v", b)
	}
	if b := budgets["old"]; b.Limit != 4 || b.RefuseOver != nil {
		t.Errorf("old: %+v", b)
	}
}
