// SPDX-License-Identifier: Apache-2.0

package reconcile

import (
	"maps"
	"slices"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/reconcile/status"
)

// tally keeps what the rounds of a run did, workload by workload, so that
// every output counts nodes, not attempts: a node whose pool ran dry and
// that launched elsewhere a round later is one node created, and a
// failure only when it is still not done as the run ends. The run holds
// r.mu around every call.
type tally struct {
	workloads map[string]*workloadTally
	// round collects the round being applied, folded in by endRound.
	round map[string]*roundTally
}

// workloadTally is one workload's account over the rounds.
type workloadTally struct {
	fleet            string
	created, deleted int
	replaced         int
	// dry are the nodes of the workload's last round not launched because
	// their pool ran out: the next round places them again.
	dry int
	// failing are the nodes of its last round not launched, for any
	// reason.
	failing     int
	failedCalls int
	// deleteFailed says, of each instance a delete was asked for, whether
	// the last ask failed.
	deleteFailed map[string]bool
}

type roundTally struct {
	launched, dry, failing int
}

func newTally() *tally {
	return &tally{workloads: map[string]*workloadTally{}, round: map[string]*roundTally{}}
}

func (t *tally) workload(fleet, workload string) *workloadTally {
	key := fleet + "/" + workload
	w := t.workloads[key]
	if w == nil {
		w = &workloadTally{fleet: fleet, deleteFailed: map[string]bool{}}
		t.workloads[key] = w
	}
	return w
}

func (t *tally) thisRound(fleet, workload string) *roundTally {
	key := fleet + "/" + workload
	r := t.round[key]
	if r == nil {
		r = &roundTally{}
		t.round[key] = r
	}
	return r
}

// launched counts nodes a call launched.
func (t *tally) launched(fleet, workload string, n int) {
	t.workload(fleet, workload).created += n
	t.thisRound(fleet, workload).launched += n
}

// notLaunched counts nodes a round did not launch: dry when their pool
// ran out of capacity or quota, whether or not they were asked for.
func (t *tally) notLaunched(fleet, workload string, n int, dry bool) {
	t.workload(fleet, workload)
	r := t.thisRound(fleet, workload)
	r.failing += n
	if dry {
		r.dry += n
	}
}

// callFailed counts a cloud call that returned an error.
func (t *tally) callFailed(fleet, workload string) {
	t.workload(fleet, workload).failedCalls++
}

// deleted records how a delete went.
func (t *tally) deleted(fleet, workload, instance string, failed bool) {
	w := t.workload(fleet, workload)
	if !failed {
		w.deleted++
	}
	w.deleteFailed[instance] = failed
}

// endRound folds the round in: the nodes that failed on a dry pool last
// round and launched in this one were re-placed.
func (t *tally) endRound() {
	for key, r := range t.round {
		w := t.workloads[key]
		w.replaced += min(w.dry, r.launched)
		w.dry, w.failing = r.dry, r.failing
	}
	t.round = map[string]*roundTally{}
}

// counts are the run's counts, by fleet, against the plan it ended with:
// a node not launched in its last try is failed only while that plan
// still has to create one for its workload, and a delete that failed
// only while the plan still deletes its instance.
func (t *tally) counts(final *planner.Report) map[string]status.RunCounts {
	creates := map[string]int{}
	deletes := map[string]bool{}
	if final != nil {
		for _, a := range final.Changes.Actions {
			if a.Kind == planner.Create {
				creates[a.Fleet+"/"+a.Workload]++
			} else {
				deletes[a.Instance] = true
			}
		}
	}
	out := map[string]status.RunCounts{}
	for _, key := range slices.Sorted(maps.Keys(t.workloads)) {
		w := t.workloads[key]
		failed := w.failing
		if final != nil {
			failed = min(failed, creates[key])
		}
		for instance, f := range w.deleteFailed {
			if f && (final == nil || deletes[instance]) {
				failed++
			}
		}
		out[w.fleet] = out[w.fleet].Add(status.RunCounts{
			Created: w.created, Deleted: w.deleted, Replaced: w.replaced, FailedNodes: failed, FailedCalls: w.failedCalls,
		})
	}
	return out
}
