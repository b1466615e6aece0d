// SPDX-License-Identifier: Apache-2.0

package reconcile

import (
	"strings"
	"testing"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/reconcile/status"
)

func conditionOf(st *status.FleetStatus, kind string) (status.Condition, bool) {
	for _, c := range st.Conditions {
		if c.Type == kind {
			return c, true
		}
	}
	return status.Condition{}, false
}

// A suspended fleet is observed and planned but left alone, even when its
// spec changes meanwhile; resuming it applies what was held back.
func TestSuspendHoldsActionsAndResumeConverges(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Config{Seed: 10})
	e.mustRun(nil)
	spec := exampleFile(t, "fleets/inference.cue")
	grown := strings.Replace(spec, "nodes: 6", "nodes: 7", 1)
	e.Push("fleets/inference.cue", strings.Replace(grown, `owner:  "ml-platform"`, "owner:  \"ml-platform\"\n\tsuspended: true", 1), "Suspend inference, and grow chat")

	before := e.Mutations()
	res := e.mustRun(nil)
	if got := e.Mutations() - before; got != 0 {
		t.Errorf("a suspended fleet got %d cloud mutations", got)
	}
	if len(res.Applied) != 0 {
		t.Errorf("applied %+v while suspended", res.Applied)
	}
	held := 0
	for _, a := range res.Report.Changes.Actions {
		if a.Fleet == "inference" && a.Kind == planner.Create && a.Workload == "chat" {
			held++
		}
	}
	if held != 1 {
		t.Errorf("the report shows %d held-back chat creates, want 1: %+v", held, res.Report.Changes.Actions)
	}
	if got := e.Live()["inference/chat"]; got != 6 {
		t.Errorf("%d chat nodes while suspended, want the 6 already running", got)
	}
	st := e.StatusAtHead("inference")
	if c, ok := conditionOf(st, status.Suspended); !ok || !c.Status || c.Reason != status.Suspended {
		t.Errorf("suspended condition %+v (present %v)", c, ok)
	}
	if c, _ := conditionOf(st, status.Ready); c.Status || c.Reason != status.Suspended {
		t.Errorf("ready condition of a suspended fleet: %+v", c)
	}
	if st.Workloads[0].Desired != 7 || st.Workloads[0].Running != 6 {
		t.Errorf("a suspended fleet's status should still say what it asks for: %+v", st.Workloads[0])
	}
	// Other fleets are not held back by one suspended fleet.
	if c, _ := conditionOf(e.StatusAtHead("training"), status.Ready); !c.Status {
		t.Errorf("training is not ready: %+v", c)
	}

	// Still suspended, a second run changes nothing and commits nothing.
	head := e.Head().Hash
	if again := e.mustRun(nil); len(again.Applied) != 0 || !again.Commit.IsZero() || e.Head().Hash != head {
		t.Errorf("a second run while suspended applied %+v and committed %s", again.Applied, again.Commit)
	}

	e.Push("fleets/inference.cue", grown, "Resume inference")
	before = e.Mutations()
	res = e.mustRun(nil)
	if got := e.Mutations() - before; got != 1 || len(res.Applied) != 1 || res.Applied[0].Workload != "chat" {
		t.Errorf("resuming made %d mutations, applied %+v; want the one chat create", got, res.Applied)
	}
	if got := e.Live()["inference/chat"]; got != 7 {
		t.Errorf("%d chat nodes after resuming, want 7", got)
	}
	st = e.StatusAtHead("inference")
	if _, ok := conditionOf(st, status.Suspended); ok {
		t.Errorf("a resumed fleet still carries the suspended condition: %+v", st.Conditions)
	}
	if c, _ := conditionOf(st, status.Ready); !c.Status {
		t.Errorf("resumed fleet not ready: %+v", c)
	}
}
