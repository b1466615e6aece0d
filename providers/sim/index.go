// SPDX-License-Identifier: Apache-2.0

package sim

import (
	"time"

	"github.com/gpufleet/gpufleet/schema/catalog"
)

// The world's indexes keep what one request costs independent of how many
// instances the world holds: a fleet of ten thousand nodes is launched
// with thousands of calls, and each used to scan every instance several
// times. They are derived, never saved, and rebuilt whenever what they
// summarise changed in a way they do not follow.
type indexes struct {
	// tally counts the instances holding capacity, per zone pool and per
	// quota; nil until asked for, and again after a state change.
	tally *tally
	// byName finds named instances (GCE, Azure) by cloud, scope and name.
	byName map[nameKey][]string
	// uses memoises Catalog.UsesOf.
	uses map[usesKey][]catalog.QuotaUse
	// scanDue says instances or tokens may have stopped being visible
	// since the last scan; nextEnd is the earliest time one will without
	// any change, nextOp the earliest an operation finishes or expires.
	scanDue         bool
	nextEnd, nextOp time.Time
}

type tally struct {
	pool  map[capacityKey]int
	quota map[quotaKey]int
}

type nameKey struct{ Cloud, Scope, Name string }

type usesKey struct {
	Cloud, InstanceType string
	Market              catalog.Market
}

// holds reports whether an instance uses capacity and quota. Its state
// alone decides: the passage of time only turns pending into running.
func holds(i *Instance) bool { return i.State == StatePending || i.State == StateRunning }

func (w *World) usesOf(cloud, instanceType string, market catalog.Market) []catalog.QuotaUse {
	k := usesKey{cloud, instanceType, market}
	u, ok := w.idx.uses[k]
	if !ok {
		if w.idx.uses == nil {
			w.idx.uses = map[usesKey][]catalog.QuotaUse{}
		}
		u = w.cat.UsesOf(cloud, instanceType, market)
		w.idx.uses[k] = u
	}
	return u
}

// put adds an instance to the world.
func (w *World) put(inst *Instance) {
	w.instances[inst.ID] = inst
	if inst.Name != "" {
		if w.idx.byName == nil {
			w.idx.byName = map[nameKey][]string{}
		}
		k := nameKey{inst.Cloud, inst.Scope, inst.Name}
		w.idx.byName[k] = append(w.idx.byName[k], inst.ID)
	}
	if holds(inst) {
		w.count(inst, 1)
	}
	w.idx.scanDue = true
}

// drop removes an instance from the world.
func (w *World) drop(id string) {
	inst, ok := w.instances[id]
	if !ok {
		return
	}
	delete(w.instances, id)
	if inst.Name != "" {
		k := nameKey{inst.Cloud, inst.Scope, inst.Name}
		ids := w.idx.byName[k]
		for i, other := range ids {
			if other == id {
				ids = append(ids[:i:i], ids[i+1:]...)
				break
			}
		}
		if len(ids) == 0 {
			delete(w.idx.byName, k)
		} else {
			w.idx.byName[k] = ids
		}
	}
	if holds(inst) {
		w.count(inst, -1)
	}
	w.idx.scanDue = true
}

// setState changes an instance's state, and whether it is preempted and
// when it ended, keeping the indexes true.
func (w *World) setState(inst *Instance, state State) {
	before := holds(inst)
	inst.State = state
	if after := holds(inst); before != after {
		if after {
			w.count(inst, 1)
		} else {
			w.count(inst, -1)
		}
	}
	w.idx.scanDue = true
}

// named returns the instances of a cloud with a name in a scope.
func (w *World) named(cloud, scope, name string) []*Instance {
	var out []*Instance
	for _, id := range w.idx.byName[nameKey{cloud, scope, name}] {
		if inst, ok := w.instances[id]; ok {
			out = append(out, inst)
		}
	}
	return out
}

// count adds an instance that holds capacity to the tally, or takes it
// out.
func (w *World) count(inst *Instance, d int) {
	t := w.idx.tally
	if t == nil {
		return
	}
	t.pool[capacityKey{inst.Cloud, inst.Zone, inst.InstanceType, inst.Market}] += d
	for _, u := range w.usesOf(inst.Cloud, inst.InstanceType, inst.Market) {
		if _, k, ok := w.quotaKeyOf(u, inst.Region); ok {
			t.quota[k] += d * u.Per
		}
	}
}

func (w *World) tallied() *tally {
	if w.idx.tally == nil {
		w.idx.tally = &tally{pool: map[capacityKey]int{}, quota: map[quotaKey]int{}}
		for _, inst := range w.instances {
			if holds(inst) {
				w.count(inst, 1)
			}
		}
	}
	return w.idx.tally
}

// used is how many instances hold a pool's capacity.
func (w *World) used(cloud, zone, instanceType string, market catalog.Market) int {
	return w.tallied().pool[capacityKey{cloud, zone, instanceType, market}]
}

// quotaUsed is what the cloud's pending and running instances count
// against a quota.
func (w *World) quotaUsed(k quotaKey) int { return w.tallied().quota[k] }

// expireSoon notes a time at which something will stop being visible.
func (w *World) expireSoon(t time.Time) {
	if w.idx.nextEnd.IsZero() || t.Before(w.idx.nextEnd) {
		w.idx.nextEnd = t
	}
}

// settleSoon notes a time at which an operation finishes or expires.
func (w *World) settleSoon(t time.Time) {
	if w.idx.nextOp.IsZero() || t.Before(w.idx.nextOp) {
		w.idx.nextOp = t
	}
}
