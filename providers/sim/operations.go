// SPDX-License-Identifier: Apache-2.0

package sim

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/gpufleet/gpufleet/schema/catalog"
)

// OperationKind is what a long-running operation does.
type OperationKind string

const (
	// OperationInsert creates a GCE instance; OperationPut an ARM VM.
	OperationInsert OperationKind = "insert"
	OperationPut    OperationKind = "put"
	// OperationBulkInsert creates several GCE instances at once.
	OperationBulkInsert OperationKind = "bulkInsert"
	OperationDelete     OperationKind = "delete"
	// OperationPreempted is the system event GCE records when it takes a
	// spot VM back, done as soon as it starts.
	OperationPreempted OperationKind = "compute.instances.preempted"
)

// Operation is a long-running operation of GCE or ARM: a create or delete
// that the API accepts at once and finishes later, possibly with an error.
type Operation struct {
	ID         string        `json:"id"`
	Cloud      string        `json:"cloud"`
	Kind       OperationKind `json:"kind"`
	InstanceID string        `json:"instanceId"`
	Name       string        `json:"name,omitempty"`
	Scope      string        `json:"scope,omitempty"`
	Zone       string        `json:"zone"`
	StartedAt  time.Time     `json:"startedAt"`
	DoneAt     time.Time     `json:"doneAt"`
	Err        *Error        `json:"error,omitempty"`
	// Batch lists the instances a bulk insert created, in launch order;
	// Target is how many it asked for.
	Batch  []string `json:"batch,omitempty"`
	Target int      `json:"target,omitempty"`
	// Done is whether the operation has finished, as of the snapshot.
	Done bool `json:"-"`
	// Applied is set once the operation's effects reached the instance.
	Applied bool `json:"applied,omitempty"`
	// Before is the state a delete found its instance in, which it goes
	// back to if the delete fails.
	Before State `json:"before,omitempty"`
}

func (op *Operation) snapshot(now time.Time) *Operation {
	c := *op
	c.Done = !now.Before(op.DoneAt)
	return &c
}

func (w *World) startOperation(cloud string, kind OperationKind, inst *Instance, now time.Time, fail *Error) *Operation {
	w.seq++
	op := &Operation{
		ID:         fmt.Sprintf("operation-%d-%08x", now.UnixMilli(), w.rng.Uint32()),
		Cloud:      cloud,
		Kind:       kind,
		InstanceID: inst.ID,
		Name:       inst.Name,
		Scope:      inst.Scope,
		Zone:       inst.Zone,
		StartedAt:  now,
		DoneAt:     now.Add(w.cfg.OperationTime),
		Err:        fail,
	}
	w.operations[op.ID] = op
	w.settleSoon(op.DoneAt)
	w.changed()
	return op
}

// StartDelete begins deleting an instance as a long-running operation; a
// repeat with the same token returns the first operation. Deleting an
// instance that is already being deleted returns that deletion.
func (w *World) StartDelete(id, token string, fail *Error) (*Operation, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.clock.Now()
	w.expire(now)
	if token != "" {
		if t, ok := w.tokens[token]; ok {
			if op, ok := w.operations[t.OperationID]; ok {
				return op.snapshot(now), nil
			}
		}
	}
	inst, err := w.visibleInstance(id, now)
	if err != nil {
		return nil, err
	}
	before := w.stateAt(inst, now)
	if inst.State != StateShuttingDown {
		inst.EndedAt = now
		w.setState(inst, StateShuttingDown)
	}
	op := w.startOperation(inst.Cloud, OperationDelete, inst, now, fail)
	if before != StateShuttingDown {
		op.Before = before
	}
	if token != "" {
		w.tokens[token] = tokenEntry{InstanceID: id, OperationID: op.ID, Expires: now.Add(tokenLifetime)}
		w.expireSoon(now.Add(tokenLifetime))
	}
	return op.snapshot(now), nil
}

// Operation returns an operation by id with its effects applied if it has
// finished.
func (w *World) Operation(id string) (*Operation, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.clock.Now()
	w.expire(now)
	op, ok := w.operations[id]
	if !ok {
		return nil, false
	}
	return op.snapshot(now), true
}

// Operations lists a cloud's operations of a kind, as of now, in the order
// they began: what a front lists that it did not start itself, such as the
// preemptions GCE records.
func (w *World) Operations(cloud string, kind OperationKind) []*Operation {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.clock.Now()
	w.expire(now)
	var out []*Operation
	for _, op := range w.operations {
		if op.Cloud == cloud && op.Kind == kind {
			out = append(out, op.snapshot(now))
		}
	}
	slices.SortFunc(out, func(a, b *Operation) int { return cmp.Or(a.StartedAt.Compare(b.StartedAt), cmp.Compare(a.ID, b.ID)) })
	return out
}

// rememberGone keeps an instance as it ended for the token that launched
// it, when the launch was no operation, so that the token still answers
// it once a delete has taken it away: OCI answers a retried launch with
// the instance it made, terminated or not, for as long as the token
// lives. (A token whose launch was an operation answers with that
// operation instead.) The caller holds w.mu.
func (w *World) rememberGone(inst *Instance, now time.Time) {
	if inst.Token == "" {
		return
	}
	t, ok := w.tokens[inst.Token]
	if !ok || t.InstanceID != inst.ID || t.OperationID != "" || len(t.Batch) > 0 {
		return
	}
	gone := w.snapshot(inst, now)
	gone.State = StateTerminated
	t.Gone = gone
	w.tokens[inst.Token] = t
}

// operationLifetime is how long finished operations can still be read.
const operationLifetime = 24 * time.Hour

// settle applies the effects of finished operations.
func (w *World) settle(now time.Time) {
	if w.idx.nextOp.IsZero() || now.Before(w.idx.nextOp) {
		return
	}
	w.idx.nextOp = time.Time{}
	for id, op := range w.operations {
		if now.Before(op.DoneAt) {
			w.settleSoon(op.DoneAt)
			continue
		}
		if !op.Applied {
			op.Applied = true
			w.dirty = true
			inst := w.instances[op.InstanceID]
			switch {
			case inst == nil:
			case op.Kind == OperationDelete && op.Err == nil:
				w.rememberGone(inst, now)
				w.drop(op.InstanceID)
			case op.Kind == OperationDelete:
				// A delete that failed leaves the instance as it was: a
				// stopped one stays stopped, holding nothing.
				inst.EndedAt = time.Time{}
				w.setState(inst, cmp.Or(op.Before, StateRunning))
			case op.Err != nil && op.Cloud == catalog.Azure:
				w.setState(inst, StateFailed)
			case op.Err != nil:
				w.drop(op.InstanceID)
			}
		}
		if now.Sub(op.DoneAt) > operationLifetime {
			delete(w.operations, id)
			w.dirty = true
		} else {
			w.settleSoon(op.DoneAt.Add(operationLifetime + time.Nanosecond))
		}
	}
}
