// SPDX-License-Identifier: Apache-2.0

package planner

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/gpufleet/gpufleet/schema"
)

// A node launched with another bootstrap than its workload's nodes now
// run is replaced: a new node is created for each, and each old one is
// deleted saying why. A workload that is not movable keeps its nodes, and
// the plan counts them.
func TestANodeOfAnOlderBootstrapIsReplaced(t *testing.T) {
	base := exampleInput(t)
	base.Observed = observe(solve(t, base))
	// Every node now runs what its workload runs: nothing to do.
	if changes := Diff(solve(t, base), base.Observed, DiffOptions{}); len(changes.Actions) != 0 {
		t.Fatalf("a converged fleet plans %d actions", len(changes.Actions))
	}
	target := base.Fleets[0].Name + "/" + base.Fleets[0].Workloads[0].Name
	var cloud string
	nodes := 0
	for _, inst := range base.Observed {
		if inst.Fleet+"/"+inst.Workload == target {
			cloud = inst.Cloud
			nodes++
		}
	}
	if nodes == 0 {
		t.Fatal("the example's first workload runs nothing")
	}
	for _, movable := range []bool{true, false} {
		in := base
		in.Fleets = cloneFleets(base.Fleets)
		in.Fleets[0].Workloads[0].Movable = movable
		in.Bootstraps = maps.Clone(base.Bootstraps)
		in.Bootstraps[target] = []Bootstrap{{Cloud: cloud, File: "bootstrap/join.yaml", Digest: "sha256:0123456789ab"}}
		plan := solve(t, in)
		changes := Diff(plan, in.Observed, DiffOptions{})
		creates, replaced := 0, 0
		for _, a := range changes.Actions {
			if a.Fleet+"/"+a.Workload != target {
				t.Errorf("movable %v: an action for another workload: %v", movable, a)
				continue
			}
			switch {
			case a.Kind == Create:
				creates++
			case a.Cause == CauseReplaced && strings.Contains(a.Reason, "bootstrap/join.yaml sha256:0123456789ab"):
				replaced++
			default:
				t.Errorf("movable %v: unexpected %v", movable, a)
			}
		}
		w := plan.Fleets[0].Workloads[0]
		if w.Outdated != nodes {
			t.Errorf("movable %v: the plan counts %d outdated nodes, want %d", movable, w.Outdated, nodes)
		}
		if movable && (creates != nodes || replaced != nodes) {
			t.Errorf("movable: %d creates and %d replacements, want %d of each", creates, replaced, nodes)
		}
		if !movable && (creates != 0 || replaced != 0 || !w.KeepOutdated) {
			t.Errorf("not movable: %d creates, %d replacements, keep %v; want the nodes kept", creates, replaced, w.KeepOutdated)
		}
	}
	// Nodes launched with the new file are current.
	in := base
	in.Bootstraps = maps.Clone(base.Bootstraps)
	in.Bootstraps[target] = []Bootstrap{{Cloud: cloud, File: "bootstrap/join.yaml", Digest: "sha256:0123456789ab"}}
	in.Observed = nil
	for _, inst := range base.Observed {
		if inst.Fleet+"/"+inst.Workload == target {
			inst.Bootstrap = "0123456789ab"
		}
		in.Observed = append(in.Observed, inst)
	}
	if changes := Diff(solve(t, in), in.Observed, DiffOptions{}); len(changes.Actions) != 0 {
		t.Errorf("nodes of the current bootstrap are replaced: %v", changes.Actions)
	}
}

// cloneFleets copies fleets deep enough to change their workloads.
func cloneFleets(fleets []schema.Fleet) []schema.Fleet {
	out := slices.Clone(fleets)
	for i := range out {
		out[i].Workloads = slices.Clone(out[i].Workloads)
	}
	return out
}
