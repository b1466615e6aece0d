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
	t.Parallel()
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
	stop := lock.keep(ticks, never, func(err error) { lost <- err })
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
	stop = lock.keep(ticks2, never, func(err error) { lost <- err })
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

// A holder none of whose renewals got through stops at the tick that finds
// its lock about to expire: another reconciler may hold the repository
// soon.
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
	stop := lock.keep(ticks, never, func(err error) { lost <- err })
	defer stop()
	clock.set(t0.Add(61 * time.Second))
	ticks <- t0.Add(61 * time.Second)
	select {
	case err := <-lost:
		if !strings.Contains(err.Error(), "the repository lock could not be renewed before it expires at 2026-12-01T12:01:00Z") {
			t.Errorf("told %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the holder whose lock expired was not told")
	}
}

// A holder that cannot renew gives the lock up by a timer of its own, a
// tenth of the TTL before the expiry, not at the next tick, which could
// come a quarter of the TTL after it: by then another reconciler may have
// taken the lock and be looking at the clouds the run is still calling.
// Each renewal moves the timer; a timer that fires early by the clock is
// set again. The test fires the timers and moves the clock.
func TestAHolderThatCannotRenewStopsBeforeItsLockExpires(t *testing.T) {
	e := newEnv(t, sim.Config{Seed: 43})
	ctx := context.Background()
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	clock := &fakeClock{now: t0}
	opts := LockOptions{Holder: "replica-0", TTL: time.Minute, Now: clock.Now}
	lock, err := e.checkout().Lock(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	timers := &fakeTimers{asked: make(chan time.Duration, 4), fire: map[int]chan time.Time{}}
	ticks := make(chan time.Time)
	lost := make(chan error, 1)
	stop := lock.keep(ticks, timers.after, func(err error) { lost <- err })
	defer stop()

	if d := timers.next(t); d != 54*time.Second {
		t.Errorf("the first give-up timer is set for %s, want 54s: a tenth of the minute before the expiry", d)
	}
	clock.set(t0.Add(45 * time.Second))
	ticks <- t0.Add(45 * time.Second)
	if d := timers.next(t); d != 54*time.Second {
		t.Errorf("after the renewal at 45s the give-up timer is set for %s, want 54s (at 99s)", d)
	}
	// The renewals from now on do not get through (no tick comes). A timer
	// that fires before its time by the clock is set again.
	clock.set(t0.Add(98 * time.Second))
	timers.fire[1] <- t0.Add(98 * time.Second)
	if d := timers.next(t); d != time.Second {
		t.Errorf("a timer that fired a second early is set again for %s, want 1s", d)
	}
	select {
	case err := <-lost:
		t.Fatalf("the lock was given up at 98s, before its time: %v", err)
	default:
	}
	clock.set(t0.Add(99 * time.Second))
	timers.fire[2] <- t0.Add(99 * time.Second)
	select {
	case err := <-lost:
		if !strings.Contains(err.Error(), "could not be renewed before it expires at 2026-12-01T12:01:45Z") {
			t.Errorf("told %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the holder whose renewals did not get through was not told at its give-up time")
	}
	// It gave up while the lock is still its own: no one else may take it
	// for six seconds more.
	_, err = e.checkout().Lock(ctx, opts)
	var held *HeldError
	if !errors.As(err, &held) || !held.Until.Equal(t0.Add(105*time.Second)) {
		t.Errorf("the lock given up at 99s: %v, want held until 105s", err)
	}
}

// A lock's expiry is said to the second, rounded up: a lock taken at any
// fraction of a second lasts its TTL at least, by the holder's reckoning
// and by what others read alike.
func TestALockLastsItsTTLAtLeast(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		taken time.Duration
		ttl   time.Duration
		want  time.Duration
	}{
		{0, 30 * time.Second, 30 * time.Second},
		{950 * time.Millisecond, time.Second, 2 * time.Second},
		{10 * time.Millisecond, 30 * time.Second, 31 * time.Second},
	} {
		if got := lockUntil(t0.Add(tt.taken), tt.ttl); !got.Equal(t0.Add(tt.want)) {
			t.Errorf("a %s lock taken at +%s expires at %s, want %s", tt.ttl, tt.taken, got.Format(time.RFC3339Nano), t0.Add(tt.want).Format(time.RFC3339Nano))
		}
	}
}

// never is a give-up timer that does not fire, for tests that drive a
// holder by its ticks alone.
func never(time.Duration) <-chan time.Time { return nil }

// fakeTimers stand in for time.After: each timer asked for is numbered
// from 0, its duration told on asked, and it fires when the test sends on
// fire[n].
type fakeTimers struct {
	mu    sync.Mutex
	asked chan time.Duration
	fire  map[int]chan time.Time
	n     int
}

func (f *fakeTimers) after(d time.Duration) <-chan time.Time {
	f.mu.Lock()
	c := make(chan time.Time)
	f.fire[f.n] = c
	f.n++
	f.mu.Unlock()
	f.asked <- d
	return c
}

// next is the duration of the next timer asked for.
func (f *fakeTimers) next(t *testing.T) time.Duration {
	t.Helper()
	select {
	case d := <-f.asked:
		return d
	case <-time.After(time.Minute):
		t.Fatal("no give-up timer was set")
		return 0
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

// A holder that gave its lock up while a renewal was on its way may find
// the renewal got through after all: the lock is then its own again for a
// TTL, and releasing it frees it at once. Releasing never frees a lock
// another reconciler took over: the release moves the lock only from the
// commit this holder last wrote.
func TestALockGivenUpMidRenewalIsStillReleasedAndAnothersIsNot(t *testing.T) {
	e := newEnv(t, sim.Config{Seed: 45})
	ctx := context.Background()
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	clock := &fakeClock{now: t0}
	opts := LockOptions{Holder: "replica-0", TTL: time.Minute, Now: clock.Now}
	lock, err := e.checkout().Lock(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	timers := &fakeTimers{asked: make(chan time.Duration, 4), fire: map[int]chan time.Time{}}
	ticks := make(chan time.Time)
	lost := make(chan error, 1)
	stop := lock.keep(ticks, timers.after, func(err error) { lost <- err })
	timers.next(t)

	// The renewal at 45 s waits for the checkout's git work, which takes
	// until after the give-up time, 54 s.
	lock.c.gitMu.Lock()
	clock.set(t0.Add(45 * time.Second))
	ticks <- t0.Add(45 * time.Second)
	// A second tick is taken only once the first is dealt with (the
	// renewal started); with one under way it starts no other.
	ticks <- t0.Add(45 * time.Second)
	// Past the give-up time, the holder gives up at its timer or at a
	// tick, whichever it meets first; it may read the clock set here
	// while still dealing with the second tick, and give up then.
	clock.set(t0.Add(55 * time.Second))
	select {
	case timers.fire[0] <- t0.Add(55 * time.Second):
	case ticks <- t0.Add(55 * time.Second):
	case err := <-lost:
		lost <- err
	}
	select {
	case <-lost:
	case <-time.After(time.Minute):
		t.Fatal("the holder was not told it gave the lock up")
	}
	stop()
	lock.c.gitMu.Unlock()
	for deadline := time.Now().Add(time.Minute); lock.expiry().Before(t0.Add(115 * time.Second)); {
		if time.Now().After(deadline) {
			t.Fatalf("the renewal under way never landed: the lock expires at %s", lock.expiry())
		}
		time.Sleep(10 * time.Millisecond)
	}
	other := LockOptions{Holder: "replica-1", TTL: time.Minute, Now: clock.Now}
	var held *HeldError
	if _, err := e.checkout().Lock(ctx, other); !errors.As(err, &held) {
		t.Fatalf("after the late renewal another holder got %v, want the lock held", err)
	}
	if err := lock.Release(ctx); err != nil {
		t.Fatal(err)
	}
	theirs, err := e.checkout().Lock(ctx, other)
	if err != nil {
		t.Fatalf("after the release: %v, want the lock free", err)
	}

	// The first holder releases again, late: the lock it no longer holds
	// stays with the one who took it.
	if err := lock.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := e.checkout().Lock(ctx, opts); !errors.As(err, &held) || held.Holder != "replica-1" {
		t.Errorf("after a stale release: %v, want the lock still replica-1's", err)
	}
	if err := theirs.Release(ctx); err != nil {
		t.Fatal(err)
	}
}
