// SPDX-License-Identifier: Apache-2.0

package reconcile

import (
	"fmt"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/reconcile/render"
	"github.com/gpufleet/gpufleet/reconcile/status"
)

// fiveHundredT4 is a spot fleet of 500 nodes, nearly eight times what one
// of the emulator's pools holds (64).
var fiveHundredT4 = fstest.MapFS{
	"gpufleet.cue":     fiveThousandT4["gpufleet.cue"],
	"fleets/infer.cue": {Data: []byte(strings.Replace(string(fiveThousandT4["fleets/infer.cue"].Data), "nodes: 5000", "nodes: 500", 1))},
}

// A first run over pools too small for the fleet tries pools that run
// dry and places their nodes elsewhere: it converges, and says so in
// nodes: 500 created, none failed, some re-placed, with the failed calls
// apart. Summed over rounds, the batches a dry pool did not launch read
// as hundreds of failures where there were none.
func TestARunThatRePlacesNodesCountsNoneFailed(t *testing.T) {
	t.Parallel()
	e := newEnvFrom(t, sim.Config{Seed: 11}, fiveHundredT4)
	calls := newCallCounter()
	res := e.mustRun(func(o *Options) { calls.wrap(o) })
	if got := OutcomeOf(res, nil); got != Converged {
		t.Fatalf("the run ended %s: %v", got, res.NotConverged)
	}
	notLaunched := 0
	for _, a := range res.Applied {
		if a.Error != "" {
			notLaunched++
		}
	}
	c := res.Counts
	t.Logf("%d rounds, %+v; %d tries not launched; %d calls returned an error", res.Rounds, c, notLaunched, calls.errored.Load())
	if notLaunched == 0 || res.Rounds < 2 {
		t.Fatalf("no pool ran dry (%d rounds): the test needs the run to re-place nodes", res.Rounds)
	}
	want := status.RunCounts{Created: 500, Replaced: c.Replaced, FailedCalls: int(calls.errored.Load())}
	if c != want || c.Replaced == 0 || c.Replaced > 500 || c.FailedCalls == 0 {
		t.Errorf("counts %+v, want %+v with 1 to 500 re-placed and the calls that failed", c, want)
	}
	var text strings.Builder
	if err := render.RunText(&text, render.Run{Report: res.Report, Applied: res.Applied, Rounds: res.Rounds, Statuses: res.Statuses, Counts: res.Counts, Converged: true, Commits: true}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), fmt.Sprintf("Applied in %d rounds: 500 created, 0 deleted, 0 failed nodes (%d re-placed after a pool ran out, %d failed cloud calls)\n", res.Rounds, c.Replaced, c.FailedCalls)) {
		t.Errorf("the summary does not say 0 failed nodes:\n%s", text.String())
	}
	head := e.Head()
	if !strings.HasPrefix(head.Message, "gpufleet: "+c.String()+" in infer;") {
		t.Errorf("the commit says %q, want the run's counts %q", strings.SplitN(head.Message, "\n", 2)[0], c)
	}
	st := e.StatusAtHead("infer")
	if st.LastRun == nil || *st.LastRun != c {
		t.Errorf("the status counts %+v, the run %+v", st.LastRun, c)
	}
}

// twoClouds is a node on AWS and two on GCP.
var twoClouds = fstest.MapFS{
	"gpufleet.cue": {Data: []byte(`package gpufleet

gpufleet: clouds: {
	aws: regions: ["us-east-1"]
	gcp: {project: "acme-gpu-fleet", regions: ["us-central1"]}
}
`)},
	"fleets/mixed.cue": {Data: []byte(`package gpufleet

fleets: mixed: {
	owner: "platform"
	workloads: {
		t4: {gpu: {model: "T4", perNode: 1}, nodes: 1, placement: clouds: ["aws"]}
		l4: {gpu: {model: "L4", perNode: 1}, nodes: 2, placement: clouds: ["gcp"]}
	}
}
`)},
}

// A create the cloud refuses as invalid is not routed around: the run
// ends with that node not launched, and counts one failed node and the
// call that failed, beside the nodes it did create.
func TestANodeThatReallyFailsIsCountedOnce(t *testing.T) {
	e := newEnvFrom(t, sim.Config{Seed: 1}, twoClouds)
	if err := e.World.AddFaults(&sim.Fault{Cloud: "aws", Op: "RunInstances", Kind: sim.FaultCapacity, Code: "InvalidParameterValue", Times: 100}); err != nil {
		t.Fatal(err)
	}
	res, err := e.run(nil)
	if got := OutcomeOf(res, err); got != NotConverged {
		t.Fatalf("the run ended %s (%v), want not converged", got, err)
	}
	want := status.RunCounts{Created: 2, FailedNodes: 1, FailedCalls: 1}
	if res.Counts != want {
		t.Errorf("counts %+v, want %+v", res.Counts, want)
	}
	if st := e.StatusAtHead("mixed"); st.LastRun == nil || *st.LastRun != want {
		t.Errorf("the status counts %+v, want %+v", st.LastRun, want)
	}
	failed := 0
	for _, a := range res.Applied {
		if a.Error != "" && a.Kind == planner.Create {
			failed++
		}
	}
	if failed != 1 {
		t.Errorf("%d creates recorded as failed, want the one", failed)
	}
}
