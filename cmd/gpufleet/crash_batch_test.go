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

	"github.com/gpufleet/gpufleet/reconcile/testenv"
)

// batchFleet is a fleet whose nodes are launched in batches: L4 nodes on
// EC2 and on GCE, as many of each as n.
func batchFleet(n int) string {
	return fmt.Sprintf(`package gpufleet

fleets: big: {
	owner: "platform"
	workloads: {
		onaws: {gpu: {model: "L4", perNode: 1}, nodes: %d, placement: clouds: ["aws"]}
		ongcp: {gpu: {model: "L4", perNode: 1}, nodes: %d, placement: clouds: ["gcp"]}
	}
}
`, n, n)
}

// TestCrashMidBatch kills real `gpufleet reconcile` processes with SIGKILL
// while their batches are in flight. The emulator holds every batch call
// open — a RunInstances waits before EC2 serves it; a bulkInsert makes its
// nodes after a short wait and they are read back slowly — so
// a kill lands between asking for a batch and being answered, or between
// GCE making the nodes and gpufleet reading them back. Before each run the
// fleet grows or shrinks, so every run launches batches. Then the faults
// stop, and within two runs the clouds must match the specs with no node
// twice, none the status does not account for, and the origin clean.
// -short skips it.
func TestCrashMidBatch(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("a kill sweep of real gpufleet processes; run without -short")
	}
	const kills = 8
	began := time.Now()
	r := rand.New(rand.NewPCG(2026, 0x6261746368))
	env := testenv.NewOrigin(t, fstest.MapFS{
		"gpufleet.cue": {Data: []byte(`package gpufleet

gpufleet: clouds: {
	aws: regions: ["us-east-1"]
	gcp: {project: "acme-gpu-fleet", regions: ["us-central1"]}
}
gpufleet: defaults: maxDeletions: 1000
`)},
		"fleets/big.cue": {Data: []byte(batchFleet(20))},
	})
	s := &crashSweep{t: t, bin: compileGpufleet(t), dir: env.Dir, origin: env.Origin, url: env.URL, state: filepath.Join(env.Dir, "clouds.json"),
		seed: 2026, exits: map[string]int{}, failedVMs: map[string]bool{}}
	if err := os.Mkdir(filepath.Join(s.dir, "cwd"), 0o755); err != nil {
		t.Fatal(err)
	}
	s.sim = s.startSim(filepath.Join("testdata", "crash-batch-faults.json"))
	shared := filepath.Join(s.dir, "work")

	first := s.reconcile(shared, 0)
	t.Logf("the first run (40 nodes, batches held open) took %v, exit %d", first.took.Round(time.Millisecond), first.exit)
	landed := map[string]int{}
	sizes := []int{35, 12, 50, 28, 60, 9, 44, 30}
	for i := range kills {
		n := sizes[i%len(sizes)]
		env.Push("fleets/big.cue", batchFleet(n), fmt.Sprintf("%d nodes each", n))
		// The batches are sent once the run has cloned, observed and
		// planned (about 150 ms) and are held open for most of a second:
		// kill within that window.
		delay := time.Duration(200+r.IntN(800)) * time.Millisecond
		before := s.originHead()
		run := s.reconcile(shared, delay)
		at := s.landing(run, before, shared)
		landed[at]++
		t.Logf("kill %d at %v (%d nodes each): %s; %d created, %d deleted", i+1, delay, n, at, run.count("created"), run.count("deleted"))
		s.unlock(shared)
	}
	fired := map[string]int{}
	for _, f := range s.world().Faults() {
		fired[f.Op] += f.Fired
	}

	runs := s.converge(shared)
	instances := s.world().Instances()
	duplicates := crashDuplicates(t, instances)
	leaked, live := s.checkAccounted(instances)
	s.checkFsck()
	if live != 2*sizes[(kills-1)%len(sizes)] {
		t.Errorf("%d live nodes, want %d", live, 2*sizes[(kills-1)%len(sizes)])
	}
	t.Logf("mid-batch kills: %d; landed: %v; exit codes: %v; batch calls held: %v; runs to converge: %d; duplicates: %d; leaked: %d; %d live; took %v",
		kills, landed, s.exits, fired, runs, duplicates, leaked, live, time.Since(began).Round(time.Millisecond))
}
