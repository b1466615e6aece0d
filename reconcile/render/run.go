package render

import (
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
}

// RunHeader writes what a run prints before it applies: the repository and
// revision, and the plan it is about to carry out.
func RunHeader(w io.Writer, dir, revision string, report *planner.Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Reconciling %s at %.12s\n\n", dir, revision)
	writePlanText(&b, report, "")
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
			writePlanText(&b, report, short)
		}
	}
	if len(r.Applied) > 0 {
		created, deleted, failed := 0, 0, 0
		for _, act := range r.Applied {
			switch {
			case act.Error != "":
				failed++
			case act.Kind == planner.Create:
				created++
			default:
				deleted++
			}
		}
		rounds := "1 round"
		if r.Rounds != 1 {
			rounds = fmt.Sprintf("%d rounds", r.Rounds)
		}
		fmt.Fprintf(&b, "\nApplied in %s: %d created, %d deleted, %d failed\n", rounds, created, deleted, failed)
		for _, act := range r.Applied {
			line := fmt.Sprintf("  %s %s/%s on %s %s", act.Kind, act.Fleet, act.Workload, act.Offer, act.Instance)
			if act.Error != "" {
				line += " — " + act.Error
			}
			fmt.Fprintln(&b, line)
		}
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
