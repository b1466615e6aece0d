// SPDX-License-Identifier: Apache-2.0

package planner

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/schema"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

var (
	cheap  = OfferKey{"gcp", "us-central1", "us-central1-a", "a3-highgpu-8g", catalog.Spot}
	pricey = OfferKey{"aws", "us-east-1", "us-east-1a", "p5.48xlarge", catalog.OnDemand}
)

// onePlacement is a plan with one workload placed on given offers.
func onePlacement(counts map[OfferKey]int) *Plan {
	w := WorkloadPlan{Name: "train", Fleet: "ml"}
	for _, k := range slices.SortedFunc(func(yield func(OfferKey) bool) {
		for k := range counts {
			if !yield(k) {
				return
			}
		}
	}, OfferKey.Compare) {
		price := int64(20_000_000)
		if k == pricey {
			price = 98_320_000
		}
		w.Placements = append(w.Placements, Placement{Offer: k, Count: counts[k], PriceMicros: price})
		w.Desired += counts[k]
		w.Placed += counts[k]
	}
	return &Plan{Fleets: []FleetPlan{{Name: "ml", Workloads: []WorkloadPlan{w}}}}
}

func running(id string, k OfferKey, state State, launched int) Instance {
	return Instance{ID: id, OfferKey: k, Fleet: "ml", Workload: "train", State: state, LaunchedAt: time.Unix(int64(launched), 0)}
}

func TestDiffFromNothingAndConverged(t *testing.T) {
	plan := onePlacement(map[OfferKey]int{cheap: 3})
	opts := DiffOptions{Revision: map[string]string{"ml/train": "r1"}}
	first := Diff(plan, nil, opts)
	if c, d := first.Counts(); c != 3 || d != 0 {
		t.Fatalf("got %d creates, %d deletes; want 3, 0", c, d)
	}
	tokens := map[string]bool{}
	for _, a := range first.Actions {
		if len(a.Token) > 64 || !strings.HasPrefix(a.Token, "gf2-") {
			t.Errorf("token %q is not a valid ClientToken", a.Token)
		}
		tokens[a.Token] = true
	}
	if len(tokens) != 3 {
		t.Errorf("tokens not distinct: %v", first.Actions)
	}
	// A rerun that saw nothing (the creates were lost) asks again with the
	// very same tokens, so the clouds return the same instances.
	again := Diff(plan, nil, opts)
	for i := range again.Actions {
		if again.Actions[i].Token != first.Actions[i].Token {
			t.Errorf("token %d changed between runs: %s vs %s", i, again.Actions[i].Token, first.Actions[i].Token)
		}
	}
	// Once they run, nothing is left to do.
	var observed []Instance
	for i, a := range first.Actions {
		inst := running(string(rune('a'+i)), a.Offer, StateRunning, i)
		inst.Token = a.Token
		observed = append(observed, inst)
	}
	if done := Diff(plan, observed, opts); len(done.Actions) != 0 {
		t.Errorf("converged diff has actions: %v", done.Actions)
	}
	// A spec change gives fresh tokens.
	opts.Revision["ml/train"] = "r2"
	if other := Diff(plan, nil, opts); other.Actions[0].Token == first.Actions[0].Token {
		t.Error("a new spec revision reused a token")
	}
}

func TestDiffNeverReusesATokenOfAnEndedInstance(t *testing.T) {
	plan := onePlacement(map[OfferKey]int{cheap: 1})
	opts := DiffOptions{Revision: map[string]string{"ml/train": "r1"}}
	first := Diff(plan, nil, opts).Actions[0].Token
	// The node was preempted: EC2 would hand back the terminated instance
	// for its token, so the replacement needs another.
	gone := running("i-1", cheap, StatePreempted, 0)
	gone.Token = first
	changes := Diff(plan, []Instance{gone}, opts)
	if c, d := changes.Counts(); c != 1 || d != 1 {
		t.Fatalf("got %d creates, %d deletes; want a replacement and a clean-up", c, d)
	}
	if changes.Actions[0].Token == first {
		t.Error("the replacement reuses the preempted instance's token")
	}
	// Tokens retired in the status file are skipped too.
	opts.Retired = []string{first}
	if got := Diff(plan, nil, opts).Actions[0].Token; got == first {
		t.Error("a retired token was reused")
	}
}

func TestDiffOrdersAndChoosesDeletes(t *testing.T) {
	plan := onePlacement(map[OfferKey]int{cheap: 2, pricey: 1})
	observed := []Instance{
		running("i-pre", cheap, StatePreempted, 1),
		running("i-cheap-old", cheap, StateRunning, 1),
		running("i-cheap-pending", cheap, StatePending, 2),
		running("i-cheap-new", cheap, StateRunning, 3),
		running("i-aws-1", pricey, StateRunning, 1),
		running("i-aws-2", pricey, StateRunning, 2),
		running("i-gone", cheap, StateTerminated, 0),
	}
	changes := Diff(plan, observed, DiffOptions{})
	var got []string
	for _, a := range changes.Actions {
		got = append(got, string(a.Kind)+" "+a.Instance)
	}
	// Two cheap nodes are wanted: the two running ones stay, the pending
	// one goes. Preempted clean-up first, then the most expensive.
	want := []string{"delete i-pre", "delete i-aws-2", "delete i-cheap-pending"}
	if !slices.Equal(got, want) {
		t.Errorf("actions %v, want %v", got, want)
	}
}

func TestDiffRefusesTooManyDeletions(t *testing.T) {
	plan := onePlacement(map[OfferKey]int{cheap: 3})
	var observed []Instance
	for i := range 3 {
		observed = append(observed, running("i-aws-"+string(rune('a'+i)), pricey, StateRunning, i))
	}
	observed = append(observed, running("i-pre", pricey, StatePreempted, 9))
	two := 2
	breaker := schema.Disruption{Budget: schema.DefaultBudget, RefuseOver: &two, RefuseField: "defaults.disruption.refuseOver"}
	changes := Diff(plan, observed, DiffOptions{Budgets: Budgets(nil, schema.Defaults{Disruption: breaker}, observed)})
	if len(changes.Refused) != 6 || !strings.Contains(changes.Refusal, "refusing to delete 3 running instances") || !strings.Contains(changes.Refusal, "refuseOver allows 2") {
		t.Fatalf("refused %d actions with %q", len(changes.Refused), changes.Refusal)
	}
	// The move is held whole, not rolled; cleaning up a preemption is not
	// a deletion the circuit breaker guards.
	if len(changes.Actions) != 1 || changes.Actions[0].Instance != "i-pre" {
		t.Errorf("actions = %v, want only the preempted clean-up", changes.Actions)
	}
}

func TestDiffPrunesOnlyWhenAsked(t *testing.T) {
	plan := onePlacement(map[OfferKey]int{})
	stray := Instance{ID: "i-old", OfferKey: pricey, Fleet: "removed", Workload: "w", State: StateRunning}
	removedWorkload := Instance{ID: "i-w", OfferKey: pricey, Fleet: "ml", Workload: "gone", State: StateRunning}
	kept := Diff(plan, []Instance{stray, removedWorkload}, DiffOptions{})
	if len(kept.Orphans) != 1 || kept.Orphans[0].ID != "i-old" {
		t.Errorf("orphans = %v, want the removed fleet's instance", kept.Orphans)
	}
	if len(kept.Actions) != 1 || kept.Actions[0].Instance != "i-w" {
		t.Errorf("actions = %v, want only the removed workload's instance deleted", kept.Actions)
	}
	pruned := Diff(plan, []Instance{stray}, DiffOptions{Prune: true})
	if len(pruned.Orphans) != 0 || len(pruned.Actions) != 1 || pruned.Actions[0].Instance != "i-old" {
		t.Errorf("with prune: actions %v, orphans %v", pruned.Actions, pruned.Orphans)
	}
}

func TestOfferKeyRoundTrip(t *testing.T) {
	for _, k := range []OfferKey{cheap, pricey} {
		got, err := ParseOfferKey(k.String())
		if err != nil || got != k {
			t.Errorf("ParseOfferKey(%q) = %v, %v", k, got, err)
		}
	}
	for _, bad := range []string{"", "aws/us-east-1", "aws/us-east-1/us-east-1a/p5/reserved", "aws//a/p5/spot"} {
		if _, err := ParseOfferKey(bad); err == nil {
			t.Errorf("ParseOfferKey(%q) accepted", bad)
		}
	}
}

func TestBatchTokensNameEveryNodeOfTheBatch(t *testing.T) {
	offer := OfferKey{Cloud: "aws", Region: "us-east-1", Zone: "us-east-1a", InstanceType: "g4dn.xlarge", Market: "spot"}
	first := Token("ml", "train", offer, "r1", 7)
	for i := range 5 {
		got, ok := TokenAt(first, i)
		if want := Token("ml", "train", offer, "r1", 7+i); !ok || got != want {
			t.Errorf("TokenAt(first, %d) = %q, %v; want %q", i, got, ok, want)
		}
	}
	if base, slot, ok := TokenSlot(Token("ml", "train", offer, "r1", 12345)); !ok || slot != 12345 || !strings.HasPrefix(Token("ml", "train", offer, "r1", 0), base) {
		t.Errorf("TokenSlot: %q %d %v", base, slot, ok)
	}
	if len(Token("a-long-fleet-name", "a-long-workload-name", offer, "rev", 99999)) > 34 {
		t.Error("a token is longer than 34 characters")
	}
	for _, old := range []string{"gf1-0123456789abcdef0123456789abcdef", "gf2-0123", "gf2-0123456789abcdef01234567-x", "gf2-0123456789abcdef01234567-07", "gf2-0123456789abcdef01234567--1"} {
		if _, _, ok := TokenSlot(old); ok {
			t.Errorf("TokenSlot(%q) reads a slot", old)
		}
		if _, ok := TokenAt(old, 1); ok {
			t.Errorf("TokenAt(%q, 1) names a batch node", old)
		}
	}
	if got, ok := TokenAt("gf1-0123456789abcdef0123456789abcdef", 0); !ok || got != "gf1-0123456789abcdef0123456789abcdef" {
		t.Error("the first node of an old token is not the token")
	}
}
