// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/reconcile"
	"github.com/gpufleet/gpufleet/reconcile/status"
)

// gpufleet_drift_instances has every kind of every fleet, zeros included,
// from the drift the repository's last run began on; a run that did not
// get to list the clouds leaves what the one before found.
func TestDriftMetricFollowsTheLastRunThatListed(t *testing.T) {
	m := NewMetrics(slog.New(slog.DiscardHandler))
	now := time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)
	drifted := &reconcile.Result{Revision: "abc", Drift: &status.Drift{Fleets: []status.FleetDrift{{Fleet: "solo", Missing: 3}, {Fleet: "other"}}}}
	m.recordRun("repo-a", resultSuccess, time.Second, drifted, now)
	check := func(when string, want map[string]float64) {
		t.Helper()
		byName := scrape(t, m)
		got := map[string]float64{}
		for _, s := range samples(byName, "gpufleet_drift_instances") {
			got[s.labels["repo"]+" "+s.labels["fleet"]+" "+s.labels["kind"]] = s.value
		}
		if len(got) != len(want) {
			t.Errorf("%s: %v, want %v", when, got, want)
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s: %s = %v, want %v", when, k, got[k], v)
			}
		}
	}
	all := func(solo float64) map[string]float64 {
		return map[string]float64{
			"repo-a solo missing": solo, "repo-a solo extra": 0, "repo-a solo changed": 0,
			"repo-a other missing": 0, "repo-a other extra": 0, "repo-a other changed": 0,
		}
	}
	check("after a run on drift", all(3))
	m.recordRun("repo-a", resultError, time.Second, &reconcile.Result{Revision: "abc"}, now)
	check("after a run that did not list", all(3))
	m.recordRun("repo-a", resultSuccess, time.Second, &reconcile.Result{Revision: "abc", Drift: &status.Drift{Fleets: []status.FleetDrift{{Fleet: "solo"}, {Fleet: "other"}}}}, now)
	check("after a run with none", all(0))
}

// A scrape that counts a run sees the fleets and drift that run left,
// however the scrape and the run's record interleave: a script polling
// /metrics until a run is counted then reads the run's gauges.
func TestAScrapeThatCountsARunSeesWhatItLeft(t *testing.T) {
	m := NewMetrics(slog.New(slog.DiscardHandler))
	now := time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)
	const runs = 5000
	done := make(chan struct{})
	go func() {
		defer close(done)
		// Run i leaves the drift of fleet run-i behind.
		for i := range runs {
			res := &reconcile.Result{Revision: "abc", Drift: &status.Drift{Fleets: []status.FleetDrift{{Fleet: fmt.Sprintf("run-%06d", i)}}}}
			m.recordRun("repo", resultSuccess, time.Second, res, now)
		}
	}()
	for scraping := true; scraping; {
		select {
		case <-done:
			scraping = false // one more scrape, after the last run
		default:
		}
		byName := scrape(t, m)
		counted := int(sum(byName, "gpufleet_reconcile_runs_total", map[string]string{"result": resultSuccess}))
		left := 0 // runs whose drift the scrape has
		for _, s := range samples(byName, "gpufleet_drift_instances") {
			var i int
			if _, err := fmt.Sscanf(s.labels["fleet"], "run-%d", &i); err != nil {
				t.Fatal(err)
			}
			left = i + 1
		}
		if counted > left {
			t.Fatalf("a scrape counts %d runs but has the drift of run %d", counted, left)
		}
		if !scraping && counted != runs {
			t.Fatalf("the last scrape counts %d runs, want %d", counted, runs)
		}
	}
}
