// SPDX-License-Identifier: Apache-2.0

package reconcile

import (
	"fmt"
	"maps"
	"slices"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/reconcile/status"
)

// suspended reports whether the specs suspend a fleet.
func (r *run) suspended(fleet string) bool {
	if r.repo == nil {
		return false
	}
	f, ok := r.repo.Fleet(fleet)
	return ok && f.Suspended
}

// applicable drops the actions of suspended fleets, and of fleets the run
// was not asked to apply (Options.Fleets), from what is applied. The
// report keeps them, so whoever suspended a fleet can read what resuming
// it would do.
func (r *run) applicable(actions []planner.Action) []planner.Action {
	var out []planner.Action
	held, skipped := map[string]int{}, map[string]int{}
	for _, a := range actions {
		switch {
		case r.suspended(a.Fleet):
			held[a.Fleet]++
		case !r.selected(a.Fleet):
			skipped[a.Fleet]++
		default:
			out = append(out, a)
		}
	}
	// Once a run is enough: later rounds only re-plan around capacity
	// errors, and hold back the same actions.
	if r.result.Rounds == 0 {
		for _, fleet := range slices.Sorted(maps.Keys(held)) {
			r.log.Info("fleet suspended; its actions are not applied", "fleet", fleet, "actions", held[fleet])
		}
		for _, fleet := range slices.Sorted(maps.Keys(skipped)) {
			r.log.Info("fleet not selected (--fleet); its actions are not applied", "fleet", fleet, "actions", skipped[fleet])
		}
	}
	return out
}

// selected reports whether a run applies a fleet's actions.
func (r *run) selected(fleet string) bool {
	return len(r.opts.Fleets) == 0 || slices.Contains(r.opts.Fleets, fleet)
}

// suspendedConditions are the conditions of a suspended fleet: not ready
// and not progressing because gpufleet is told to keep its hands off,
// whatever else holds; Degraded and Stalled still say what is wrong.
func suspendedConditions(held int, degraded, stalled status.Condition) []status.Condition {
	msg := "the spec sets suspended: true; nothing is applied"
	if held > 0 {
		msg = fmt.Sprintf("the spec sets suspended: true; %d actions are held back", held)
	}
	return []status.Condition{
		{Type: status.Ready, Status: false, Reason: status.Suspended, Message: msg},
		{Type: status.Progressing, Status: false, Reason: status.Suspended, Message: msg},
		degraded,
		stalled,
		{Type: status.Suspended, Status: true, Reason: status.Suspended, Message: msg},
	}
}
