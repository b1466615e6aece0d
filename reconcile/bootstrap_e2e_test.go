// SPDX-License-Identifier: Apache-2.0

package reconcile

import (
	"errors"
	"fmt"
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

	// Without the secret, nothing is launched, and the run says so once,
	// naming the secret and the workload, before any call: an empty or a
	// short value is refused alike, for it could not be masked.
	before := len(e.World.Instances())
	for i, value := range []string{"", "x", "unset"} {
		if value == "unset" {
			unsetenv(t, schema.SecretEnvPrefix+"JOIN_TOKEN")
		} else {
			t.Setenv(schema.SecretEnvPrefix+"JOIN_TOKEN", value)
		}
		e.Push("fleets/serve.cue", strings.Replace(string(bootFleet["fleets/serve.cue"].Data), "nodes: 4", fmt.Sprintf("nodes: %d", 6+2*i), 1), "more nodes")
		res, err := e.run(nil)
		var unset *UnsetSecretsError
		if !errors.As(err, &unset) || OutcomeOf(res, err) != Failed {
			t.Fatalf("secret %q: the run ended %s with %v, want an UnsetSecretsError", value, OutcomeOf(res, err), err)
		}
		want := fmt.Sprintf("secret JOIN_TOKEN is not set (export GPUFLEET_SECRET_JOIN_TOKEN of at least 8 bytes), needed by serve/chat (%d nodes)", 2+2*i)
		if !strings.Contains(err.Error(), want) || strings.Count(err.Error(), "JOIN_TOKEN is not set") != 1 {
			t.Errorf("secret %q: %v\nwant it once: %s", value, err, want)
		}
		if n := len(e.World.Instances()); n != before {
			t.Errorf("secret %q: %d instances after the refused run, %d before", value, n, before)
		}
		for _, a := range res.Applied {
			t.Errorf("secret %q: the refused run applied %+v", value, a)
		}
	}
}

// A plan says which secrets the apply of its creates needs when they are
// not set where it is made, so a pull request shows it before a merge.
func TestAPlanWarnsOfUnsetSecrets(t *testing.T) {
	unsetenv(t, schema.SecretEnvPrefix+"JOIN_TOKEN")
	e := newEnvFrom(t, sim.Config{Seed: 3}, bootFleet)
	res := e.mustRun(func(o *Options) { o.DryRun = true })
	warned := 0
	for _, w := range res.Report.Plan.Warnings {
		if strings.Contains(w, "secret JOIN_TOKEN is not set") && strings.Contains(w, "serve/chat (4 nodes)") {
			warned++
		}
	}
	if warned != 1 {
		t.Errorf("warnings %q: want one naming JOIN_TOKEN and serve/chat", res.Report.Plan.Warnings)
	}
	t.Setenv(schema.SecretEnvPrefix+"JOIN_TOKEN", "tok-canary-91")
	res = e.mustRun(func(o *Options) { o.DryRun = true })
	for _, w := range res.Report.Plan.Warnings {
		if strings.Contains(w, "JOIN_TOKEN") {
			t.Errorf("a plan with the secret set warns: %s", w)
		}
	}
}

// unsetenv removes a variable for the rest of the test.
func unsetenv(t *testing.T, name string) {
	t.Setenv(name, "")
	os.Unsetenv(name)
}
