// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"context"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/reconcile"
)

// gate is a stand-in run that starts when the agent calls it and ends
// when the test says so, counting how many run at once.
type gate struct {
	started chan string
	release chan struct{}
	active  atomic.Int32
	most    atomic.Int32
	runs    atomic.Int32
	// only, when set, is the one repository whose runs wait; others end
	// at once.
	only string
}

func newGate() *gate {
	return &gate{started: make(chan string, 16), release: make(chan struct{})}
}

func (g *gate) run(ctx context.Context, w *worker) (*reconcile.Result, error) {
	g.runs.Add(1)
	if g.only != "" && w.repo.URL != g.only {
		return &reconcile.Result{}, nil
	}
	n := g.active.Add(1)
	defer g.active.Add(-1)
	for {
		most := g.most.Load()
		if n <= most || g.most.CompareAndSwap(most, n) {
			break
		}
	}
	g.started <- w.repo.URL
	select {
	case <-g.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return &reconcile.Result{}, nil
}

func (g *gate) waitStart(t *testing.T) {
	t.Helper()
	select {
	case <-g.started:
	case <-time.After(guard):
		t.Fatal("no run started")
	}
}

func (g *gate) finish(t *testing.T) {
	t.Helper()
	select {
	case g.release <- struct{}{}:
	case <-time.After(guard):
		t.Fatal("no run to finish")
	}
}

// Triggers that arrive during a run make exactly one more run after it,
// never one alongside it; a trigger while idle runs at once.
func TestTriggersDuringARunCoalesceIntoOneMore(t *testing.T) {
	g := newGate()
	log, _ := testLog(t)
	s := serve(t, Options{Repos: []Repo{{URL: "https://github.com/acme/fleets"}}, Interval: time.Hour, Secret: secret, Log: log}, g.run)
	w := s.agent.workers[0]

	g.waitStart(t) // the first run, at start-up
	for range 3 {
		h := http.Header{"X-Gpufleet-Signature": {Sign(secret, []byte(`{"repo":"acme/fleets"}`))}}
		if code, body := s.post("/trigger", h, stringsReader(`{"repo":"acme/fleets"}`)); code != http.StatusAccepted {
			t.Fatalf("trigger: %d %s", code, body)
		}
	}
	g.finish(t)
	s.nextRun()
	g.waitStart(t) // the one follow-up
	if len(w.pending) != 0 {
		t.Error("a second follow-up is queued")
	}
	g.finish(t)
	s.nextRun()

	s.agent.Trigger("https://github.com/acme/fleets.git", "test")
	g.waitStart(t)
	g.finish(t)
	s.nextRun()

	if err := s.stop(); err != nil {
		t.Fatal(err)
	}
	if n := g.runs.Load(); n != 3 {
		t.Errorf("%d runs, want 3: start-up, one for the three triggers, one for the last", n)
	}
	if most := g.most.Load(); most != 1 {
		t.Errorf("%d runs of one repository at once", most)
	}
}

// /readyz waits for the first run of every repository; /healthz does not.
func TestReadinessWaitsForEveryRepository(t *testing.T) {
	g := newGate()
	g.only = "https://github.com/acme/slow"
	log, _ := testLog(t)
	s := serve(t, Options{
		Repos:    []Repo{{URL: "https://github.com/acme/fast"}, {URL: "https://github.com/acme/slow"}},
		Interval: time.Hour, Log: log,
	}, g.run)
	g.waitStart(t)
	s.nextRun() // fast
	if code, body := s.get("/readyz"); code != http.StatusServiceUnavailable {
		t.Errorf("readyz with a first run going: %d %s", code, body)
	}
	if code, _ := s.get("/healthz"); code != http.StatusOK {
		t.Errorf("healthz: %d", code)
	}
	g.finish(t)
	s.nextRun()
	if code, body := s.get("/readyz"); code != http.StatusOK {
		t.Errorf("readyz after every first run: %d %s", code, body)
	}
	// What Serve does first when its context ends.
	s.agent.shuttingDown.Store(true)
	if code, body := s.get("/readyz"); code != http.StatusServiceUnavailable {
		t.Errorf("readyz while shutting down: %d %s", code, body)
	}
	// Without a secret the trigger endpoints are not there at all.
	if code, _ := s.post("/trigger", nil, stringsReader(`{"repo":"acme/fast"}`)); code != http.StatusNotFound && code != http.StatusMethodNotAllowed {
		t.Errorf("trigger without a secret configured: %d", code)
	}
}

func TestScheduleIsJitteredAndSeededPerRepository(t *testing.T) {
	draw := func(repo string, jitter float64) []time.Duration {
		s := newSchedule(5*time.Minute, jitter, repo)
		var out []time.Duration
		for range 50 {
			out = append(out, s.next())
		}
		return out
	}
	a, again, b := draw("https://github.com/acme/a", 0.1), draw("https://github.com/acme/a", 0.1), draw("https://github.com/acme/b", 0.1)
	if !slices.Equal(a, again) {
		t.Error("one repository's schedule differs between two agents")
	}
	if slices.Equal(a, b) {
		t.Error("two repositories share a schedule")
	}
	lo, hi := 270*time.Second, 330*time.Second
	for _, d := range append(a, b...) {
		if d < lo || d > hi {
			t.Errorf("pause %s outside 5m ± 10%%", d)
		}
	}
	if slices.Min(a) == slices.Max(a) {
		t.Error("no jitter at all")
	}
	for _, d := range draw("https://github.com/acme/a", 0) {
		if d != 5*time.Minute {
			t.Errorf("pause %s with the jitter off", d)
		}
	}
}

func TestRepoKeysMatchEveryFormOfAURL(t *testing.T) {
	same := []string{
		"https://github.com/Acme/Fleets.git",
		"https://x-access-token:secret@github.com/acme/fleets",
		"git@github.com:acme/fleets.git",
		"ssh://git@github.com:22/acme/fleets.git",
		"git://github.com/acme/fleets.git",
		"https://github.com/acme/fleets/",
	}
	for _, u := range same {
		if got := repoKey(u); got != "github.com/acme/fleets" {
			t.Errorf("repoKey(%q) = %q", u, got)
		}
	}
	if got := repoKey("file:///srv/git/fleets.git"); got != "/srv/git/fleets" {
		t.Errorf("file URL key %q", got)
	}
	if got := displayName("https://x-access-token:secret@github.com/acme/fleets"); got != "https://github.com/acme/fleets" {
		t.Errorf("display name %q shows credentials", got)
	}
	if r := ParseRepo("https://github.com/acme/fleets#prod", "main"); r.URL != "https://github.com/acme/fleets" || r.Branch != "prod" {
		t.Errorf("ParseRepo with a branch: %+v", r)
	}
	if r := ParseRepo("git@github.com:acme/fleets.git", "main"); r.Branch != "main" {
		t.Errorf("ParseRepo without a branch: %+v", r)
	}
}
