// SPDX-License-Identifier: Apache-2.0

package reconcile

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/reconcile/notify"
)

// Runs tell a loopback receiver what they did, as gpufleet.cue asks: the
// first run's changes once, nothing for a run with nothing to do, a
// failure once however often it repeats, and the same failure again only
// once a run has converged in between. Every delivery is signed.
func TestRunsNotifyOncePerEvent(t *testing.T) {
	if testing.Short() {
		t.Skip("runs five times, one at a time; notify's TestEventsAreDeliveredOnceAndSigned covers telling an event once under -short")
	}
	var mu sync.Mutex
	var kinds []string
	bad := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		if r.Header.Get(notify.SignatureHeader) != notify.Sign([]byte("k3y-for-hooks"), body) {
			bad++
		}
		var ev notify.Event
		json.Unmarshal(body, &ev)
		kinds = append(kinds, ev.Kind)
		if strings.Contains(string(body), "k3y-for-hooks") {
			t.Error("the signing key is in the event")
		}
	}))
	defer srv.Close()
	t.Setenv("TEST_HOOK_URL", srv.URL)
	t.Setenv("TEST_HOOK_KEY", "k3y-for-hooks")

	e := newEnv(t, sim.Config{Seed: 5})
	cfg := exampleFile(t, "gpufleet.cue") + "\ngpufleet: notifications: webhook: {urlEnv: \"TEST_HOOK_URL\", secretEnv: \"TEST_HOOK_KEY\"}\n"
	e.Push("gpufleet.cue", cfg, "Tell a webhook")
	notifier := notify.New(func(k string) string {
		return map[string]string{"TEST_HOOK_URL": srv.URL, "TEST_HOOK_KEY": "k3y-for-hooks"}[k]
	})
	withNotifier := func(o *Options) { o.Notifier = notifier }

	e.mustRun(withNotifier)
	e.mustRun(withNotifier)
	if err := e.Emulator.World.SetFaults(&sim.Fault{Cloud: "aws", Op: "DescribeInstances", Kind: sim.FaultServerError, Times: 1000}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := e.run(withNotifier); err == nil {
			t.Fatal("a run that cannot list AWS succeeded")
		}
	}
	e.Emulator.World.SetFaults()
	e.mustRun(withNotifier)
	e.Emulator.World.SetFaults(&sim.Fault{Cloud: "aws", Op: "DescribeInstances", Kind: sim.FaultServerError, Times: 1000})
	e.run(withNotifier)

	mu.Lock()
	defer mu.Unlock()
	want := []string{notify.Changed, notify.Failed, notify.Failed}
	if strings.Join(kinds, ",") != strings.Join(want, ",") || bad != 0 {
		t.Errorf("told %v (%d badly signed), want %v", kinds, bad, want)
	}
}
