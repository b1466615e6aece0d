// SPDX-License-Identifier: Apache-2.0

package render

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/reconcile/status"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// Run is what one reconcile, apply or demo did, as the command prints it.
type Run struct {
	Dir      string
	Revision string
	Report   *planner.Report
	Applied  []status.ActionResult
	Rounds   int
	Statuses map[string]*status.FleetStatus
	DryRun   bool
	// Commits is whether the command commits the status: apply does not.
	Commits bool
	// Converged and NotConverged say how the run ended, when it finished.
	Converged    bool
	NotConverged []string
	// Commit is the status commit pushed, as "<hash>: <title>"; empty when
	// nothing was committed.
	Commit string
	Took   time.Duration
	// PlanShown says RunHeader printed the plan before the run applied it.
	PlanShown bool
	// Counts sum up what the run did, as the run counted it.
	Counts status.RunCounts
	// Detail lists the nodes of each line, as View.Detail.
	Detail bool
}

// RunHeader writes what a run prints before it applies: the repository and
// revision, and the plan it is about to carry out, grouped.
func RunHeader(w io.Writer, dir, revision string, report *planner.Report) error {
	return View{}.RunHeader(w, dir, revision, report)
}

// RunHeader writes what a run prints before it applies.
func (v View) RunHeader(w io.Writer, dir, revision string, report *planner.Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Reconciling %s at %.12s\n\n", dir, revision)
	v.writePlanText(&b, report, "")
	_, err := io.WriteString(w, b.String())
	return err
}

// RunText writes what a run did: the nodes it could not place, if any,
// its plan, the calls it made, each fleet's state and cost now, the
// commit, and why it did not converge.
func RunText(w io.Writer, r Run) error {
	var b strings.Builder
	var report *planner.Report
	if r.Report != nil {
		report = withStatuses(r.Report, r.Statuses)
	}
	// The statuses are of the plan the run ended with, which may have
	// re-planned around capacity errors since the plan it printed.
	var short string
	switch {
	case len(r.Statuses) > 0:
		short = statusShortfall(r.Statuses).line()
	case report != nil:
		short = reportShortfall(report).line()
	}
	if short != "" {
		fmt.Fprintln(&b, short)
	}
	if !r.PlanShown {
		fmt.Fprintf(&b, "Reconciling %s at %.12s\n\n", r.Dir, r.Revision)
		if report != nil {
			View{Detail: r.Detail}.writePlanText(&b, report, short)
		}
	}
	if len(r.Applied) > 0 {
		rounds := "1 round"
		if r.Rounds != 1 {
			rounds = fmt.Sprintf("%d rounds", r.Rounds)
		}
		fmt.Fprintf(&b, "\nApplied in %s: %s\n", rounds, r.Counts)
		writeApplied(&b, r.Applied, r.Counts, r.Detail)
	} else if !r.DryRun && r.Converged {
		fmt.Fprintln(&b, "\nNothing to apply: the clouds match the specs.")
	}
	if len(r.Statuses) > 0 {
		fmt.Fprintln(&b, "\nStatus:")
		for _, name := range slices.Sorted(maps.Keys(r.Statuses)) {
			st := r.Statuses[name]
			ready := "not ready"
			for _, cond := range st.Conditions {
				if cond.Type == status.Ready && cond.Status {
					ready = "ready"
				} else if cond.Type == status.Ready {
					ready = "not ready (" + cond.Reason + ")"
				}
			}
			running, desired := 0, 0
			for _, wl := range st.Workloads {
				running += wl.Running + wl.Pending
				desired += wl.Desired
			}
			fmt.Fprintf(&b, "  %-12s %s, %d/%d nodes, %s/h\n", name, ready, running, desired, catalog.Money(st.CostMicros))
		}
	}
	switch {
	case r.DryRun:
		fmt.Fprintln(&b, "\nDry run: no cloud was changed and nothing was committed.")
	case r.Commit != "":
		fmt.Fprintf(&b, "\nCommitted %s\n", r.Commit)
	case r.Commits:
		fmt.Fprintln(&b, "\nStatus unchanged: nothing committed.")
	}
	if len(r.NotConverged) > 0 && !r.DryRun {
		fmt.Fprintln(&b, "\nNot converged: the clouds still differ from the specs.")
		for _, why := range r.NotConverged {
			fmt.Fprintf(&b, "  %s\n", why)
		}
	}
	fmt.Fprintf(&b, "Took %s.\n", r.Took.Round(time.Millisecond))
	_, err := io.WriteString(w, b.String())
	return err
}

// maxFailureLines bounds the lines of failed tries a run prints without
// --detail: their errors may differ call by call, and -o json has each.
const maxFailureLines = 10

// AppliedText is what a run did, grouped as its summary prints it, for a
// commit message.
func AppliedText(applied []status.ActionResult, counts status.RunCounts) string {
	var b strings.Builder
	writeApplied(&b, applied, counts, false)
	return b.String()
}

// writeApplied writes what a run did, a line per kind, workload and offer,
// then its tries that failed, a line per error. A try that failed is not a
// failed node: one whose pool ran out is placed again in the next round.
// When no node failed, as counts say, the tries that failed are one line,
// unless detail.
func writeApplied(b *strings.Builder, applied []status.ActionResult, counts status.RunCounts, detail bool) {
	type key struct {
		kind                   planner.ActionKind
		fleet, workload, offer string
		err                    string
	}
	var done, failed []key
	nodes := map[key][]string{}
	for _, a := range applied {
		k := key{a.Kind, a.Fleet, a.Workload, a.Offer, a.Error}
		if _, seen := nodes[k]; !seen {
			if a.Error == "" {
				done = append(done, k)
			} else {
				failed = append(failed, k)
			}
		}
		nodes[k] = append(nodes[k], a.Instance)
	}
	// Calls finish in any order, and so do their errors; the lines
	// should not.
	byKey := func(a, b key) int {
		return cmp.Or(cmp.Compare(a.kind, b.kind), cmp.Compare(a.fleet, b.fleet), cmp.Compare(a.workload, b.workload), cmp.Compare(a.offer, b.offer), cmp.Compare(a.err, b.err))
	}
	slices.SortFunc(done, byKey)
	slices.SortFunc(failed, byKey)
	v := View{Detail: detail}
	list := func(k key) {
		if detail {
			var ids []string
			for _, id := range nodes[k] {
				if id != "" {
					ids = append(ids, id)
				}
			}
			for _, line := range v.nodeLines(ids) {
				fmt.Fprintf(b, "  %s\n", line)
			}
		}
	}
	// Without detail, a workload's lines of one kind beyond the first few
	// fold into one, as a plan's do.
	type workloadKey struct {
		kind            planner.ActionKind
		fleet, workload string
	}
	lines := map[workloadKey]int{}
	for _, k := range done {
		lines[workloadKey{k.kind, k.fleet, k.workload}]++
	}
	shown := map[workloadKey]int{}
	for i, k := range done {
		verb := "created"
		if k.kind == planner.Delete {
			verb = "deleted"
		}
		wk := workloadKey{k.kind, k.fleet, k.workload}
		if !detail && lines[wk] > maxGroupsPerCause && shown[wk] == maxGroupsPerCause-1 {
			n, offers := 0, 0
			for _, rest := range done[i:] {
				if (workloadKey{rest.kind, rest.fleet, rest.workload}) == wk {
					n += len(nodes[rest])
					offers++
				}
			}
			fmt.Fprintf(b, "  %s %d × %s/%s on %d more offers %s (--detail lists them)\n", sign(k.kind), n, k.fleet, k.workload, offers, verb)
		}
		shown[wk]++
		if !detail && lines[wk] > maxGroupsPerCause && shown[wk] >= maxGroupsPerCause {
			continue
		}
		fmt.Fprintf(b, "  %s %d × %s/%s on %s %s\n", sign(k.kind), len(nodes[k]), k.fleet, k.workload, k.offer, verb)
		list(k)
	}
	if len(failed) == 0 {
		return
	}
	tries := 0
	offers := map[string]bool{}
	for _, k := range failed {
		tries += len(nodes[k])
		offers[k.offer] = true
	}
	if counts.FailedNodes == 0 && !detail {
		fmt.Fprintf(b, "%d %s on %d %s failed; the run planned their nodes again (--detail lists them)\n",
			tries, plural(tries, "try", "tries"), len(offers), plural(len(offers), "offer", "offers"))
		return
	}
	fmt.Fprintf(b, "Tries that failed: %d\n", tries)
	for i, k := range failed {
		if !detail && i == maxFailureLines {
			fmt.Fprintf(b, "  … and %d more lines (--detail or -o json lists every one)\n", len(failed)-i)
			break
		}
		fmt.Fprintf(b, "  ! %d × %s %s/%s on %s: %s\n", len(nodes[k]), k.kind, k.fleet, k.workload, k.offer, oneLine(k.err))
		list(k)
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
