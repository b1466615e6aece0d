// SPDX-License-Identifier: Apache-2.0

package render

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gpufleet/gpufleet/schema/catalog"

	"github.com/gpufleet/gpufleet/reconcile/status"
)

// Specs names the specs a status is of: the Git commit that made them what
// they are, and a digest of them.
type Specs struct {
	Commit, Digest string
	// StalePrices, when set, says the prices the statuses were planned
	// with are stale (catalog.Staleness).
	StalePrices string
}

// STATUS.md stays short however large the fleets: each list in it shows
// at most this many entries, and says how many more the JSON holds.
const (
	maxListed      = 10
	maxWhereOffers = 4
)

// StatusMarkdown renders STATUS.md: what runs where and what it costs, for
// people, with the nodes that cannot be placed and why the last run
// stopped if it did. It is a summary bounded in size — tables per fleet and
// workload, counts of actions, the first few entries of each list — while
// status/<fleet>.json holds every node. It holds no timestamp that changes
// from run to run, so a run that changed nothing leaves it byte for byte
// the same.
func StatusMarkdown(statuses map[string]*status.FleetStatus, stopped []string, specs Specs) []byte {
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
	b.WriteString("Written by gpufleet after each run that changed something")
	if specs.Commit != "" {
		fmt.Fprintf(&b, ", for the specs of commit `%s`", shortCommit(specs.Commit))
	}
	if specs.Digest != "" {
		fmt.Fprintf(&b, " (spec digest `%s`)", specs.Digest)
	}
	b.WriteString(". Every node is in the JSON file of its fleet.\n\n")
	fmt.Fprintf(&b, "**%s/h** for %d fleets", catalog.Money(cost), len(names))
	if baseline > 0 {
		fmt.Fprintf(&b, "; %s %s (%s/h)", versusBaseline(cost, baseline), baselinePlace, catalog.Money(baseline))
	}
	b.WriteString(".\n\n")
	if specs.StalePrices != "" {
		fmt.Fprintf(&b, "> **Stale prices:** %s.\n\n", specs.StalePrices)
	}
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
			for _, bl := range st.Blocklist[:min(len(st.Blocklist), maxListed)] {
				held := ""
				if bl.Capacity > 0 {
					held = fmt.Sprintf(" (no more than the %d nodes it holds)", bl.Capacity)
				}
				fmt.Fprintf(&b, "- `%s` until %s%s: %s\n", bl.Offer, bl.Until.UTC().Format("2006-01-02 15:04 MST"), held, oneLine(bl.Reason))
			}
			more(&b, len(st.Blocklist), n)
		}
		if len(st.LastActions) > 0 {
			b.WriteString("\nLast actions")
			if st.LastRun != nil {
				// The counts are of nodes; the lines below count tries.
				fmt.Fprintf(&b, ": %s", *st.LastRun)
			}
			b.WriteString(":\n")
			lastActions(&b, st.LastActions, n)
		}
		if len(st.Errors) > 0 {
			b.WriteString("\nErrors:\n")
			for _, e := range st.Errors[:min(len(st.Errors), maxListed)] {
				fmt.Fprintf(&b, "- %s\n", oneLine(e))
			}
			more(&b, len(st.Errors), n)
		}
	}
	return []byte(b.String())
}

// lastActions counts the last run's actions by kind, workload and offer,
// and lists the first failures with their errors.
func lastActions(b *strings.Builder, actions []status.ActionResult, fleet string) {
	type group struct {
		kind            string
		workload, offer string
		done, failed    int
	}
	var groups []*group
	index := map[[3]string]*group{}
	var failures []status.ActionResult
	for _, a := range actions {
		k := [3]string{string(a.Kind), a.Workload, a.Offer}
		g := index[k]
		if g == nil {
			g = &group{kind: string(a.Kind), workload: a.Workload, offer: a.Offer}
			index[k] = g
			groups = append(groups, g)
		}
		if a.Error != "" {
			g.failed++
			failures = append(failures, a)
		} else {
			g.done++
		}
	}
	for _, g := range groups[:min(len(groups), maxListed)] {
		result := fmt.Sprintf("%d done", g.done)
		if g.failed > 0 {
			result += fmt.Sprintf(", %d %s failed", g.failed, plural(g.failed, "try", "tries"))
		}
		fmt.Fprintf(b, "- %s %s on `%s`: %s\n", g.kind, g.workload, g.offer, result)
	}
	more(b, len(groups), fleet)
	if len(failures) > 0 {
		b.WriteString("\nFailures:\n")
		for _, a := range failures[:min(len(failures), maxListed)] {
			instance := ""
			if a.Instance != "" {
				instance = " " + a.Instance
			}
			fmt.Fprintf(b, "- %s %s on `%s`%s: %s\n", a.Kind, a.Workload, a.Offer, instance, oneLine(a.Error))
		}
		more(b, len(failures), fleet)
	}
}

// more says how many entries of a list were left out, and where they are.
func more(b *strings.Builder, total int, fleet string) {
	if total > maxListed {
		fmt.Fprintf(b, "- … and %d more in `%s.json`\n", total-maxListed, fleet)
	}
}

// short is a commit hash as people quote it.
func shortCommit(commit string) string { return commit[:min(len(commit), 12)] }

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
	// The offers holding the most nodes first, the rest counted.
	offers := slices.Sorted(maps.Keys(count))
	slices.SortStableFunc(offers, func(a, b string) int { return count[b] - count[a] })
	var parts []string
	for _, offer := range offers[:min(len(offers), maxWhereOffers)] {
		parts = append(parts, fmt.Sprintf("%d × `%s`", count[offer], offer))
	}
	if rest := len(offers) - maxWhereOffers; rest > 0 {
		left := 0
		for _, offer := range offers[maxWhereOffers:] {
			left += count[offer]
		}
		parts = append(parts, fmt.Sprintf("%d more on %d other offers", left, rest))
	}
	return strings.Join(parts, ", ")
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
