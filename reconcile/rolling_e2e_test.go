// SPDX-License-Identifier: Apache-2.0

package reconcile

import (
	"fmt"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/reconcile/status"
)

func rollingConfig(budget string) string {
	return fmt.Sprintf(`package gpufleet

gpufleet: clouds: aws: regions: ["us-east-1"]
gpufleet: defaults: disruption: budget: %s
`, budget)
}

func rollingFleet(nodes int, capacity string) string {
	return fmt.Sprintf(`package gpufleet

fleets: roll: {
	owner: "me"
	workloads: w: {gpu: {model: "T4", perNode: 1}, nodes: %d, capacity: %q}
}
`, nodes, capacity)
}

// rollOut runs until the fleet converges, checking in every run that its
// deletions stay within the budget of the live nodes the run found, and
// that a move never runs more nodes than it found or the workload asks
// for, whichever is more; it returns the live deletions of each run.
func rollOut(t *testing.T, e *env, desired int, limit func(live int) int) []int {
	t.Helper()
	var deleted []int
	for run := 1; ; run++ {
		if run > 40 {
			t.Fatalf("not converged after %d runs: deleted %v", run-1, deleted)
		}
		live := 0
		for _, w := range e.StatusAtHead("roll").Workloads {
			live += w.Running + w.Pending
		}
		res, err := e.run(nil)
		outcome := OutcomeOf(res, err)
		if err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		n := 0
		for _, a := range res.Applied {
			if a.Kind == planner.Delete {
				if a.Error != "" {
					t.Fatalf("run %d: %s", run, a.Error)
				}
				n++
			}
		}
		deleted = append(deleted, n)
		if n > limit(live) {
			t.Fatalf("run %d deleted %d of %d live nodes, over the budget's %d", run, n, live, limit(live))
		}
		after := 0
		for _, w := range e.StatusAtHead("roll").Workloads {
			after += w.Running + w.Pending
		}
		if after > max(live, desired) {
			t.Fatalf("run %d left %d live nodes, from %d, for %d asked: replacements ran ahead of the deletions", run, after, live, desired)
		}
		if outcome == Converged {
			return deleted
		}
		// A rolling run is not converged, and says why: deletions wait,
		// the fleet progresses, nothing is stalled.
		st := e.StatusAtHead("roll")
		conds := map[string]status.Condition{}
		for _, c := range st.Conditions {
			conds[c.Type] = c
		}
		if c := conds[status.Ready]; c.Status || c.Reason != status.ReasonDeletionsDeferred || !strings.Contains(c.Message, "wait for later runs") {
			t.Fatalf("run %d: Ready %+v, want deletions deferred", run, c)
		}
		if c := conds[status.Progressing]; !c.Status || c.Reason != status.ReasonRolling {
			t.Fatalf("run %d: Progressing %+v, want rolling", run, c)
		}
		if c := conds[status.Stalled]; c.Status {
			t.Fatalf("run %d: stalled %+v", run, c)
		}
		if len(res.NotConverged) != 1 || !strings.Contains(res.NotConverged[0], "roll: not ready (DeletionsDeferred)") {
			t.Fatalf("run %d: not converged because %q", run, res.NotConverged)
		}
	}
}

// A workload of on-demand nodes switched to spot-fallback, and larger,
// gets its missing nodes in the first run and moves the rest to spot
// within the budget, make before break, over the runs after; none deletes
// more than 10 % of the nodes it found.
func TestARollingMoveStaysWithinItsBudget(t *testing.T) {
	t.Parallel()
	e := newEnvFrom(t, sim.Config{Seed: 29, Capacity: 1000}, fstest.MapFS{
		"gpufleet.cue":    {Data: []byte(rollingConfig(`"10%"`))},
		"fleets/roll.cue": {Data: []byte(rollingFleet(40, "on-demand"))},
	})
	if res, err := e.run(nil); OutcomeOf(res, err) != Converged {
		t.Fatalf("first run: %s %v %v", OutcomeOf(res, err), err, res.NotConverged)
	}
	e.Push("fleets/roll.cue", rollingFleet(100, "spot-fallback"), "Spot, and more")
	tenPercent := func(live int) int { return (live + 9) / 10 }
	deleted := rollOut(t, e, 100, tenPercent)
	// 40 found: 4 move in the first run, with the 60 missing created;
	// then 10 % of 100 a run for the 36 left.
	if want := []int{4, 10, 10, 10, 6}; fmt.Sprint(deleted) != fmt.Sprint(want) {
		t.Errorf("deleted %v a run, want %v", deleted, want)
	}
	st := e.StatusAtHead("roll")
	w := st.Workloads[0]
	if w.Running+w.Pending != 100 {
		t.Errorf("converged with %d nodes, want 100", w.Running+w.Pending)
	}
	for _, inst := range w.Instances {
		if inst.State.Live() && !strings.HasSuffix(inst.Offer, "/spot") {
			t.Errorf("%s still runs on %s", inst.ID, inst.Offer)
		}
	}
}

// Scaling down deletes at most a count budget's nodes a run.
func TestAScaleDownStaysWithinACountBudget(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs five times over 100 nodes; planner's TestDiffUnderADisruptionBudget covers a count budget under -short")
	}
	e := newEnvFrom(t, sim.Config{Seed: 30, Capacity: 1000}, fstest.MapFS{
		"gpufleet.cue":    {Data: []byte(rollingConfig("25"))},
		"fleets/roll.cue": {Data: []byte(rollingFleet(100, "on-demand"))},
	})
	if res, err := e.run(nil); OutcomeOf(res, err) != Converged {
		t.Fatalf("first run: %s %v %v", OutcomeOf(res, err), err, res.NotConverged)
	}
	e.Push("fleets/roll.cue", rollingFleet(10, "on-demand"), "Ten")
	deleted := rollOut(t, e, 10, func(int) int { return 25 })
	if want := []int{25, 25, 25, 15}; fmt.Sprint(deleted) != fmt.Sprint(want) {
		t.Errorf("deleted %v a run, want %v", deleted, want)
	}
}

// Where the spot pools run dry part-way, a rolling move deletes only the
// nodes whose replacements launched: the workload never runs more nodes
// than the run found, nor fewer than it asks for, and the budget holds
// across every round of a run.
func TestARollingMoveIntoPoolsThatRunDry(t *testing.T) {
	t.Parallel()
	e := newEnvFrom(t, sim.Config{Seed: 31, Capacity: 6}, fstest.MapFS{
		"gpufleet.cue":    {Data: []byte(rollingConfig(`"25%"`))},
		"fleets/roll.cue": {Data: []byte(rollingFleet(80, "on-demand"))},
	})
	if res, err := e.run(nil); OutcomeOf(res, err) != Converged {
		t.Fatalf("first run: %s %v %v", OutcomeOf(res, err), err, res.NotConverged)
	}
	e.Push("fleets/roll.cue", rollingFleet(80, "spot-fallback"), "Spot")
	deleted := rollOut(t, e, 80, func(live int) int { return (live + 3) / 4 })
	total := 0
	for _, n := range deleted {
		total += n
	}
	if total == 0 {
		t.Fatal("nothing moved to spot")
	}
	t.Logf("deleted %v a run", deleted)
}
