package reconcile

import (
	"os"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema"
)

var bootFleet = fstest.MapFS{
	"gpufleet.cue": {Data: []byte(`package gpufleet

gpufleet: clouds: {
	aws: regions: ["us-east-1"]
	gcp: {project: "acme-gpu-fleet", regions: ["us-central1"]}
}
// Every node is replaced in one run.
gpufleet: defaults: disruption: budget: "100%"
`)},
	"fleets/serve.cue": {Data: []byte(`package gpufleet

fleets: serve: {
	owner: "platform"
	workloads: chat: {
		gpu: {model: "L4", perNode: 1}
		nodes: 4
		placement: clouds: ["aws", "gcp"]
		spread: maxPerCloud: 0.5
		bootstrap: {file: "bootstrap/join.yaml", secrets: ["JOIN_TOKEN"]}
	}
}
`)},
	"bootstrap/join.yaml": {Data: []byte("#cloud-config\nruncmd:\n  - join --token {{secret \"JOIN_TOKEN\"}} --zone {{.Zone}}\n")},
}

// Nodes boot with the workload's bootstrap and are tagged with its digest;
// a new version of the file replaces them, new ones first; a secret that
// is not set stops the creates with its name, never a value.
func TestABootstrapChangeReplacesTheNodes(t *testing.T) {
	t.Setenv(schema.SecretEnvPrefix+"JOIN_TOKEN", "tok-canary-91")
	e := newEnvFrom(t, sim.Config{Seed: 3}, bootFleet)
	res := e.mustRun(nil)
	if OutcomeOf(res, nil) != Converged {
		t.Fatalf("first run: %v", res.NotConverged)
	}
	tags := func() map[string]int {
		out := map[string]int{}
		for _, inst := range e.World.Instances() {
			if inst.State == sim.StatePending || inst.State == sim.StateRunning {
				out[inst.Tags[providers.TagBootstrap]]++
			}
		}
		return out
	}
	first := tags()
	if len(first) != 1 || first[""] != 0 {
		t.Fatalf("bootstrap tags after the first run: %v, want one digest on all 4", first)
	}

	e.Push("bootstrap/join.yaml", "#cloud-config\nruncmd:\n  - join --token {{secret \"JOIN_TOKEN\"}} --zone {{.Zone}} --v2\n", "join v2")
	res = e.mustRun(nil)
	replaced := 0
	for _, a := range res.Report.Changes.Actions {
		if a.Kind == planner.Delete && a.Cause == planner.CauseReplaced {
			replaced++
		}
	}
	applied := map[planner.ActionKind]int{}
	for _, a := range res.Applied {
		if a.Error == "" {
			applied[a.Kind]++
		}
	}
	second := tags()
	if applied[planner.Create] != 4 || applied[planner.Delete] != 4 || len(second) != 1 {
		t.Errorf("after the change: %v applied, tags %v; want 4 created, 4 deleted, one new digest", applied, second)
	}
	for digest := range second {
		if first[digest] > 0 {
			t.Errorf("the nodes still carry the old digest %s", digest)
		}
	}
	for _, a := range res.Report.Plan.Fleets[0].Workloads {
		for _, b := range a.Bootstrap {
			if strings.Contains(b.File+b.Digest, "canary") {
				t.Error("the plan carries the secret")
			}
		}
	}

	// Without the secret, nothing is launched, and the error says which.
	t.Setenv(schema.SecretEnvPrefix+"JOIN_TOKEN", "")
	e.Push("fleets/serve.cue", strings.Replace(string(bootFleet["fleets/serve.cue"].Data), "nodes: 4", "nodes: 6", 1), "two more")
	// An empty variable is a value; an unset one is not.
	e.mustRun(nil)
	t.Setenv(schema.SecretEnvPrefix+"JOIN_TOKEN", "x")
	e.Push("fleets/serve.cue", strings.Replace(string(bootFleet["fleets/serve.cue"].Data), "nodes: 4", "nodes: 8", 1), "two more again")
	unsetenv(t, schema.SecretEnvPrefix+"JOIN_TOKEN")
	res = e.mustRun(nil)
	if OutcomeOf(res, nil) != NotConverged {
		t.Errorf("a run without its secret ended %s", OutcomeOf(res, nil))
	}
	found := false
	for _, why := range res.NotConverged {
		if strings.Contains(why, "secret JOIN_TOKEN is not set") {
			found = true
		}
	}
	if !found {
		t.Errorf("no reason names the missing secret: %v", res.NotConverged)
	}
}

// unsetenv removes a variable for the rest of the test.
func unsetenv(t *testing.T, name string) {
	t.Setenv(name, "")
	os.Unsetenv(name)
}
