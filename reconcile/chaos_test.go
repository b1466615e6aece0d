// SPDX-License-Identifier: Apache-2.0

package reconcile

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/reconcile/testenv"
)

// TestChaos runs many reconciles against clouds that misbehave at random —
// throttling, server errors, stock-outs, latency, operations failing after
// they were accepted, spot preemptions — while people push to the
// repository and runs die at every step boundary: after a step, in the
// middle of applying, between the status commit and its push. Then the
// faults stop, and the clouds and the repository must come right within
// three runs, with no node launched twice for one intent, no owned node
// outside the plan, a status that says what the clouds say, and no commit
// lost. GPUFLEET_CHAOS_SEED and GPUFLEET_CHAOS_ROUNDS pick another
// history. -short skips it.
func TestChaos(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("sixty rounds of random faults and killed runs; run without -short")
	}
	seed := envInt("GPUFLEET_CHAOS_SEED", 2026)
	rounds := envInt("GPUFLEET_CHAOS_ROUNDS", 60)
	r := rand.New(rand.NewPCG(uint64(seed), 7))
	e := newEnv(t, sim.Config{Seed: uint64(seed), PreemptedVisibleFor: time.Hour})
	faults := []*sim.Fault{
		{Kind: sim.FaultThrottle, Rate: 0.04},
		{Kind: sim.FaultServerError, Rate: 0.02},
		{Op: "RunInstances", Kind: sim.FaultCapacity, Rate: 0.15},
		{Op: "put", Kind: sim.FaultCapacity, Rate: 0.15},
		{Op: "instances.insert", Kind: sim.FaultCapacity, Rate: 0.15},
		{Op: "instances.bulkInsert", Kind: sim.FaultCapacity, Rate: 0.15},
		{Kind: sim.FaultLatency, Rate: 0.05, Latency: sim.Duration(3 * time.Millisecond)},
		{Op: "put", Kind: sim.FaultFailLater, Rate: 0.08},
		// Failing deletes leave the VMs of failed creates behind.
		{Cloud: "azure", Op: "delete", Kind: sim.FaultServerError, Rate: 0.3},
		{Op: "instances.insert", Kind: sim.FaultFailLater, Rate: 0.08},
		{Op: "instances.bulkInsert", Kind: sim.FaultFailLater, Rate: 0.08},
		{Kind: sim.FaultPreempt, Rate: 0.01},
	}
	if err := e.World.AddFaults(faults...); err != nil {
		t.Fatal(err)
	}

	var (
		human      []string // commits people pushed, which must all survive
		crashes    = map[string]int{}
		conflicts  int
		failedRuns int
	)
	spec := exampleFile(t, "fleets/inference.cue")
	for round := range rounds {
		mode := r.IntN(12)
		edit := func(o *Options) { o.Lock.TTL = 2 * time.Second; o.Lock.Wait = 5 * time.Second }
		h := &hooks{}
		switch mode {
		case 0:
			step := []Step{StepLoad, StepObserve, StepPlan, StepApply}[r.IntN(4)]
			crashes["after "+string(step)]++
			h.crashAfter = step
		case 1:
			crashes["mid-apply"]++
			h.crashAfterCreates = 1 + r.IntN(6)
		case 2:
			crashes["before push"]++
			h.crashBeforePush = true
		case 3:
			conflicts++
			once := false
			h.beforePush = func() {
				if !once {
					once = true
					human = append(human, e.Push("NOTES.md", fmt.Sprintf("round %d\n", round), "Notes, round "+strconv.Itoa(round)).String())
				}
			}
		case 4, 5, 6:
			nodes := 4 + r.IntN(5)
			human = append(human, e.Push("fleets/inference.cue", strings.Replace(spec, "nodes: 6", fmt.Sprintf("nodes: %d", nodes), 1), fmt.Sprintf("Chat to %d nodes", nodes)).String())
		}
		_, err := e.runHooked(h, edit)
		switch {
		case errors.Is(err, errCrashed):
		case err != nil:
			failedRuns++
			t.Logf("round %d: %v", round, firstLineOf(err.Error()))
		}
	}

	fired := map[string]int{}
	for _, f := range e.World.Faults() {
		fired[f.Kind] += f.Fired
	}
	leftBehind := 0
	for _, inst := range e.World.Instances() {
		if inst.State == sim.StateFailed {
			leftBehind++
		}
	}
	e.World.ClearFaults()
	// The verdict rests on outcomes, not on how long anything took: runs
	// go on until one says it converged, three at most. They run an hour
	// on, as a later scheduled run would, when the offers the faults
	// blocklisted are free again and the locks crashed runs left have
	// expired.
	later := func() time.Time { return time.Now().Add(time.Hour) }
	runs := 0
	var last *Result
	for runs < 3 {
		runs++
		res, err := e.run(func(o *Options) { o.Now = later })
		if err != nil {
			t.Logf("convergence run %d: %v", runs, err)
			continue
		}
		last = res
		// Done when a run finds nothing to do and says it converged; its
		// plan is then what the clouds hold.
		if len(res.Applied) == 0 && len(res.Report.Changes.Actions) == 0 && OutcomeOf(res, nil) == Converged {
			break
		}
		for _, why := range res.NotConverged {
			t.Logf("convergence run %d: not converged: %s", runs, why)
		}
		for _, a := range res.Applied {
			t.Logf("convergence run %d applied %s %s/%s %s %s %s", runs, a.Kind, a.Fleet, a.Workload, a.Offer, a.Instance, a.Error)
		}
		for _, a := range res.Report.Changes.Actions {
			t.Logf("convergence run %d planned %v", runs, a)
		}
		if res.Report.Changes.Refusal != "" {
			t.Logf("convergence run %d: %s", runs, res.Report.Changes.Refusal)
		}
	}
	if last == nil || OutcomeOf(last, nil) != Converged || len(last.Report.Changes.Actions) != 0 {
		t.Fatalf("not converged after %d runs without faults", runs)
	}

	// No node twice for one intent.
	live := map[string][]string{}
	for _, inst := range e.World.Instances() {
		if inst.State == sim.StatePending || inst.State == sim.StateRunning {
			live[testenv.NodeToken(inst)] = append(live[testenv.NodeToken(inst)], inst.ID)
		}
	}
	duplicates := 0
	for token, ids := range live {
		if len(ids) > 1 {
			duplicates += len(ids) - 1
			t.Errorf("token %s has %d live instances: %v", token, len(ids), ids)
		}
	}
	// No owned node outside the plan, and the status says what runs.
	planned := map[string]int{}
	for _, f := range last.Report.Plan.Fleets {
		for _, w := range f.Workloads {
			for _, p := range w.Placements {
				planned[f.Name+"/"+w.Name+"/"+p.Offer.String()] += p.Count
			}
		}
	}
	running := map[string]int{}
	var worldIDs, statusIDs []string
	leaked := 0
	for _, inst := range e.World.Instances() {
		if inst.State == sim.StateFailed {
			leaked++
			t.Errorf("%s %s is still there, failed", inst.Cloud, cmpID(inst))
		}
		if inst.State != sim.StatePending && inst.State != sim.StateRunning {
			continue
		}
		fleet, workload := testenv.Owner(inst)
		key := fleet + "/" + workload + "/" + offerOf(inst).String()
		running[key]++
		worldIDs = append(worldIDs, cmpID(inst))
	}
	for key, n := range running {
		if n > planned[key] {
			leaked += n - planned[key]
			t.Errorf("%d nodes of %s run outside the plan", n-planned[key], key)
		}
	}
	for key, n := range planned {
		if running[key] != n {
			t.Errorf("%s: %d running, %d planned", key, running[key], n)
		}
	}
	for _, fleet := range []string{"batch", "inference", "training"} {
		for _, w := range e.StatusAtHead(fleet).Workloads {
			for _, inst := range w.Instances {
				if inst.State.Live() {
					statusIDs = append(statusIDs, inst.ID)
				}
			}
		}
	}
	slices.Sort(worldIDs)
	slices.Sort(statusIDs)
	if !slices.Equal(worldIDs, statusIDs) {
		t.Errorf("the status lists %d live instances, the clouds hold %d", len(statusIDs), len(worldIDs))
	}
	// No commit lost: everything people pushed is in the history.
	repo, err := git.PlainOpen(e.Origin)
	if err != nil {
		t.Fatal(err)
	}
	head := e.Head()
	for _, h := range human {
		found := false
		iter, _ := repo.Log(&git.LogOptions{From: head.Hash})
		iter.ForEach(func(c *object.Commit) error {
			if c.Hash.String() == h {
				found = true
			}
			return nil
		})
		if !found {
			t.Errorf("commit %s pushed by a person is lost", h)
		}
	}
	if _, err := head.File("status/STATUS.md"); err != nil {
		t.Error("no status at the head")
	}
	t.Logf("chaos (seed %d): %d rounds, %d with a failed run; faults fired: %v; crashes: %v; push conflicts: %d; "+
		"people's commits: %d, all kept; failed VMs left by the faults: %d; duplicates: %d; leaked: %d; runs to converge: %d; %d nodes",
		seed, rounds, failedRuns, fired, crashes, conflicts, len(human), leftBehind, duplicates, leaked, runs, len(worldIDs))
}

func envInt(name string, fallback int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return v
	}
	return fallback
}

func firstLineOf(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// offerOf is the offer an emulated instance runs on, as gpufleet names it.
func offerOf(inst *sim.Instance) planner.OfferKey {
	return planner.OfferKey{Cloud: inst.Cloud, Region: inst.Region, Zone: inst.Zone, InstanceType: inst.InstanceType, Market: inst.Market}
}

// cmpID is an instance's id as gpufleet reports it: the resource name on
// clouds that name instances.
func cmpID(inst *sim.Instance) string {
	if inst.Name != "" {
		return inst.Name
	}
	return inst.ID
}
