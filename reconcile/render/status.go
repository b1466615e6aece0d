package render

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gpufleet/gpufleet/schema/catalog"

	"github.com/gpufleet/gpufleet/reconcile/status"
)

// StatusMarkdown renders STATUS.md: what runs where and what it costs, for
// people, with the nodes that cannot be placed and why the last run
// stopped if it did. It holds no timestamp that changes from run to run,
// so a run that changed nothing leaves it byte for byte the same.
func StatusMarkdown(statuses map[string]*status.FleetStatus, stopped []string, specRevision string) []byte {
	var b strings.Builder
	names := slices.Sorted(maps.Keys(statuses))
	var cost, baseline int64
	for _, n := range names {
		cost += statuses[n].CostMicros
		baseline += statuses[n].BaselineMicros
	}
	// A shortfall is in the title, where whoever opens the file reads it
	// first.
	if short := statusShortfall(statuses).phrase(); short != "" {
		fmt.Fprintf(&b, "# gpufleet status: %s\n\n", short)
	} else {
		b.WriteString("# gpufleet status\n\n")
	}
	fmt.Fprintf(&b, "Written by gpufleet after each run that changed something. Specs at revision `%s`.\n\n", specRevision)
	fmt.Fprintf(&b, "**%s/h** for %d fleets", catalog.Money(cost), len(names))
	if baseline > 0 {
		fmt.Fprintf(&b, "; %s/h less than the cheapest single-cloud on-demand placement (%s/h)", catalog.Money(baseline-cost), catalog.Money(baseline))
	}
	b.WriteString(".\n\n")
	for _, e := range stopped {
		fmt.Fprintf(&b, "> **The last run stopped:** %s\n\n", oneLine(e))
	}
	if len(names) > 0 {
		b.WriteString("| fleet | ready | nodes running / desired | $/h |\n|---|---|---:|---:|\n")
		for _, n := range names {
			st := statuses[n]
			running, desired := 0, 0
			for _, w := range st.Workloads {
				running += w.Running
				desired += w.Desired
			}
			fmt.Fprintf(&b, "| %s | %s | %d / %d | %s |\n", n, readiness(st), running, desired, catalog.Money(st.CostMicros))
		}
	}
	for _, n := range names {
		st := statuses[n]
		fmt.Fprintf(&b, "\n## %s\n\n", n)
		if st.Orphaned {
			b.WriteString("Removed from the repository; its instances run on because `prune` is off.\n\n")
		}
		for _, c := range st.Conditions {
			mark := "no"
			if c.Status {
				mark = "yes"
			}
			fmt.Fprintf(&b, "- %s: %s (%s)", c.Type, mark, c.Reason)
			if c.Message != "" {
				fmt.Fprintf(&b, " — %s", oneLine(c.Message))
			}
			b.WriteString("\n")
		}
		b.WriteString("\n| workload | desired | running | pending | where |\n|---|---:|---:|---:|---|\n")
		for _, w := range st.Workloads {
			fmt.Fprintf(&b, "| %s | %d | %d | %d | %s |\n", w.Name, w.Desired, w.Running, w.Pending, where(w))
		}
		for _, w := range st.Workloads {
			if w.Shortfall != nil {
				fmt.Fprintf(&b, "\n%s is %d nodes short (%s): %s\n", w.Name, w.Shortfall.Nodes, w.Shortfall.Cause, w.Shortfall.Message)
			}
			if w.Failed+w.Stopped > 0 {
				fmt.Fprintf(&b, "\n%s has %d failed and %d stopped instances that do no work but still hold quota or bill for disks; the next run deletes them.\n", w.Name, w.Failed, w.Stopped)
			}
		}
		if len(st.Blocklist) > 0 {
			b.WriteString("\nBlocklisted offers:\n")
			for _, bl := range st.Blocklist {
				held := ""
				if bl.Capacity > 0 {
					held = fmt.Sprintf(" (no more than the %d nodes it holds)", bl.Capacity)
				}
				fmt.Fprintf(&b, "- `%s` until %s%s: %s\n", bl.Offer, bl.Until.UTC().Format("2006-01-02 15:04 MST"), held, bl.Reason)
			}
		}
		if len(st.LastActions) > 0 {
			b.WriteString("\nLast actions:\n")
			for _, a := range st.LastActions {
				result := "done"
				if a.Error != "" {
					result = "failed: " + oneLine(a.Error)
				}
				fmt.Fprintf(&b, "- %s %s on `%s` %s — %s\n", a.Kind, a.Workload, a.Offer, a.Instance, result)
			}
		}
		if len(st.Errors) > 0 {
			b.WriteString("\nErrors:\n")
			for _, e := range st.Errors {
				fmt.Fprintf(&b, "- %s\n", oneLine(e))
			}
		}
	}
	return []byte(b.String())
}

func readiness(st *status.FleetStatus) string {
	for _, c := range st.Conditions {
		if c.Type == status.Ready {
			if c.Status {
				return "yes"
			}
			return "no: " + c.Reason
		}
	}
	return "unknown"
}

// where lists a workload's nodes by offer, from what was observed.
func where(w status.WorkloadStatus) string {
	count := map[string]int{}
	for _, inst := range w.Instances {
		if inst.State.Live() {
			count[inst.Offer]++
		}
	}
	if len(count) == 0 {
		return "—"
	}
	var parts []string
	for _, offer := range slices.Sorted(maps.Keys(count)) {
		parts = append(parts, fmt.Sprintf("%d × `%s`", count[offer], offer))
	}
	return strings.Join(parts, ", ")
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
