// SPDX-License-Identifier: Apache-2.0

package reconcile

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/reconcile/notify"
	"github.com/gpufleet/gpufleet/reconcile/status"
)

// noteDrift compares what the run just listed with the status the last run
// committed, before the run changes anything: what vanished, appeared or
// changed in between was done outside gpufleet. Only fleets with a status
// are compared — a fleet's first run, or one whose status could not be
// read, has nothing to differ from — and foreign instances are not looked
// for, which would cost every run a listing of whole accounts; `gpufleet
// drift` looks for them.
func (r *run) noteDrift() {
	var observed []planner.Instance
	for _, inst := range r.observed {
		if r.previous[inst.Fleet] != nil {
			observed = append(observed, inst)
		}
	}
	var fleets []string
	for _, f := range r.repo.Fleets {
		fleets = append(fleets, f.Name)
	}
	d := CompareDrift(DriftInput{Recorded: r.previous, State: r.state, Observed: observed, Fleets: fleets, At: r.now})
	// A spot node taken back is the cloud doing what spot does, which the
	// run deals with and records itself (its offer blocklisted, a
	// replacement launched): not drift that anyone has to look into.
	d = withoutPreemptions(d)
	r.result.Drift = d
	for _, f := range d.Fleets {
		if f.Total() > 0 {
			r.log.Warn("the clouds differ from the committed status", "fleet", f.Fleet, "drift", f.Summary())
		}
	}
}

// withoutPreemptions is a drift without the missing instances their cloud
// preempted, counted again.
func withoutPreemptions(d *status.Drift) *status.Drift {
	out := *d
	out.Instances = nil
	out.Fleets = slices.Clone(d.Fleets)
	for _, inst := range d.Instances {
		if inst.Kind == status.DriftMissing && inst.Observed != nil && inst.Observed.State == planner.StatePreempted {
			for i := range out.Fleets {
				if out.Fleets[i].Fleet == inst.Fleet {
					out.Fleets[i].Missing--
				}
			}
			continue
		}
		out.Instances = append(out.Instances, inst)
	}
	return &out
}

// withDriftCondition adds the fleet's Drifted condition to its conditions:
// true when the run began on drift, false once a fleet that drifted has
// none, absent for one that never drifted.
func (r *run) withDriftCondition(fleet string, conditions []status.Condition) []status.Condition {
	var drift status.FleetDrift
	if r.result.Drift != nil {
		drift = r.result.Drift.Fleet(fleet)
	}
	switch {
	case drift.Total() > 0:
		return append(conditions, status.Condition{Type: status.Drifted, Status: true, Reason: status.ReasonInstancesDrifted,
			Message: fmt.Sprintf("%s since the last status, as the run began", drift.Summary())})
	case slices.ContainsFunc(conditionsOf(r.previous[fleet]), func(c status.Condition) bool { return c.Type == status.Drifted }):
		return append(conditions, status.Condition{Type: status.Drifted, Status: false, Reason: status.ReasonNoDrift,
			Message: "the clouds matched the last status as the run began"})
	}
	return conditions
}

// notifyDrift tells, where the specs ask for "drifted", of each fleet
// whose Drifted condition the run set anew: once per change of drift, as
// the committed status keeps it, whichever process runs next.
func (r *run) notifyDrift(ctx context.Context) {
	n := r.repo.Config.Notifications
	if n == nil || !slices.Contains(n.On, notify.Drifted) {
		return
	}
	ev := notify.Event{Kind: notify.Drifted, Repository: r.repositoryName(), Revision: cmp.Or(r.specCommit(), r.result.Revision), At: r.now}
	if !r.result.Commit.IsZero() {
		ev.Commit = r.result.Commit.String()
	}
	for _, name := range slices.Sorted(maps.Keys(r.result.Statuses)) {
		now, ok := driftOf(r.result.Statuses[name])
		if !ok || !now.Status {
			continue
		}
		if before, ok := driftOf(r.previous[name]); ok && before.Status && before.Message == now.Message {
			continue
		}
		ev.Reasons = append(ev.Reasons, fmt.Sprintf("fleet %s: %s", name, now.Message))
	}
	if len(ev.Reasons) == 0 {
		return
	}
	if err := r.opts.Notifier.Notify(ctx, n, ev); err != nil {
		r.log.Warn("could not tell of the drift", "err", err)
	}
}

// driftOf is a status's Drifted condition.
func driftOf(st *status.FleetStatus) (status.Condition, bool) {
	for _, c := range conditionsOf(st) {
		if c.Type == status.Drifted {
			return c, true
		}
	}
	return status.Condition{}, false
}
