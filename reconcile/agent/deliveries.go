package agent

import (
	"crypto/sha256"
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

// deliveries remembers the delivery ids accepted within a window, at most
// max of them, forgetting the oldest first.
type deliveries struct {
	window time.Duration
	max    int
	now    func() time.Time

	mu sync.Mutex
	// seen is when each id was accepted, by a digest of the id so that an
	// entry takes the same memory however long a header a sender chose.
	seen map[[sha256.Size]byte]time.Time
	// order is seen's keys, oldest first.
	order []delivery
}

type delivery struct {
	key [sha256.Size]byte
	at  time.Time
}

func newDeliveries(window time.Duration, max int, now func() time.Time) *deliveries {
	return &deliveries{window: window, max: max, now: now, seen: map[[sha256.Size]byte]time.Time{}}
}

// first records id and reports whether it is new: not accepted within the
// window. Checking and recording are one step, so of two copies of a
// delivery arriving together exactly one is first.
func (d *deliveries) first(id string) bool {
	key := sha256.Sum256([]byte(id))
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.now()
	d.forget(now)
	if _, ok := d.seen[key]; ok {
		return false
	}
	d.seen[key] = now
	d.order = append(d.order, delivery{key, now})
	for len(d.order) > d.max {
		d.drop()
	}
	return true
}

// forget drops the ids accepted longer ago than the window.
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
