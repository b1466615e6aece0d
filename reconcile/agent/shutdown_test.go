// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/providers/sim"
)

// Cancelling the agent's context, as SIGTERM does, while a run waits on
// the clouds, ends the run with its status recorded whole and the
// repository lock released, and the agent returns cleanly.
func TestShutdownMidRunLeavesNoLockAndNoHalfWrittenStatus(t *testing.T) {
	o := newOrigin(t, 25)
	// Every create hangs, so the run is in the middle of applying until it
	// is cancelled.
	for _, f := range []sim.Fault{{Cloud: "aws", Op: "RunInstances"}, {Cloud: "azure", Op: "put"}, {Cloud: "gcp", Op: "instances.insert"}, {Cloud: "gcp", Op: "instances.bulkInsert"}, {Cloud: "lambda", Op: "launch"}} {
		f.Kind, f.Rate, f.Latency = sim.FaultLatency, 1, sim.Duration(time.Hour)
		if err := o.World.AddFaults(&f); err != nil {
			t.Fatal(err)
		}
	}
	seeded := o.Head().Hash
	log, _ := testLog(t)
	s := serve(t, o.options(log), nil)
	waitFor(t, "creates in flight", func() bool { return o.Creates() > 0 })

	// Mid-run: the lock is held, and the specs have loaded, so the agent
	// is ready although its first run has not ended.
	if msg := o.LockMessage(); !strings.Contains(msg, "holder: test-agent") || strings.Contains(msg, "released-by") {
		t.Fatalf("the lock mid-run: %q", msg)
	}
	if code, body := s.get("/readyz"); code != http.StatusOK {
		t.Errorf("readyz mid-run: %d %s", code, body)
	}

	if err := s.stop(); err != nil {
		t.Fatalf("Serve after cancelling: %v", err)
	}
	ev := s.nextRun()
	if !errors.Is(ev.err, context.Canceled) {
		t.Errorf("the interrupted run ended with %v, want it cancelled", ev.err)
	}
	if msg := o.LockMessage(); !strings.Contains(msg, "released-by: test-agent") {
		t.Errorf("the lock after shutdown: %q, want it released", msg)
	}

	// The run recorded how it stopped, in one commit: every status file at
	// the head is whole, every instance the clouds hold is in it, and the
	// creates cut short are there as failed, for the next run to retry.
	head := o.Head()
	if head.Hash == seeded {
		t.Fatal("the interrupted run recorded nothing")
	}
	fleets, state := o.Statuses()
	if len(fleets) != 3 || state == nil {
		t.Errorf("the status at the head has %d fleets and state %v", len(fleets), state)
	}
	recorded := map[string]bool{}
	failed := 0
	for _, st := range fleets {
		for _, w := range st.Workloads {
			for _, inst := range w.Instances {
				recorded[inst.ID] = true
			}
		}
		for _, a := range st.LastActions {
			if strings.Contains(a.Error, "context canceled") {
				failed++
			}
		}
	}
	for _, inst := range o.World.Instances() {
		if (inst.State == sim.StatePending || inst.State == sim.StateRunning) && !recorded[inst.ID] && !recorded[inst.Name] {
			t.Errorf("instance %s runs but the status does not say so", inst.ID)
		}
	}
	if failed == 0 || !strings.Contains(head.Message, "error: apply: context canceled") {
		t.Errorf("the status does not say the run was cancelled (%d cancelled actions): %.200q", failed, head.Message)
	}

	// Nothing is left held: another agent takes the lock at once, adopts
	// or launches what is missing, and converges without duplicates.
	o.World.ClearFaults()
	opts := o.options(log)
	opts.Holder = "next-agent"
	next := serve(t, opts, nil)
	if ev := next.nextRun(); ev.err != nil {
		t.Fatalf("the next agent's run: %v", ev.err)
	}
	if n := len(o.World.Instances()); n != 22 {
		t.Errorf("%d instances after converging, want 22", n)
	}
}
