// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/reconcile"
)

// readyz asks an agent's handler for /readyz.
func readyz(t *testing.T, h http.Handler) (int, Readiness) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	var body Readiness
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatalf("/readyz answered %q: %v", rec.Body.String(), err)
	}
	return rec.Code, body
}

// A repository is ready while its latest run got as far as loading the
// specs; a run that fails before makes it not ready, one that fails after
// does not, and a run skipped for another reconciler's lock changes
// nothing.
func TestReadinessFollowsTheLatestRun(t *testing.T) {
	const fleets, infra = "https://github.com/acme/fleets", "https://github.com/acme/infra"
	log, _ := testLog(t)
	a, err := New(Options{Repos: []Repo{{URL: "https://x-access-token:t0ken@github.com/acme/fleets"}, {URL: infra}}, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	h := a.Handler()
	held := &reconcile.HeldError{Holder: "ci", Now: time.Now(), Until: time.Now().Add(time.Minute)}
	// run stands in for one run of a repository: it loads the specs or
	// not, then ends with err.
	run := func(w *worker, loads bool, err error) {
		a.reconcile = func(context.Context, *worker) (*reconcile.Result, error) {
			if loads {
				w.markLoaded()
			}
			return &reconcile.Result{}, err
		}
		a.runOnce(context.Background(), w, "test")
	}
	fw, iw := a.workers[0], a.workers[1]
	for _, tt := range []struct {
		name  string
		do    func()
		ready bool
		// notReady is what the body says of each repository not ready.
		notReady map[string]string
	}{
		{"before any run", func() {}, false, map[string]string{
			fleets: "waiting for the first run", infra: "waiting for the first run"}},
		{"a first run locked", func() { run(iw, false, fmt.Errorf("taking the lock, %w", held)) }, false, map[string]string{
			fleets: "waiting for the first run", infra: "another reconciler held the repository lock"}},
		{"one repository converged", func() { run(iw, true, nil) }, false, map[string]string{fleets: "waiting for the first run"}},
		{"clone failed", func() {
			run(fw, false, errors.New("cloning https://x-access-token:t0ken@github.com/acme/fleets, authentication required\n\tmore of the error"))
		}, false, map[string]string{fleets: "cloning https://github.com/acme/fleets, authentication required"}},
		{"locked after a failure", func() { run(fw, false, fmt.Errorf("taking the lock, %w", held)) }, false,
			map[string]string{fleets: "cloning https://github.com/acme/fleets, authentication required"}},
		{"loaded, then failed observing", func() { run(fw, true, errors.New("observe: listing aws instances, boom")) }, true, nil},
		{"specs do not load", func() {
			run(fw, false, errors.New("load: the fleet specs at 0a1b2c3 are invalid, fleets/inference.cue:3:1: expected '}'"))
		}, false, map[string]string{fleets: "load: the fleet specs at 0a1b2c3 are invalid, fleets/inference.cue:3:1: expected '}'"}},
		{"fixed", func() { run(fw, true, nil) }, true, nil},
		{"locked after a load", func() { run(fw, false, fmt.Errorf("taking the lock, %w", held)) }, true, nil},
		{"fetch failed", func() { run(iw, false, errors.New("fetching https://github.com/acme/infra, connection refused")) }, false,
			map[string]string{infra: "fetching https://github.com/acme/infra, connection refused"}},
		{"fetched again", func() { run(iw, true, nil) }, true, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.do()
			code, body := readyz(t, h)
			if want := map[bool]int{true: http.StatusOK, false: http.StatusServiceUnavailable}[tt.ready]; code != want {
				t.Errorf("/readyz %d %+v, want %d", code, body, want)
			}
			if len(body.NotReady) != len(tt.notReady) {
				t.Errorf("not ready: %q, want %q", body.NotReady, tt.notReady)
			}
			for repo, why := range tt.notReady {
				if got, ok := body.NotReady[repo]; !ok || !strings.HasPrefix(got, why) {
					t.Errorf("why %s is not ready: %q, want %q", repo, got, why)
				}
			}
			for repo, why := range body.NotReady {
				if strings.Contains(repo+why, "t0ken") || strings.Contains(why, "\n") {
					t.Errorf("not ready: %s: %q shows the token or more than one line", repo, why)
				}
			}
		})
	}
	a.shuttingDown.Store(true)
	if code, body := readyz(t, h); code != http.StatusServiceUnavailable || body.Status != "shutting down" {
		t.Errorf("/readyz while shutting down: %d %+v", code, body)
	}
}

// The only repository failing to clone keeps the agent from being ready,
// and /readyz says why without the credentials in its URL.
func TestReadyzFailsWhileTheOnlyRepositoryDoesNotClone(t *testing.T) {
	log, _ := testLog(t)
	// Nothing listens on port 1 of the loopback: the clone fails at once.
	s := serve(t, Options{
		Repos:    []Repo{{URL: "https://x-access-token:t0ken@127.0.0.1:1/acme/fleets.git"}},
		Interval: time.Hour, WorkDir: filepath.Join(t.TempDir(), "work"), Log: log,
	}, nil)
	if run := s.nextRun(); run.err == nil {
		t.Fatal("the clone worked; the test needs it to fail")
	}
	code, body := s.get("/readyz")
	if code != http.StatusServiceUnavailable {
		t.Errorf("/readyz after a failed clone: %d %s", code, body)
	}
	if !strings.Contains(body, "https://127.0.0.1:1/acme/fleets.git") || !strings.Contains(body, "cloning") {
		t.Errorf("/readyz does not name the repository and why: %s", body)
	}
	if strings.Contains(body, "t0ken") {
		t.Errorf("/readyz shows the token: %s", body)
	}
}

// Specs that stop loading make the repository not ready until a push
// fixes them.
func TestReadyzFollowsWhetherTheSpecsLoad(t *testing.T) {
	o := newOrigin(t, 27)
	log, _ := testLog(t)
	s := serve(t, o.options(log), nil)
	if run := s.nextRun(); run.err != nil {
		t.Fatal(run.err)
	}
	if code, body := s.get("/readyz"); code != http.StatusOK {
		t.Fatalf("/readyz after a run that loaded: %d %s", code, body)
	}
	spec := exampleSpec(t, "fleets/inference.cue")
	for _, tt := range []struct {
		name, spec string
		code       int
		body       string
	}{
		{"broken", spec + "\n}}} not CUE\n", http.StatusServiceUnavailable, "are invalid"},
		{"fixed", spec, http.StatusOK, `"ready"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o.Push("fleets/inference.cue", tt.spec, tt.name)
			s.agent.Trigger(o.URL, "test")
			s.nextRun()
			code, body := s.get("/readyz")
			if code != tt.code || !strings.Contains(body, tt.body) {
				t.Errorf("/readyz: %d %s, want %d with %s", code, body, tt.code, tt.body)
			}
		})
	}
}
