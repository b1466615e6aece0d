// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"context"
	"crypto/sha256"
	"net/http"
	"sync"
	"time"
)

// GitHub redelivers a webhook with its X-GitHub-Delivery id unchanged, and
// a captured delivery replays with a valid signature; an hour covers
// GitHub's own retries and a person pressing Redeliver. The bound keeps a
// flood of signed deliveries from growing the agent without limit.
const (
	deliveryWindow = time.Hour
	maxDeliveries  = 10_000
)

// deliveries remembers the delivery ids handled within a window, at most
// max of them, forgetting the oldest first. An id is remembered only once
// its delivery was handled: one that failed (the replica it was passed to
// did not answer) must run when GitHub redelivers it.
type deliveries struct {
	window time.Duration
	max    int
	now    func() time.Time

	mu sync.Mutex
	// seen is when each id was handled, by a digest of the id so that an
	// entry takes the same memory however long a header a sender chose.
	seen map[[sha256.Size]byte]time.Time
	// order is seen's keys, oldest first.
	order []delivery
	// pending are the ids being handled now; the channel closes when the
	// outcome is known.
	pending map[[sha256.Size]byte]chan struct{}
}

type delivery struct {
	key [sha256.Size]byte
	at  time.Time
}

func newDeliveries(window time.Duration, max int, now func() time.Time) *deliveries {
	return &deliveries{window: window, max: max, now: now,
		seen: map[[sha256.Size]byte]time.Time{}, pending: map[[sha256.Size]byte]chan struct{}{}}
}

// claim reports whether id is new: not handled within the window. A new id
// is held by the caller until it calls settle, with whether the delivery
// was handled. A copy of the delivery that comes meanwhile waits for that
// outcome rather than guess it: it is a duplicate if the first copy was
// handled, and handled in its place if not, so of copies arriving together
// exactly one runs, and a failed one leaves its id free for the next. err
// is ctx's when it ends while waiting.
func (d *deliveries) claim(ctx context.Context, id string) (settle func(handled bool), first bool, err error) {
	key := sha256.Sum256([]byte(id))
	for {
		d.mu.Lock()
		d.forget(d.now())
		if _, ok := d.seen[key]; ok {
			d.mu.Unlock()
			return nil, false, nil
		}
		busy, ok := d.pending[key]
		if !ok {
			done := make(chan struct{})
			d.pending[key] = done
			d.mu.Unlock()
			var once sync.Once
			return func(handled bool) { once.Do(func() { d.settle(key, done, handled) }) }, true, nil
		}
		d.mu.Unlock()
		select {
		case <-busy:
		case <-ctx.Done():
			return nil, false, ctx.Err()
		}
	}
}

// settle ends a claim: a handled id is remembered from now, one that was
// not is forgotten, and the copies waiting on it go on.
func (d *deliveries) settle(key [sha256.Size]byte, done chan struct{}, handled bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.pending, key)
	close(done)
	if !handled {
		return
	}
	now := d.now()
	d.seen[key] = now
	d.order = append(d.order, delivery{key, now})
	for len(d.order) > d.max {
		d.drop()
	}
}

// forget drops the ids handled longer ago than the window.
func (d *deliveries) forget(now time.Time) {
	for len(d.order) > 0 && now.Sub(d.order[0].at) >= d.window {
		d.drop()
	}
}

func (d *deliveries) drop() {
	delete(d.seen, d.order[0].key)
	d.order = d.order[1:]
}

// size is how many ids are remembered; tests read it.
func (d *deliveries) size() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.seen)
}

// answered is a ResponseWriter that keeps the status it answered, so a
// delivery is remembered only when its answer says it was handled.
type answered struct {
	http.ResponseWriter
	code int
}

func (w *answered) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *answered) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// handled is whether the answer settles the delivery: anything but a
// server error, which a redelivery may get past, or no answer at all (the
// handler panicked).
func (w *answered) handled() bool {
	return w.code != 0 && w.code < http.StatusInternalServerError
}
