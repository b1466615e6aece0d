// SPDX-License-Identifier: Apache-2.0

package reconcile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

func savedInstance(id string, state planner.State) planner.Instance {
	return planner.Instance{ID: id, OfferKey: planner.OfferKey{Cloud: "aws", Region: "us-east-1", Zone: "us-east-1a", InstanceType: "g6.2xlarge", Market: catalog.OnDemand},
		Fleet: "f", Workload: "w", Token: "t-" + id, State: state}
}

// A saved plan reads back as it was written; one whose recorded view was
// edited, or of another kind or version, is refused.
func TestSavedPlansReadBackAndRefuseEdits(t *testing.T) {
	dir := t.TempDir()
	report := &planner.Report{Plan: &planner.Plan{Optimal: true}, Changes: planner.Changes{Actions: []planner.Action{{Kind: planner.Create, Fleet: "f", Workload: "w", Token: "tok"}}}}
	saved, err := NewSavedPlan(SavedSpecs{Commit: "c", Digest: "d"}, []planner.Instance{savedInstance("i-1", planner.StateRunning)}, "status", catalog.Default(), report, time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "plan.json")
	if err := saved.Write(path); err != nil {
		t.Fatal(err)
	}
	back, err := ReadSavedPlan(path)
	if err != nil {
		t.Fatal(err)
	}
	if back.Report.Changes.Actions[0].Token != "tok" || back.Observed.Digest != saved.Observed.Digest || back.Prices != saved.Prices {
		t.Errorf("read back %+v", back)
	}
	data, _ := os.ReadFile(path)
	for name, edit := range map[string]func(string) string{
		"edited view":   func(s string) string { return strings.Replace(s, `"id": "i-1"`, `"id": "i-2"`, 1) },
		"other kind":    func(s string) string { return strings.Replace(s, `"kind": "saved-plan"`, `"kind": "observed"`, 1) },
		"other version": func(s string) string { return strings.Replace(s, `"formatVersion": 1`, `"formatVersion": 2`, 1) },
		"unknown field": func(s string) string {
			return strings.Replace(s, `"kind": "saved-plan"`, `"kind": "saved-plan", "extra": 1`, 1)
		},
	} {
		t.Run(name, func(t *testing.T) {
			bad := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".json")
			if err := os.WriteFile(bad, []byte(edit(string(data))), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := ReadSavedPlan(bad); err == nil {
				t.Error("read without complaint")
			}
		})
	}
}

// What runs is compared as the plan's actions depend on it: an instance
// that came up from pending to running changes nothing; one that came,
// went, was preempted or moved makes the plan stale, and is named.
func TestSavedPlanSeesWhatRunsChange(t *testing.T) {
	then := []planner.Instance{savedInstance("i-1", planner.StatePending), savedInstance("i-2", planner.StateRunning), savedInstance("i-3", planner.StateRunning)}
	saved, err := NewSavedPlan(SavedSpecs{}, then, "status", catalog.Default(), &planner.Report{Plan: &planner.Plan{}}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	up := []planner.Instance{savedInstance("i-3", planner.StateRunning), savedInstance("i-1", planner.StateRunning), savedInstance("i-2", planner.StateRunning)}
	if err := saved.checkObserved(up); err != nil {
		t.Errorf("pending to running, in another order: %v", err)
	}
	moved := []planner.Instance{savedInstance("i-1", planner.StateRunning), savedInstance("i-2", planner.StatePreempted), savedInstance("i-4", planner.StateRunning)}
	err = saved.checkObserved(moved)
	var stale *StalePlanError
	if !errors.As(err, &stale) || !errors.Is(err, ErrStalePlan) || stale.What != "observed" {
		t.Fatalf("got %v, want a stale plan of what runs", err)
	}
	for _, want := range []string{"1 runs now but not in the plan's view: i-4 (f/w, live)", "1 is gone: i-3", "1 changed: i-2 (state live → preempted)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
	if err := saved.checkSpecs("other", "c2"); !errors.Is(err, ErrStalePlan) {
		t.Errorf("other specs: %v", err)
	}
	other := catalog.Default()
	other.Source = "aws"
	if err := saved.checkPrices(other); !errors.Is(err, ErrStalePlan) {
		t.Errorf("other prices: %v", err)
	}
	if err := saved.checkPrices(catalog.Default()); err != nil {
		t.Errorf("the same prices: %v", err)
	}
}
