// SPDX-License-Identifier: Apache-2.0

package reconcile

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/gpufleet/gpufleet/reconcile/status"
)

// Outcome is how a run ended. The command line turns it into an exit code
// and the agent into the result label of its runs metric, so a run that
// left the clouds short of the specs is never counted as a success.
type Outcome string

const (
	// Converged: the run finished and nothing is left to do. Every fleet
	// that is not suspended has what its specs ask for, or nodes on their
	// way up; no call failed.
	Converged Outcome = "converged"
	// NotConverged: the run finished and wrote its status, but the clouds
	// still differ from the specs: creates or deletes failed, nodes could
	// not be placed, deletions were refused, or a removed fleet's nodes run
	// on. Running again may help; the status says what is wrong. A run
	// that rolls a change under a disruption budget ends so too, every run
	// until the last deletion is made: its fleets are not ready
	// (DeletionsDeferred) but progressing (Rolling), and the next run
	// goes on where it stopped.
	NotConverged Outcome = "not-converged"
	// Failed: the run stopped with an error before it could finish.
	Failed Outcome = "failed"
	// Locked: another reconciler held the repository lock; nothing was
	// done.
	Locked Outcome = "locked"
)

// OutcomeOf classifies what Run returned.
func OutcomeOf(res *Result, err error) Outcome {
	var held *HeldError
	switch {
	case errors.As(err, &held):
		return Locked
	case err != nil:
		return Failed
	case res == nil:
		return Failed
	case len(res.NotConverged) > 0:
		return NotConverged
	}
	return Converged
}

// notConverged lists, fleet by fleet, why a finished run left the clouds
// differing from the specs. Suspended fleets are left out: nothing is
// applied to them by request.
func (r *run) notConverged() []string {
	var out []string
	if r.report == nil {
		return nil
	}
	for _, name := range slices.Sorted(maps.Keys(r.result.Statuses)) {
		st := r.result.Statuses[name]
		if r.suspended(name) || !r.selected(name) {
			continue
		}
		if st.Orphaned {
			out = append(out, fmt.Sprintf("%s: removed from the repository, but its instances still run (prune is off)", name))
			continue
		}
		notReady := ""
		for _, c := range st.Conditions {
			switch {
			case c.Type == status.Ready && !c.Status && c.Reason != status.ReasonPending:
				notReady = c.Reason
				out = append(out, fmt.Sprintf("%s: not ready (%s): %s", name, c.Reason, c.Message))
			case c.Type == status.Degraded && c.Status:
				out = append(out, fmt.Sprintf("%s: degraded (%s): %s", name, c.Reason, c.Message))
			case c.Type == status.Stalled && c.Status && c.Reason != notReady:
				// A stalled fleet waits for a person, whatever Ready says;
				// a refusal that made it not ready is told once.
				out = append(out, fmt.Sprintf("%s: stalled (%s): %s", name, c.Reason, c.Message))
			}
		}
	}
	for _, e := range r.errs[""] {
		out = append(out, e)
	}
	return out
}
