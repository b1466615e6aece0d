// SPDX-License-Identifier: Apache-2.0

//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/reconcile/status"
	"github.com/gpufleet/gpufleet/reconcile/testenv"
)

// noteFailed remembers the Failed VMs among instances.
func (s *crashSweep) noteFailed(instances []*sim.Instance) {
	for _, inst := range instances {
		if inst.State == sim.StateFailed {
			s.failedVMs[crashID(inst)] = true
		}
	}
}

// crashID is an instance's id as gpufleet reports it: the resource name on
// clouds that name instances.
func crashID(inst *sim.Instance) string {
	if inst.Name != "" {
		return inst.Name
	}
	return inst.ID
}

// crashDuplicates fails for every token with more than one live instance
// and returns how many instances are surplus.
func crashDuplicates(t *testing.T, instances []*sim.Instance) int {
	t.Helper()
	live := map[string][]string{}
	for _, inst := range instances {
		if inst.State == sim.StatePending || inst.State == sim.StateRunning {
			token := testenv.NodeToken(inst)
			live[token] = append(live[token], crashID(inst))
		}
	}
	duplicates := 0
	for _, token := range slices.Sorted(maps.Keys(live)) {
		if ids := live[token]; len(ids) > 1 {
			duplicates += len(ids) - 1
			t.Errorf("token %q has %d live instances: %v", token, len(ids), ids)
		}
	}
	return duplicates
}

// checkAccounted fails for every instance in the clouds, short of
// terminated ones, that the status at the origin's head does not list as
// live, for every live instance it lists that the clouds do not hold, and
// for every workload whose live count differs from the status's. It
// returns how many instances leaked, and how many are live.
func (s *crashSweep) checkAccounted(instances []*sim.Instance) (leaked, live int) {
	t := s.t
	t.Helper()
	statuses := s.statusAtHead()
	reported := map[string]string{} // id → fleet/workload, of live entries
	reportedCount := map[string]int{}
	for _, st := range statuses {
		for _, w := range st.Workloads {
			key := st.Fleet + "/" + w.Name
			reportedCount[key] = w.Running + w.Pending
			for _, inst := range w.Instances {
				if inst.State.Live() {
					reported[inst.ID] = key
				}
			}
		}
	}
	liveCount := map[string]int{}
	held := map[string]bool{}
	for _, inst := range instances {
		if inst.State == sim.StateTerminated {
			continue
		}
		_, fleet, workload := simOwner(inst)
		id, key := crashID(inst), fleet+"/"+workload
		held[id] = true
		isLive := inst.State == sim.StatePending || inst.State == sim.StateRunning
		if isLive {
			live++
			liveCount[key]++
		}
		switch {
		case !isLive:
			leaked++
			t.Errorf("leaked: %s %s of %s is %s in the clouds", inst.Cloud, id, key, inst.State)
		case reported[id] == "":
			leaked++
			t.Errorf("leaked: %s %s of %s runs but the status at the origin's head does not list it as live", inst.Cloud, id, key)
		case reported[id] != key:
			t.Errorf("%s %s runs for %s, the status lists it under %s", inst.Cloud, id, key, reported[id])
		}
	}
	for _, id := range slices.Sorted(maps.Keys(reported)) {
		if !held[id] {
			t.Errorf("the status lists %s of %s as live; the clouds do not hold it", id, reported[id])
		}
	}
	for _, key := range slices.Sorted(maps.Keys(reportedCount)) {
		if liveCount[key] != reportedCount[key] {
			t.Errorf("%s: %d live in the clouds, the status says %d", key, liveCount[key], reportedCount[key])
		}
	}
	for _, key := range slices.Sorted(maps.Keys(liveCount)) {
		if _, ok := reportedCount[key]; !ok {
			t.Errorf("%s: %d live in the clouds, and no status for it", key, liveCount[key])
		}
	}
	return leaked, live
}

// statusAtHead reads every status/<fleet>.json at the origin's head.
func (s *crashSweep) statusAtHead() []status.FleetStatus {
	t := s.t
	t.Helper()
	repo, err := git.PlainOpen(s.origin)
	if err != nil {
		t.Fatal(err)
	}
	head, err := repo.CommitObject(s.originHead())
	if err != nil {
		t.Fatal(err)
	}
	tree, err := head.Tree()
	if err != nil {
		t.Fatal(err)
	}
	var out []status.FleetStatus
	err = tree.Files().ForEach(func(f *object.File) error {
		dir, name := filepath.Split(f.Name)
		if dir != "status/" || !strings.HasSuffix(name, ".json") || name == "gpufleet.json" {
			return nil
		}
		text, err := f.Contents()
		if err != nil {
			return err
		}
		var st status.FleetStatus
		if err := json.Unmarshal([]byte(text), &st); err != nil {
			return fmt.Errorf("%s: %w", f.Name, err)
		}
		out = append(out, st)
		return nil
	})
	if err != nil {
		t.Fatalf("reading the status at the origin's head, %v", err)
	}
	if len(out) == 0 {
		t.Fatal("no status/<fleet>.json at the origin's head")
	}
	return out
}

// checkFsck runs git's own check of the origin: the kills must not have
// left it with missing or corrupt objects.
func (s *crashSweep) checkFsck() {
	t := s.t
	t.Helper()
	gitTool, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git command to check the origin with")
	}
	out, err := exec.Command(gitTool, "--git-dir", s.origin, "fsck", "--full", "--no-progress").CombinedOutput()
	if err != nil {
		t.Errorf("git fsck --full of the origin: %v\n%s", err, out)
	} else if len(out) > 0 {
		t.Logf("git fsck --full of the origin is clean; it notes:\n%s", lastLines(string(out), 10))
	}
}

// lockHeld reads refs/gpufleet/lock at the origin: held unless its latest
// commit says who released it.
func (s *crashSweep) lockHeld() (holder string, held bool) {
	t := s.t
	t.Helper()
	repo, err := git.PlainOpen(s.origin)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := repo.Reference("refs/gpufleet/lock", true)
	if err != nil {
		t.Fatalf("reading the lock ref, %v", err)
	}
	c, err := repo.CommitObject(ref.Hash())
	if err != nil {
		t.Fatalf("reading the lock commit, %v", err)
	}
	holder = "unknown"
	for _, line := range strings.Split(c.Message, "\n") {
		key, value, _ := strings.Cut(line, ": ")
		switch key {
		case "released-by":
			return "", false
		case "holder":
			holder = value
		}
	}
	return holder, true
}

// crashMedian is the median of durations, the upper middle of an even
// count: the runs that finished before their kill are the shorter ones.
func crashMedian(ds []time.Duration) time.Duration {
	sorted := slices.Sorted(slices.Values(ds))
	return sorted[len(sorted)/2]
}

func crashEnvInt(t *testing.T, name string, fallback int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return fallback
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		t.Fatalf("%s=%q is not a count", name, v)
	}
	return n
}

func readFileText(name string) string {
	b, _ := os.ReadFile(name)
	return string(b)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
