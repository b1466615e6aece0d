// SPDX-License-Identifier: Apache-2.0

package render

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// Marker starts every plan comment, so the commenter finds its own.
const Marker = "<!-- gpufleet-plan -->"

// ReviewSummary is the first line a reviewer reads: the nodes the head
// cannot place, when it cannot place them all, else what merging changes.
func ReviewSummary(r *planner.Review) string {
	return reviewHeadline(r)[0]
}

// reviewHeadline is the lines a review opens with: the head's shortfall,
// if any, then the changes and their cost.
func reviewHeadline(r *planner.Review) []string {
	if r.Head == nil {
		if len(r.HeadErrors) == 1 {
			return []string{"Plan failed: the specs have an error"}
		}
		return []string{fmt.Sprintf("Plan failed: the specs have %d errors", len(r.HeadErrors))}
	}
	line := fmt.Sprintf("Plan: %s — %s/h → %s/h (%s/h)",
		changeCounts(r.Head.Changes), catalog.Money(r.BeforeMicros), catalog.Money(r.AfterMicros), signed(r.DeltaMicros))
	if short := reportShortfall(r.Head).line(); short != "" {
		return []string{short, line}
	}
	return []string{line}
}

// ReviewMarkdown writes the review as a pull-request comment: the summary,
// then a collapsible section per fleet with a diff of its actions,
// grouped.
func ReviewMarkdown(w io.Writer, r *planner.Review) error {
	return View{}.ReviewMarkdown(w, r)
}

// ReviewMarkdown writes the review as a pull-request comment; with
// Detail, each group lists a bounded number of its nodes.
func (v View) ReviewMarkdown(w io.Writer, r *planner.Review) error {
	v = v.markdown()
	var b strings.Builder
	headline := reviewHeadline(r)
	fmt.Fprintf(&b, "%s\n### %s\n\n", Marker, headline[0])
	for _, line := range headline[1:] {
		fmt.Fprintf(&b, "**%s**\n\n", line)
	}
	if c := commitsLine(r); c != "" {
		fmt.Fprintf(&b, "%s\n\n", c)
	}
	if len(r.HeadErrors) > 0 {
		b.WriteString("The specs of this pull request do not load:\n\n```\n")
		for _, e := range r.HeadErrors {
			b.WriteString(e + "\n")
		}
		b.WriteString("```\n")
		return writeString(w, b.String())
	}
	p := r.Head.Plan
	fmt.Fprintf(&b, "Prices: %s of %s. %s", p.Prices.Source, p.Prices.AsOf.Format("2006-01-02"), optimality(p))
	b.WriteString(baselineSentence(p))
	b.WriteString("\n")
	if line := observedLine(r.Head); line != "" {
		fmt.Fprintf(&b, "\n%s\n", line)
	}
	if len(r.Warnings) > 0 {
		b.WriteString("\n> [!WARNING]\n")
		for _, warn := range r.Warnings {
			fmt.Fprintf(&b, "> - %s\n", warn)
		}
	}
	if c := r.Head.Changes; c.Refusal != "" {
		fmt.Fprintf(&b, "\n> [!WARNING]\n> Refused: %s\n", c.Refusal)
	}
	if c := r.Head.Changes; len(c.Deferred) > 0 {
		fmt.Fprintf(&b, "\n> [!NOTE]\n> %s\n", deferredHeading(c))
	}
	baseCost := map[string]int64{}
	if r.Base != nil {
		for _, f := range r.Base.Fleets {
			baseCost[f.Name] = f.CostMicros
		}
	}
	for _, f := range p.Fleets {
		fmt.Fprintf(&b, "\n<details><summary>fleet <b>%s</b>: %s/h → %s/h (%s/h)</summary>\n\n",
			f.Name, catalog.Money(baseCost[f.Name]), catalog.Money(f.CostMicros), signed(f.CostMicros-baseCost[f.Name]))
		writePlacementTable(&b, f)
		diff := v.reviewDiff(r, f.Name)
		if len(diff) > 0 {
			b.WriteString("\n```diff\n")
			for _, line := range diff {
				b.WriteString(line + "\n")
			}
			b.WriteString("```\n")
		}
		var notes []string
		for _, wl := range f.Workloads {
			for _, line := range explanation(wl) {
				notes = append(notes, fmt.Sprintf("- `%s`: %s", wl.Name, line))
			}
		}
		if len(notes) > 0 {
			b.WriteString("\n" + strings.Join(notes, "\n") + "\n")
		}
		b.WriteString("\n</details>\n")
	}
	for _, c := range r.Changes {
		if c.Kind == planner.ChangeRemoved && p.Fleet(c.Fleet) == nil {
			fmt.Fprintf(&b, "\nfleet **%s** is removed: workload `%s` (%d nodes, %s/h)\n", c.Fleet, c.Workload, c.BeforeNodes, catalog.Money(c.BeforeMicros))
		}
	}
	return writeString(w, b.String())
}

// reviewDiff is a fleet's lines of the review's diff: each changed
// workload, then the actions grouped, the refused and the deferred ones.
// A workload's moves between the plans are listed only where no action
// says them, for the actions say what changes in the clouds, and why.
func (v View) reviewDiff(r *planner.Review, fleet string) []string {
	acted := map[string]bool{}
	if r.Head != nil {
		c := r.Head.Changes
		for _, a := range slices.Concat(c.Actions, c.Refused, c.Deferred) {
			acted[a.Fleet+"/"+a.Workload] = true
		}
	}
	var diff []string
	for _, c := range r.Changes {
		if c.Fleet != fleet {
			continue
		}
		diff = append(diff, fmt.Sprintf("~ %s %s: %d → %d nodes, %s/h → %s/h", c.Workload, c.Kind, c.BeforeNodes, c.AfterNodes, catalog.Money(c.BeforeMicros), catalog.Money(c.AfterMicros)))
		if acted[c.Fleet+"/"+c.Workload] {
			continue
		}
		for _, m := range c.Moves {
			sign, n := "+", m.Nodes
			if n < 0 {
				sign, n = "-", -n
			}
			diff = append(diff, fmt.Sprintf("%s   %d %s", sign, n, m.Offer))
		}
	}
	if r.Head == nil {
		return diff
	}
	return append(diff, v.fleetDiff(r.Head.Changes, fleet)...)
}

// commitsLine names the commits a review compares.
func commitsLine(r *planner.Review) string {
	if r.BaseCommit == "" && r.HeadCommit == "" {
		return ""
	}
	return fmt.Sprintf("Base `%s` → head `%s`.", cmp.Or(shortCommit(r.BaseCommit), "?"), cmp.Or(shortCommit(r.HeadCommit), "?"))
}

// ReviewText writes the review for a terminal: the headline, the commits,
// the warnings, and each fleet's diff, without Markdown.
func ReviewText(w io.Writer, r *planner.Review) error {
	return View{}.ReviewText(w, r)
}

// ReviewText writes the review for a terminal.
func (v View) ReviewText(w io.Writer, r *planner.Review) error {
	var b strings.Builder
	for _, line := range reviewHeadline(r) {
		b.WriteString(line + "\n")
	}
	if c := commitsLine(r); c != "" {
		b.WriteString(strings.ReplaceAll(c, "`", "") + "\n")
	}
	for _, e := range r.HeadErrors {
		b.WriteString("  " + e + "\n")
	}
	if r.Head != nil {
		if line := observedLine(r.Head); line != "" {
			b.WriteString(strings.ReplaceAll(line, "`", "") + "\n")
		}
	}
	for _, warn := range r.Warnings {
		b.WriteString("Warning: " + warn + "\n")
	}
	if r.Head != nil && r.Head.Changes.Refusal != "" {
		b.WriteString("Refused: " + r.Head.Changes.Refusal + "\n")
	}
	if r.Head != nil && len(r.Head.Changes.Deferred) > 0 {
		b.WriteString(deferredHeading(r.Head.Changes) + "\n")
	}
	fleets := map[string]bool{}
	var names []string
	for _, c := range r.Changes {
		if !fleets[c.Fleet] {
			fleets[c.Fleet] = true
			names = append(names, c.Fleet)
		}
	}
	if r.Head != nil {
		for _, a := range slices.Concat(r.Head.Changes.Actions, r.Head.Changes.Refused, r.Head.Changes.Deferred) {
			if !fleets[a.Fleet] {
				fleets[a.Fleet] = true
				names = append(names, a.Fleet)
			}
		}
	}
	slices.Sort(names)
	for _, name := range names {
		fmt.Fprintf(&b, "\nfleet %s\n", name)
		for _, line := range v.reviewDiff(r, name) {
			b.WriteString("  " + line + "\n")
		}
	}
	return writeString(w, b.String())
}

func writeString(w io.Writer, s string) error {
	_, err := io.WriteString(w, s)
	return err
}
