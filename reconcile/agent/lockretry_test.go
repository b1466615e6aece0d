// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/reconcile"
)

// A run that found another reconciler's lock tries again a second past the
// lock's expiry, as the error read it, so a replica that was killed while
// holding it keeps the repository for no longer than the lock's TTL; never
// later than the schedule's next run, and never sooner than the margin,
// whatever the lock said.
func TestARunThatFoundTheLockHeldTriesAgainAtItsExpiry(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	held := func(left time.Duration) error {
		return &reconcile.HeldError{Holder: "replica-1", Run: "0123456789abcdef", Taken: now.Add(-time.Minute), Until: now.Add(left), Now: now}
	}
	for _, tt := range []struct {
		name string
		err  error
		next time.Duration
		want time.Duration
	}{
		{"held for 20s more", held(20 * time.Second), 10 * time.Minute, 21 * time.Second},
		{"wrapped, as a run returns it", fmt.Errorf("taking the lock, %w", held(29*time.Second)), 5 * time.Minute, 30 * time.Second},
		{"held past the next scheduled run", held(20 * time.Minute), 5 * time.Minute, 5 * time.Minute},
		{"expiring as it was read", held(0), 5 * time.Minute, time.Second},
		// A lock whose expiry, by the holder's clock, had already come by
		// this one's: still a second, not a tight loop.
		{"expired by this clock", held(-3 * time.Second), 5 * time.Minute, time.Second},
		{"an interval shorter than the margin", held(0), 500 * time.Millisecond, 500 * time.Millisecond},
		{"converged", nil, 5 * time.Minute, 5 * time.Minute},
		{"failed", errors.New("observe: listing aws instances, boom"), 5 * time.Minute, 5 * time.Minute},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := pauseAfter(tt.err, tt.next); got != tt.want {
				t.Errorf("pause %s, want %s", got, tt.want)
			}
		})
	}
}

// The worker's loop takes its pause from pauseAfter: with an hour between
// scheduled runs, a run that found a lock expiring as it read it is
// followed by another, a second later, which takes the lock this time.
// Nothing is timed: without the retry the second run would never come, and
// nextRun's guard would fail the test.
func TestTheAgentRetriesALockedRepositoryBeforeItsNextScheduledRun(t *testing.T) {
	log, _ := testLog(t)
	runs := 0
	fake := func(context.Context, *worker) (*reconcile.Result, error) {
		runs++
		if runs == 1 {
			now := time.Now()
			return nil, fmt.Errorf("taking the lock, %w", &reconcile.HeldError{Holder: "dead-replica", Until: now, Now: now})
		}
		return &reconcile.Result{}, nil
	}
	s := serve(t, Options{Repos: []Repo{{URL: "https://github.com/acme/fleets"}}, Interval: time.Hour, Log: log}, fake)
	if ev := s.nextRun(); reconcile.OutcomeOf(ev.res, ev.err) != reconcile.Locked {
		t.Fatalf("the first run: %v", ev.err)
	}
	if ev := s.nextRun(); ev.err != nil {
		t.Fatalf("the retry: %v", ev.err)
	}
}
