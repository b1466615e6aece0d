// SPDX-License-Identifier: Apache-2.0

//go:build linux

package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"
	"time"

	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/reconcile/testenv"
)

// rollingNodes and rollingBudget shape the rolling sweep: a change that
// replaces every node takes rollingNodes/rollingBudget runs.
const (
	rollingNodes  = 12
	rollingBudget = 3
	// rollingFrom is the share of a typical run after which the kills
	// strike: past its clone and lock.
	rollingFrom = 0.4
)

// rollingFleet is one workload of L4 nodes on EC2 whose bootstrap file
// says which rollout it is: every new version replaces every node, within
// the fleet's disruption budget.
const rollingFleet = `package gpufleet

fleets: roll: {
	owner: "platform"
	defaults: disruption: budget: %d
	workloads: w: {
		gpu: {model: "L4", perNode: 1}
		nodes: %d
		placement: clouds: ["aws"]
		bootstrap: {file: "bootstrap/node.sh", format: "script"}
	}
}
`

// TestRollingKillSweep kills real `gpufleet reconcile` processes with
// SIGKILL while they roll a replacement of every node out under a
// disruption budget, against a real `gpufleet sim serve`. Before every run
// a person pushes a new version of the nodes' bootstrap file, so that every
// run has nodes to replace; each kill strikes in its own slice of the part
// of a run that plans, replaces and reports.
// After every run, killed or not, the live nodes it removed must be within
// the budget, and — the rollout making each new node before it breaks an
// old one — the fleet must never have fewer live nodes than it asks for.
// Then the pushes stop, and the runs must converge with every node on the
// last version, no token with two live nodes, none the status does not
// account for, and the origin clean.
//
// GPUFLEET_CRASH_KILLS sets the number of kills (20). Only where the kills
// land depends on timing; the verdict must not. -short skips it.
func TestRollingKillSweep(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("a kill sweep of real gpufleet processes; run without -short")
	}
	kills := crashEnvInt(t, "GPUFLEET_CRASH_KILLS", 20)
	began := time.Now()
	r := rand.New(rand.NewPCG(2026, 0x726f6c6c))
	env := testenv.NewOrigin(t, fstest.MapFS{
		"gpufleet.cue":      {Data: []byte("package gpufleet\n\ngpufleet: clouds: aws: regions: [\"us-east-1\"]\n")},
		"fleets/roll.cue":   {Data: []byte(fmt.Sprintf(rollingFleet, rollingBudget, rollingNodes))},
		"bootstrap/node.sh": {Data: []byte(rollingScript(0))},
	})
	s := &crashSweep{t: t, bin: compileGpufleet(t), dir: env.Dir, origin: env.Origin, url: env.URL, state: filepath.Join(env.Dir, "clouds.json"),
		seed: 2026, exits: map[string]int{}, failedVMs: map[string]bool{}}
	if err := os.Mkdir(filepath.Join(s.dir, "cwd"), 0o755); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(s.dir, "no-faults.json")
	if err := os.WriteFile(empty, []byte(`{"faults": []}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s.sim = s.startSim(empty)
	shared := filepath.Join(s.dir, "work")

	// The first run makes every node, the second replaces the first
	// budget's worth after a new version: the kind of run the kills strike.
	if first := s.reconcile(shared, 0); first.exit != exitConverged {
		t.Fatalf("the first run exited %d:\n%s", first.exit, lastLines(first.stderr, 20))
	}
	version := 1
	env.Push("bootstrap/node.sh", rollingScript(version), "rollout 1")
	finished := []time.Duration{}
	check := func(what string, run crashRun, before map[string]bool) {
		t.Helper()
		after := s.rollingLive()
		removed := 0
		for id := range before {
			if !after[id] {
				removed++
			}
		}
		if removed > rollingBudget {
			t.Errorf("%s removed %d live nodes; the budget allows %d per run", what, removed, rollingBudget)
		}
		if len(after) < rollingNodes {
			t.Errorf("%s left %d live nodes of the %d asked for: a replacement broke before it made", what, len(after), rollingNodes)
		}
		if !run.killed {
			finished = append(finished, run.took)
		}
	}
	before := s.rollingLive()
	run := s.reconcile(shared, 0)
	check("the unkilled run", run, before)

	landed := map[string]int{}
	strata := r.Perm(kills)
	for i := range kills {
		version++
		env.Push("bootstrap/node.sh", rollingScript(version), fmt.Sprintf("rollout %d", version))
		typical := crashMedian(finished)
		// The replacements happen in the later part of a run, after the
		// clone, the lock and the plan: the kills strike there.
		delay := max(1, time.Duration((rollingFrom+(1-rollingFrom)*(float64(strata[i])+r.Float64())/float64(kills))*float64(typical)))
		before := s.rollingLive()
		head := s.originHead()
		run := s.reconcile(shared, delay)
		at := s.landing(run, head, shared)
		landed[at]++
		check(fmt.Sprintf("kill %d (%s)", i+1, at), run, before)
		t.Logf("kill %2d at %6v of ~%6v: %-30s %2d created, %2d deleted", i+1, delay.Round(time.Millisecond), typical.Round(time.Millisecond), at, run.count("created"), run.count("deleted"))
		s.unlock(shared)
	}

	// No more versions: the rollout of the last one finishes within the
	// runs the budget needs, and a run more.
	runs, converged := 0, false
	for runs < rollingNodes/rollingBudget+2 && !converged {
		runs++
		before := s.rollingLive()
		run := s.reconcile(shared, 0)
		check(fmt.Sprintf("convergence run %d", runs), run, before)
		converged = run.exit == exitConverged
	}
	if !converged {
		t.Errorf("not converged within %d runs after the last version", runs)
	}
	s.sim.interrupt(t)
	instances := s.world().Instances()
	duplicates := crashDuplicates(t, instances)
	leaked, live := s.checkAccounted(instances)
	s.checkFsck()
	digests := map[string]int{}
	for _, inst := range instances {
		if inst.State == sim.StatePending || inst.State == sim.StateRunning {
			digests[inst.Tags[providers.TagBootstrap]]++
		}
	}
	if live != rollingNodes || len(digests) != 1 {
		t.Errorf("%d live nodes on bootstrap digests %v; want %d, all on the last version", live, digests, rollingNodes)
	}
	if holder, held := s.lockHeld(); held {
		t.Errorf("the repository lock is still held at the end, by %s", holder)
	}
	t.Logf("rolling sweep: %d kills; landed: %v; exit codes: %v; runs to converge: %d; duplicates: %d; leaked: %d; %d live; took %v",
		kills, landed, s.exits, runs, duplicates, leaked, live, time.Since(began).Round(time.Millisecond))
}

// rollingScript is the nodes' bootstrap file at a version.
func rollingScript(version int) string {
	return fmt.Sprintf("#!/bin/sh\necho rollout %d\n", version)
}

// rollingLive is the set of the rolling fleet's live instances now.
func (s *crashSweep) rollingLive() map[string]bool {
	live := map[string]bool{}
	for _, inst := range s.world().Instances() {
		if (inst.State == sim.StatePending || inst.State == sim.StateRunning) && inst.Tags[providers.TagFleet] == "roll" {
			live[crashID(inst)] = true
		}
	}
	return live
}
