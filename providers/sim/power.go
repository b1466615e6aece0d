// SPDX-License-Identifier: Apache-2.0

package sim

import (
	"fmt"
	"time"
)

// A stopped instance keeps its disks, addresses and id but holds neither
// capacity nor quota: starting it again is a placement like a launch, and
// meets the same stock-outs and limits.

// Stop starts stopping an instance: it is stopping for OperationTime, then
// stopped. Stopping a stopping or stopped instance is a no-op; one on its
// way out cannot be stopped.
func (w *World) Stop(id string) (*Instance, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.clock.Now()
	w.expire(now)
	inst, err := w.visibleInstance(id, now)
	if err != nil {
		return nil, err
	}
	switch w.stateAt(inst, now) {
	case StatePending, StateRunning:
		inst.StoppedAt = now
		w.setState(inst, StateStopping)
		w.changed()
	case StateStopping, StateStopped:
	default:
		return nil, &Error{Kind: KindIncorrectState, Message: fmt.Sprintf("instance %s is %s and cannot be stopped", id, w.stateAt(inst, now))}
	}
	return w.snapshot(inst, now), nil
}

// Start runs a stopped instance again: it is pending for PendingFor, from
// now, and then running, if its zone has room for it and its quotas allow
// it. Starting a pending or running instance is a no-op; a stopping one
// must finish stopping first.
func (w *World) Start(id string) (*Instance, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.clock.Now()
	w.expire(now)
	inst, err := w.visibleInstance(id, now)
	if err != nil {
		return nil, err
	}
	switch state := w.stateAt(inst, now); state {
	case StatePending, StateRunning:
		return w.snapshot(inst, now), nil
	case StateStopped:
	default:
		return nil, &Error{Kind: KindIncorrectState, Message: fmt.Sprintf("instance %s is %s and cannot be started", id, state)}
	}
	if used, limit := w.used(inst.Cloud, inst.Zone, inst.InstanceType, inst.Market), w.capacityOf(inst.Cloud, inst.Zone, inst.InstanceType, inst.Market); used >= limit {
		return nil, &Error{Kind: KindCapacity, Message: fmt.Sprintf("no %s %s capacity left in %s", inst.Market, inst.InstanceType, inst.Zone)}
	}
	if typ, ok := w.typeIn(inst.Cloud, inst.Zone, inst.InstanceType, inst.Market); ok {
		if over := w.overQuota(inst.Cloud, inst.Region, typ, inst.Market); over != nil {
			return nil, over
		}
	}
	inst.LaunchedAt = now
	inst.StoppedAt = time.Time{}
	w.setState(inst, StatePending)
	w.changed()
	return w.snapshot(inst, now), nil
}
