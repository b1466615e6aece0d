// SPDX-License-Identifier: Apache-2.0

package reconcile

import (
	"context"
	"sync"
)

// hooks let tests stop a run where a crash would, and act between its
// steps. They belong to no exported type: Run never has any, and only the
// package's own tests start a run with them (runWith).
type hooks struct {
	// crashAfter stops the run after the named step as if the process had
	// died: no status, no commit, no unlock.
	crashAfter Step
	// crashAfterCreates stops the run as if the process had died once that
	// many creates have succeeded, in the middle of applying.
	crashAfterCreates int
	// crashBeforePush stops the run as if the process had died between
	// committing the status and pushing it.
	crashBeforePush bool
	// beforePush runs just before the status is pushed, to push a rival
	// commit.
	beforePush func()

	mu      sync.Mutex
	created int
	cancel  context.CancelFunc
	crashed bool
}

// onCreate counts a successful create and, at the count asked for, stops
// the run's steps as a crash would.
func (h *hooks) onCreate() {
	if h == nil || h.crashAfterCreates == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.created++; h.created >= h.crashAfterCreates && !h.crashed {
		h.crashed = true
		h.cancel()
	}
}

// crashedAt reports whether the run is to stop as if it died, after step.
func (h *hooks) crashedAt(step Step) bool {
	if h == nil {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.crashed || h.crashAfter == step
}

func (h *hooks) pushing() (crash bool) {
	if h == nil {
		return false
	}
	if h.beforePush != nil {
		h.beforePush()
	}
	return h.crashBeforePush
}
