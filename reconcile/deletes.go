// SPDX-License-Identifier: Apache-2.0

package reconcile

import (
	"time"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/reconcile/status"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// deleteMemory is how long a run remembers a delete it asked for while the
// instance is still listed: far longer than any cloud takes to delete a
// VM, short enough that one whose delete never took effect is looked at
// afresh within hours.
const deleteMemory = 6 * time.Hour

// noteDelete remembers a delete before it is asked for: a call cut short
// may still have reached the cloud. Only a spot instance can be taken for
// preempted, so only spot deletes are remembered, and not the clean-up of
// one preempted already, which the preemptions seen account for. The
// caller holds r.mu.
func (r *run) noteDelete(inst planner.Instance) {
	if inst.Market == catalog.Spot && inst.State != planner.StatePreempted {
		r.state.NoteDelete(inst.Cloud, inst.ID, inst.Token, r.now.Add(deleteMemory))
	}
}

// ownDeletes reads the instances gpufleet asked to delete, this run or an
// earlier one, for what they are: on their way out by its hand. A cloud
// that does not say who ends a VM shows them as preempted or stopped
// (Azure shows a Spot VM being deleted as it shows one it evicted); read
// so, they would blocklist a healthy pool, or be deleted again.
//
// What needs remembering no longer is forgotten: the deletes of instances
// no longer listed, and of those the cloud itself shows as ended by
// someone (EC2 says who shut an instance down). justAsked says the run
// looks again right after its own deletes, when a cloud may still list as
// running what it was just asked to delete; otherwise an instance that
// runs, its delete lost, is forgotten too, and planned like any other.
func (r *run) ownDeletes(observed []planner.Instance, justAsked bool) {
	type key struct{ cloud, id, token string }
	keep := map[key]bool{}
	for i := range observed {
		inst := &observed[i]
		k := key{inst.Cloud, inst.ID, inst.Token}
		if !r.state.DeletedByUs(k.cloud, k.id, k.token) {
			continue
		}
		switch inst.State {
		case planner.StatePending, planner.StateRunning:
			keep[k] = justAsked
		case planner.StatePreempted, planner.StateStopping:
			inst.State = planner.StateTerminated
			keep[k] = true
		case planner.StateFailed:
			// Still there, and deleted again as a leftover.
			keep[k] = true
		}
	}
	r.state.KeepDeletes(func(d status.DeleteIssued) bool { return keep[key{d.Cloud, d.ID, d.Token}] })
}
