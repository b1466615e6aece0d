// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/reconcile"
)

// A run is counted by how it ended, and only a converged one is a success:
// one that finished with the clouds short of the specs, err == nil or
// not, must not move the timestamp the alerts watch.
func TestRunsAreCountedByOutcome(t *testing.T) {
	held := &reconcile.HeldError{Holder: "ci", Now: time.Now(), Until: time.Now().Add(time.Minute)}
	for _, tt := range []struct {
		name   string
		res    *reconcile.Result
		err    error
		result string
		log    string
	}{
		{"converged", &reconcile.Result{Revision: "abc"}, nil, "success", "reconciled: converged"},
		{"not converged", &reconcile.Result{Revision: "abc", NotConverged: []string{"training: not ready (NotConverged): 258 of 500 nodes"}},
			nil, "not_converged", "258 of 500 nodes"},
		{"failed", &reconcile.Result{Revision: "abc"}, errors.New("observe: listing aws instances, boom"), "error", "reconcile failed"},
		{"clone failed", nil, errors.New("cloning https://github.com/acme/fleets, authentication required"), "error", "reconcile failed"},
		{"locked", nil, fmt.Errorf("taking the lock, %w", held), "locked", "another reconciler holds the lock"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			log, logs := testLog(t)
			a, err := New(Options{Repos: []Repo{{URL: "https://github.com/acme/fleets"}}, Log: log})
			if err != nil {
				t.Fatal(err)
			}
			w := a.workers[0]
			m := a.Metrics()
			for _, result := range []string{"success", "not_converged", "error", "locked"} {
				if !hasSeries(t, m, "gpufleet_reconcile_runs_total", map[string]string{"repo": w.name, "result": result}) {
					t.Errorf("runs_total{result=%q} does not start at zero", result)
				}
			}
			started := counterValue(t, m, "gpufleet_last_success_timestamp_seconds", map[string]string{"repo": w.name})
			if started <= 0 {
				t.Errorf("the last success does not start at the agent's start: %g", started)
			}
			a.reconcile = func(context.Context, *worker) (*reconcile.Result, error) { return tt.res, tt.err }
			a.runOnce(context.Background(), w, "test")

			for _, result := range []string{"success", "not_converged", "error", "locked"} {
				want := 0.0
				if result == tt.result {
					want = 1
				}
				if got := counterValue(t, m, "gpufleet_reconcile_runs_total", map[string]string{"repo": w.name, "result": result}); got != want {
					t.Errorf("runs_total{result=%q} = %g, want %g", result, got, want)
				}
			}
			last := counterValue(t, m, "gpufleet_last_success_timestamp_seconds", map[string]string{"repo": w.name})
			if converged := tt.result == "success"; converged != (last > started) {
				t.Errorf("last success at %g after a run counted %q", last, tt.result)
			}
			if text := logs.String(); !strings.Contains(text, tt.log) || !strings.Contains(text, "result="+tt.result) {
				t.Errorf("the log does not say %q with result=%s:\n%s", tt.log, tt.result, text)
			}
		})
	}
}

// Every create failing leaves a run that finishes without an error but
// with none of the nodes the specs ask for: not a success.
func TestRunWithEveryCreateFailingIsNotConverged(t *testing.T) {
	o := newOrigin(t, 26)
	for _, f := range []sim.Fault{{Cloud: "aws", Op: "RunInstances"}, {Cloud: "azure", Op: "put"}, {Cloud: "gcp", Op: "instances.insert"}, {Cloud: "gcp", Op: "instances.bulkInsert"}, {Cloud: "lambda", Op: "launch"}} {
		f.Kind, f.Rate = sim.FaultQuota, 1
		if err := o.World.AddFaults(&f); err != nil {
			t.Fatal(err)
		}
	}
	log, logs := testLog(t)
	s := serve(t, o.options(log), nil)
	started := sum(s.scrape(), "gpufleet_last_success_timestamp_seconds", map[string]string{"repo": s.agent.workers[0].name})
	run := s.nextRun()
	if run.err != nil {
		t.Fatalf("the run stopped with %v; the test needs one that finishes", run.err)
	}
	if o.Creates() == 0 || len(o.World.Instances()) != 0 {
		t.Fatalf("%d creates, %d instances: the test needs every create to fail", o.Creates(), len(o.World.Instances()))
	}
	if got := reconcile.OutcomeOf(run.res, run.err); got != reconcile.NotConverged {
		t.Fatalf("outcome %s, want %s", got, reconcile.NotConverged)
	}
	families := s.scrape()
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}
	repo := s.agent.workers[0].name
	for result, want := range map[string]float64{"success": 0, "not_converged": 1, "error": 0, "locked": 0} {
		if got := sum(families, "gpufleet_reconcile_runs_total", map[string]string{"repo": repo, "result": result}); got != want {
			t.Errorf("runs_total{result=%q} = %g, want %g", result, got, want)
		}
	}
	if last := sum(families, "gpufleet_last_success_timestamp_seconds", map[string]string{"repo": repo}); last != started {
		t.Errorf("a run that created nothing moved the last success from %g to %g", started, last)
	}
	if !strings.Contains(logs.String(), "not converged") {
		t.Error("the log does not say the run did not converge")
	}
}

// hasSeries reports whether the registry has a series of the metric with
// these labels, whatever its value.
func hasSeries(t *testing.T, m *Metrics, name string, labels map[string]string) bool {
	t.Helper()
	for _, s := range samples(scrape(t, m), name) {
		if matches(s.labels, labels) {
			return true
		}
	}
	return false
}
