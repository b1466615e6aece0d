// SPDX-License-Identifier: Apache-2.0

package fake

import (
	"fmt"
	"maps"
	"slices"

	"github.com/gpufleet/gpufleet/planner"
)

// Add puts an instance in the cloud as if an earlier run, or someone else,
// had launched it: without a fleet and a workload it is not gpufleet's,
// never listed and never deleted. An empty id gets a fresh one, an empty
// state is running, and its token, if any, answers creates as a launched
// one does. It returns the instance as stored.
func (p *Provider) Add(inst planner.Instance) planner.Instance {
	p.mu.Lock()
	defer p.mu.Unlock()
	if inst.ID == "" {
		p.seq++
		inst.ID = fmt.Sprintf("%s-added-%d", p.cloud, p.seq)
	}
	if inst.Cloud == "" {
		inst.Cloud = p.cloud
	}
	if inst.State == "" {
		inst.State = planner.StateRunning
	}
	if old, ok := p.instances[inst.ID]; ok && old.Token != "" {
		delete(p.byToken, old.Token)
	}
	stored := inst
	p.instances[inst.ID] = &stored
	if inst.Token != "" {
		p.byToken[inst.Token] = inst.ID
	}
	return inst
}

// SetState changes an instance's state, as a preemption, a failed launch
// or a stop would.
func (p *Provider) SetState(id string, s planner.State) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	inst, ok := p.instances[id]
	if !ok {
		return fmt.Errorf("fake %s: no instance %s", p.cloud, id)
	}
	inst.State = s
	return nil
}

// Remove deletes an instance behind gpufleet's back, as a person in the
// console would: nothing is recorded, and its token is spent.
func (p *Provider) Remove(id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.instances[id]; !ok {
		return false
	}
	p.remove(id)
	return true
}

// Get returns an instance the cloud holds, owned or not.
func (p *Provider) Get(id string) (planner.Instance, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	inst, ok := p.instances[id]
	if !ok {
		return planner.Instance{}, false
	}
	return *inst, true
}

// Instances returns every instance the cloud holds, owned or not, sorted by
// id, without recording a call.
func (p *Provider) Instances() []planner.Instance {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]planner.Instance, 0, len(p.instances))
	for _, id := range slices.Sorted(maps.Keys(p.instances)) {
		out = append(out, *p.instances[id])
	}
	return out
}
