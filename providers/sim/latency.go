// SPDX-License-Identifier: Apache-2.0

package sim

import (
	"context"
	"fmt"
	"time"
)

// Latency is how long the clouds take to do what they are asked, in the
// world's time. Zero makes every change immediate, which is what most
// tests want; clients whose polling paths matter (waiters, pollers,
// gcloud's operation wait) need it above zero.
type Latency struct {
	// Launch is how long a new instance is pending (EC2), provisioning
	// (GCE) or creating (Azure) before it runs.
	Launch time.Duration `json:"launch"`
	// Operation is how long a long-running operation of GCE or ARM takes
	// to finish, and how long an EC2 instance is shutting down before it
	// is terminated.
	Operation time.Duration `json:"operation"`
}

// SetLatency changes how long the clouds take from now on; the state
// file keeps it, so a restart without saying keeps it too.
func (w *World) SetLatency(l Latency) error {
	if l.Launch < 0 || l.Operation < 0 {
		return fmt.Errorf("latency cannot be negative: %v, %v", l.Launch, l.Operation)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.applyLatency(l)
	w.changed()
	return nil
}

// Latency is how long the clouds take now.
func (w *World) Latency() Latency {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.latency()
}

func (w *World) latency() Latency {
	return Latency{Launch: w.cfg.PendingFor, Operation: w.cfg.OperationTime}
}

func (w *World) applyLatency(l Latency) {
	w.cfg.PendingFor, w.cfg.OperationTime = l.Launch, l.Operation
}

// Wait waits out an injected latency, d, as a front answers after it; it
// reports false when ctx ends first, the client gone.
func Wait(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
