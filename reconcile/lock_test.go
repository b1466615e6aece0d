// SPDX-License-Identifier: Apache-2.0

package reconcile

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/providers/sim"
)

// fakeClock is a clock the test moves, safe to read from the goroutine
// that renews a lock.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// A holder renews its lock while it runs, so a run may outlast the TTL and
// keep others out; once it stops renewing (it died), the lock expires a TTL
// later and another reconciler takes it; and a holder that finds its lock
// taken over is told it lost it. Renewals happen on ticks the test sends,
// by a clock the test moves: nothing waits on the wall clock.
func TestALockIsRenewedWhileItsHolderRuns(t *testing.T) {
	e := newEnv(t, sim.Config{Seed: 41})
	ctx := context.Background()
	a, b := e.checkout(), e.checkout()
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	clock := &fakeClock{now: t0}
	opts := LockOptions{Holder: "replica-0", TTL: time.Minute, Now: clock.Now}
	lock, err := a.Lock(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	ticks := make(chan time.Time)
	lost := make(chan error, 1)
	stop := lock.keep(ticks, func(err error) { lost <- err })
	// Each tick starts a renewal; the next waits until it got through.
	for _, at := range []time.Duration{45 * time.Second, 90 * time.Second, 135 * time.Second} {
		clock.set(t0.Add(at))
		ticks <- t0.Add(at)
		waitFor(t, "the renewal at "+at.String(), func() bool { return lock.expiry().Equal(t0.Add(at + time.Minute)) })
	}
	stop()
	// Two minutes and a quarter in, past twice the TTL, the lock is still
	// held: its last renewal runs to a minute past 135 s.
	clock.set(t0.Add(140 * time.Second))
	_, err = b.Lock(ctx, opts)
	var held *HeldError
	if !errors.As(err, &held) {
		t.Fatalf("a renewed lock was taken: %v", err)
	}
	if want := t0.Add(195 * time.Second); !held.Until.Equal(want) {
		t.Errorf("the lock holds until %s, want %s", held.Until, want)
	}
	if !held.Taken.Equal(t0) {
		t.Errorf("the lock says it was taken at %s, want %s: a renewal is not a new taking", held.Taken, t0)
	}
	// The holder stopped renewing: a TTL after its last renewal, the lock
	// is free for another.
	clock.set(t0.Add(196 * time.Second))
	if _, err := b.Lock(ctx, opts); err != nil {
		t.Fatalf("an expired lock was not taken: %v", err)
	}
	// The first holder, renewing again before its expiry (by its clock),
	// finds its lock taken over.
	clock.set(t0.Add(150 * time.Second))
	ticks2 := make(chan time.Time)
	stop = lock.keep(ticks2, func(err error) { lost <- err })
	defer stop()
	ticks2 <- t0.Add(150 * time.Second)
	select {
	case err := <-lost:
		if !strings.Contains(err.Error(), "another reconciler took the repository lock over") {
			t.Errorf("told %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the holder whose lock was taken over was not told")
	}
}

// A holder none of whose renewals got through stops at its lock's expiry:
// another reconciler may hold the repository from then on.
func TestALockThatExpiresUnrenewedIsLost(t *testing.T) {
	e := newEnv(t, sim.Config{Seed: 42})
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	clock := &fakeClock{now: t0}
	lock, err := e.checkout().Lock(context.Background(), LockOptions{Holder: "replica-0", TTL: time.Minute, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	ticks := make(chan time.Time)
	lost := make(chan error, 1)
	stop := lock.keep(ticks, func(err error) { lost <- err })
	defer stop()
	clock.set(t0.Add(61 * time.Second))
	ticks <- t0.Add(61 * time.Second)
	select {
	case err := <-lost:
		if !strings.Contains(err.Error(), "the repository lock expired before it could be renewed") {
			t.Errorf("told %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the holder whose lock expired was not told")
	}
}

// waitFor waits for cond, failing only if it does not come within a
// minute: a hang, not a verdict on how fast.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s never came", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
