// SPDX-License-Identifier: Apache-2.0

package sim

import "maps"

// OperationSetLabels replaces a GCE instance's labels.
const OperationSetLabels OperationKind = "setLabels"

// SetLabels replaces an instance's tags with labels, as GCE's
// instances.setLabels does, when check passes on the tags it has now: the
// check and the change are one step, so of two callers who read the same
// labels only the first changes them, and the other's check (a stale
// fingerprint) fails. The operation it returns is done: labels change at
// once.
func (w *World) SetLabels(id string, labels map[string]string, check func(current map[string]string) error) (*Operation, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.clock.Now()
	w.expire(now)
	inst, err := w.visibleInstance(id, now)
	if err != nil {
		return nil, err
	}
	if err := check(maps.Clone(inst.Tags)); err != nil {
		return nil, err
	}
	inst.Tags = maps.Clone(labels)
	if inst.Tags == nil {
		inst.Tags = map[string]string{}
	}
	op := w.startOperation(inst.Cloud, OperationSetLabels, inst, now, nil)
	op.DoneAt = now
	w.settleSoon(now)
	return op.snapshot(now), nil
}
