// SPDX-License-Identifier: Apache-2.0

package sim

import (
	"fmt"
	"slices"
)

// BatchSpec asks for up to Max instances alike, and at least Min: EC2's
// RunInstances with MinCount and MaxCount, GCE's bulkInsert with minCount
// and count. Its Token covers the whole batch; its Name is unused.
type BatchSpec struct {
	LaunchSpec
	Min, Max int
	// Names, for clouds that name instances, has one name per instance
	// that may be launched (Max of them), in launch order.
	Names []string
}

// BatchResult is what LaunchBatch did.
type BatchResult struct {
	// Instances are those the batch launched, in launch order.
	Instances []*Instance
	// Operation tracks a bulk insert; nil for clouds without operations.
	Operation *Operation
	// Created is false when the token matched an earlier batch.
	Created bool
}

// LaunchBatch launches as many of a batch as the zone's capacity and the
// quotas allow, up to Max. When fewer than Min fit, it launches none and
// fails with the capacity or quota error the first one that did not fit
// met: at once, or on the operation for clouds that report it there. A
// repeat of the token returns what the first call did.
func (w *World) LaunchBatch(spec BatchSpec) (BatchResult, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.clock.Now()
	w.expire(now)

	if spec.Min < 1 || spec.Max < spec.Min {
		return BatchResult{}, &Error{Kind: KindInvalid, Message: fmt.Sprintf("a batch needs 1 <= min (%d) <= max (%d)", spec.Min, spec.Max)}
	}
	if spec.Names != nil && len(spec.Names) != spec.Max {
		return BatchResult{}, &Error{Kind: KindInvalid, Message: fmt.Sprintf("%d names for a batch of up to %d", len(spec.Names), spec.Max)}
	}
	// Names are unique in a scope, within the batch as against what is
	// already there.
	seen := make(map[string]bool, len(spec.Names))
	for _, name := range spec.Names {
		if seen[name] {
			return BatchResult{}, &Error{Kind: KindInvalid, Message: fmt.Sprintf("%s is named twice in the batch", name)}
		}
		seen[name] = true
	}
	if spec.Token != "" {
		if t, ok := w.tokens[spec.Token]; ok {
			if spec.Params != "" && t.Params != spec.Params {
				return BatchResult{}, errMismatch()
			}
			res := BatchResult{}
			for _, id := range t.batchIDs() {
				if inst, ok := w.instances[id]; ok {
					res.Instances = append(res.Instances, w.snapshot(inst, now))
				} else if gone := t.gone(id); gone != nil {
					res.Instances = append(res.Instances, w.snapshot(gone, now))
				}
			}
			if op, ok := w.operations[t.OperationID]; ok {
				res.Operation = op.snapshot(now)
			}
			if len(res.Instances) > 0 || res.Operation != nil {
				return res, nil
			}
		}
	}
	region, typ, err := w.placement(spec.LaunchSpec)
	if err != nil {
		return BatchResult{}, err
	}
	for _, name := range spec.Names {
		for _, other := range w.named(spec.Cloud, spec.Scope, name) {
			if w.visible(other, now) {
				return BatchResult{}, &Error{Kind: KindAlreadyExists, Message: fmt.Sprintf("%s already exists", other.Name)}
			}
		}
	}

	// Launch one by one while they fit: each counts against the capacity
	// and quotas the next one meets.
	fail := spec.FailLater
	var launched []*Instance
	for i := 0; fail == nil && i < spec.Max; i++ {
		if used, limit := w.used(spec.Cloud, spec.Zone, spec.InstanceType, spec.Market), w.capacityOf(spec.Cloud, spec.Zone, spec.InstanceType, spec.Market); used >= limit {
			fail = &Error{Kind: KindCapacity, Message: fmt.Sprintf("no %s %s capacity left in %s for %d more", spec.Market, spec.InstanceType, spec.Zone, spec.Min-i)}
			break
		}
		if over := w.overQuota(spec.Cloud, region, typ, spec.Market); over != nil {
			fail = over
			break
		}
		one := spec.LaunchSpec
		if len(spec.Names) > 0 {
			one.Name = spec.Names[i]
		}
		inst := w.newInstance(one, region, typ, now)
		inst.LaunchIndex = i
		w.put(inst)
		launched = append(launched, inst)
	}
	if len(launched) >= spec.Min {
		fail = nil
	} else {
		for _, inst := range launched {
			w.drop(inst.ID)
		}
		launched = nil
		async := spec.Operation != "" && (spec.FailLater != nil || fail.Kind == KindCapacity && spec.AsyncCapacity || fail.Kind == KindQuota && spec.AsyncQuota)
		if !async {
			return BatchResult{}, fail
		}
	}

	res := BatchResult{Created: true}
	entry := tokenEntry{Params: spec.Params, Expires: now.Add(tokenLifetime)}
	for _, inst := range launched {
		entry.Batch = append(entry.Batch, inst.ID)
	}
	if len(launched) > 0 {
		entry.InstanceID = launched[0].ID
	}
	if spec.Operation != "" {
		w.seq++
		op := &Operation{
			ID:        fmt.Sprintf("operation-%d-%08x", now.UnixMilli(), w.rng.Uint32()),
			Cloud:     spec.Cloud,
			Kind:      spec.Operation,
			Scope:     spec.Scope,
			Zone:      spec.Zone,
			StartedAt: now,
			DoneAt:    now.Add(w.cfg.OperationTime),
			Err:       fail,
			Batch:     slices.Clone(entry.Batch),
			Target:    spec.Max,
		}
		if len(launched) > 0 {
			op.InstanceID = launched[0].ID
		}
		w.operations[op.ID] = op
		w.settleSoon(op.DoneAt)
		for _, inst := range launched {
			inst.CreateOp = op.ID
		}
		entry.OperationID = op.ID
		res.Operation = op.snapshot(now)
	}
	if spec.Token != "" {
		w.tokens[spec.Token] = entry
		w.expireSoon(entry.Expires)
	}
	w.changed()
	for _, inst := range launched {
		res.Instances = append(res.Instances, w.snapshot(inst, now))
	}
	return res, nil
}

// batchIDs is every instance a token launched.
func (t tokenEntry) batchIDs() []string {
	if len(t.Batch) > 0 {
		return t.Batch
	}
	if t.InstanceID != "" {
		return []string{t.InstanceID}
	}
	return nil
}

// gone is the last snapshot of a token's instance that is no longer
// listed, or nil.
func (t tokenEntry) gone(id string) *Instance {
	if g := t.BatchGone[id]; g != nil {
		return g
	}
	if t.Gone != nil && t.Gone.ID == id {
		return t.Gone
	}
	return nil
}
