// SPDX-License-Identifier: Apache-2.0

package sim

import (
	"fmt"

	"github.com/gpufleet/gpufleet/schema/atomicfile"
)

// changed records a change a caller made, which Sync must see saved. The
// caller holds w.mu.
func (w *World) changed() { w.changes.Add(1) }

// Sync returns once every change made to the world before the call is in
// its state file. It is what lets a front answer a request that changed
// the world only when the change would survive a crash.
//
// Concurrent callers share saves: a caller whose changes are already
// saved returns at once, without a lock; the others queue behind the save
// in progress, and the first of them to get its turn saves the world as
// it then is, which covers the changes of every caller queued with it.
// A world without a state file returns at once.
func (w *World) Sync() error {
	if w.cfg.StatePath == "" {
		return nil
	}
	want := w.changes.Load()
	if w.saved.Load() >= want {
		return nil
	}
	w.saving.Lock()
	defer w.saving.Unlock()
	if w.saved.Load() >= want {
		return nil
	}
	return w.save()
}

// Save writes the world to its state file, if it has one and anything
// changed, including what the passage of time alone changed, which Sync
// leaves alone. The file is replaced in one rename, so a crash leaves
// either the old state or the new one, never half of either.
func (w *World) Save() error {
	if w.cfg.StatePath == "" {
		return nil
	}
	w.saving.Lock()
	defer w.saving.Unlock()
	return w.save()
}

// Saves reports how many times the world has written its state file, so
// tests and benchmarks can tell how many writes requests cost.
func (w *World) Saves() uint64 { return w.saves.Load() }

// save writes the world as it is now. The caller holds w.saving.
func (w *World) save() error {
	w.mu.Lock()
	changes := w.changes.Load()
	if !w.dirty && changes == w.saved.Load() {
		w.mu.Unlock()
		return nil
	}
	data, err := w.marshal()
	dirty := w.dirty
	w.dirty = false
	w.mu.Unlock()
	if err == nil {
		err = atomicfile.Write(w.cfg.StatePath, data)
	}
	if err != nil {
		// What time changed is saved next time; Sync's callers see the
		// count unchanged and try again.
		w.mu.Lock()
		w.dirty = w.dirty || dirty
		w.mu.Unlock()
		return fmt.Errorf("saving emulator state to %s, %w", w.cfg.StatePath, err)
	}
	w.saves.Add(1)
	w.saved.Store(changes)
	return nil
}
