// SPDX-License-Identifier: Apache-2.0

package reconcile

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/reconcile/notify"
	"github.com/gpufleet/gpufleet/reconcile/status"
)

const refusedConfig = `package gpufleet

gpufleet: clouds: aws: regions: ["us-east-1"]
gpufleet: defaults: disruption: refuseOver: 1
gpufleet: notifications: webhook: {urlEnv: "TEST_HOOK_URL", secretEnv: "TEST_HOOK_KEY"}
`

func soloFleet(nodes int) string {
	return fmt.Sprintf(`package gpufleet

fleets: solo: {
	owner: "me"
	workloads: w: {gpu: {model: "T4", perNode: 1}, nodes: %d}
}
`, nodes)
}

// A run whose deletions the circuit breaker refuses changed nothing and leaves
// the clouds unlike the specs. Everything that sums it up says so: its
// outcome (the exit code and the agent's result label), its reasons, the
// fleet's Ready condition and the kind of event it tells.
func TestRefusedDeletionsAreNotConverged(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var events []notify.Event
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var ev notify.Event
		if err := json.Unmarshal(body, &ev); err != nil {
			t.Errorf("event %q: %v", body, err)
		}
		mu.Lock()
		events = append(events, ev)
		mu.Unlock()
	}))
	defer srv.Close()
	notifier := notify.New(func(k string) string {
		return map[string]string{"TEST_HOOK_URL": srv.URL, "TEST_HOOK_KEY": "k3y"}[k]
	})
	withNotifier := func(o *Options) { o.Notifier = notifier }

	e := newEnvFrom(t, sim.Config{Seed: 8}, fstest.MapFS{
		"gpufleet.cue":    {Data: []byte(refusedConfig)},
		"fleets/solo.cue": {Data: []byte(soloFleet(3))},
	})
	if res, err := e.run(withNotifier); OutcomeOf(res, err) != Converged {
		t.Fatalf("first run: %s, %v (%v)", OutcomeOf(res, err), err, res.NotConverged)
	}
	e.Push("fleets/solo.cue", soloFleet(1), "One node")
	res, err := e.run(withNotifier)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Applied) != 0 || len(res.Report.Changes.Refused) != 2 {
		t.Fatalf("applied %v, refused %v: want nothing applied and two deletions refused", res.Applied, res.Report.Changes.Refused)
	}
	if got := OutcomeOf(res, err); got != NotConverged {
		t.Errorf("outcome %s, want %s", got, NotConverged)
	}
	if len(res.NotConverged) != 1 || !strings.Contains(res.NotConverged[0], "solo: not ready (DeletionsRefused)") {
		t.Errorf("not converged because %q, want the refusal once", res.NotConverged)
	}
	st := e.StatusAtHead("solo")
	for _, c := range st.Conditions {
		if c.Type == status.Ready && (c.Status || c.Reason != status.ReasonDeletionsRefused) {
			t.Errorf("committed Ready condition %+v, want not ready for the refusal", c)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(events) != 2 || events[0].Kind != notify.Changed || events[1].Kind != notify.NotConverged {
		t.Fatalf("told %+v, want a change, then not converged", events)
	}
	if why := strings.Join(events[1].Reasons, "\n"); !strings.Contains(why, "defaults.disruption.refuseOver allows 1 per run") {
		t.Errorf("the event says %q, not why the deletions were refused", why)
	}
}
