// SPDX-License-Identifier: Apache-2.0

package reconcile

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/reconcile/notify"
	"github.com/gpufleet/gpufleet/reconcile/status"
)

// Three training nodes terminated behind gpufleet's back, between two
// runs: the next run begins on 3 missing, says so in the fleet's Drifted
// condition and its result, tells a webhook that asks for "drifted" once,
// and replaces them; the run after that finds no drift, sets the condition
// false and tells nothing more. A fleet that never drifted has no Drifted
// condition at all.
func TestDriftAsARunBeginsIsAConditionToldOnce(t *testing.T) {
	var mu sync.Mutex
	var told []notify.Event
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var ev notify.Event
		json.Unmarshal(body, &ev)
		mu.Lock()
		told = append(told, ev)
		mu.Unlock()
	}))
	defer srv.Close()
	env := map[string]string{"TEST_HOOK_URL": srv.URL, "TEST_HOOK_KEY": "k3y-for-drift"}
	t.Setenv("TEST_HOOK_URL", srv.URL)
	t.Setenv("TEST_HOOK_KEY", env["TEST_HOOK_KEY"])
	e := newEnv(t, sim.Config{Seed: 7})
	cfg := exampleFile(t, "gpufleet.cue") + "\ngpufleet: notifications: {webhook: {urlEnv: \"TEST_HOOK_URL\", secretEnv: \"TEST_HOOK_KEY\"}, on: [\"drifted\"]}\n"
	e.Push("gpufleet.cue", cfg, "Tell a webhook of drift")
	notifier := notify.New(func(k string) string { return env[k] })
	withNotifier := func(o *Options) { o.Notifier = notifier }

	first := e.mustRun(withNotifier)
	if d := first.Drift; d == nil || d.Count() != 0 {
		t.Fatalf("the first run's drift: %+v, want none", d)
	}
	var victims []string
	for _, inst := range e.World.Instances() {
		if inst.Tags["gpufleet-fleet"] == "training" && len(victims) < 3 {
			victims = append(victims, inst.ID)
		}
	}
	if len(victims) != 3 {
		t.Fatalf("training runs %d nodes, want at least 3", len(victims))
	}
	for _, id := range victims {
		if _, err := e.World.Terminate(id); err != nil {
			t.Fatal(err)
		}
		// GCE and Azure end a VM by an operation; the console's delete
		// is done once it is.
		e.World.Remove(id)
	}

	second := e.mustRun(withNotifier)
	if f := second.Drift.Fleet("training"); f.Missing != 3 || f.Total() != 3 {
		t.Errorf("training's drift as the second run began: %+v, want 3 missing", f)
	}
	cond, ok := driftOf(e.StatusAtHead("training"))
	if !ok || !cond.Status || cond.Reason != status.ReasonInstancesDrifted || !strings.HasPrefix(cond.Message, "3 missing since the last status") {
		t.Errorf("training's Drifted condition after the second run: %+v (present %v), want true, 3 missing", cond, ok)
	}
	if cond, ok := driftOf(e.StatusAtHead("inference")); ok {
		t.Errorf("inference never drifted, yet has %+v", cond)
	}
	if got := e.Live()["training/pretrain"]; got != want["training/pretrain"] {
		t.Errorf("%d training nodes after the second run, want %d", got, want["training/pretrain"])
	}

	third := e.mustRun(withNotifier)
	if third.Drift.Count() != 0 {
		t.Errorf("the third run began on drift: %+v", third.Drift.Instances)
	}
	cond, ok = driftOf(e.StatusAtHead("training"))
	if !ok || cond.Status || cond.Reason != status.ReasonNoDrift {
		t.Errorf("training's Drifted condition after the third run: %+v (present %v), want false, no drift", cond, ok)
	}
	e.mustRun(withNotifier)

	mu.Lock()
	defer mu.Unlock()
	var kinds []string
	for _, ev := range told {
		kinds = append(kinds, ev.Kind)
	}
	if !slices.Equal(kinds, []string{notify.Drifted}) {
		t.Fatalf("told %v, want one drifted event", kinds)
	}
	if r := told[0].Reasons; len(r) != 1 || !strings.HasPrefix(r[0], "fleet training: 3 missing") {
		t.Errorf("the drifted event's reasons: %q", r)
	}
}
