package render

import (
	"fmt"
	"io"
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
	creates, deletes := r.Head.Changes.Counts()
	line := fmt.Sprintf("Plan: %d to create, %d to delete — %s/h → %s/h (%s/h)",
		creates, deletes, catalog.Money(r.BeforeMicros), catalog.Money(r.AfterMicros), signed(r.DeltaMicros))
	if short := reportShortfall(r.Head).line(); short != "" {
		return []string{short, line}
	}
	return []string{line}
}

// ReviewMarkdown writes the review as a pull-request comment: the summary,
// then a collapsible section per fleet with a diff of its actions.
func ReviewMarkdown(w io.Writer, r *planner.Review) error {
	var b strings.Builder
	headline := reviewHeadline(r)
	fmt.Fprintf(&b, "%s\n### %s\n\n", Marker, headline[0])
	for _, line := range headline[1:] {
		fmt.Fprintf(&b, "**%s**\n\n", line)
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
	if p.BaselineMicros > 0 {
		fmt.Fprintf(&b, " Saves %s/h (%s) against the cheapest single-cloud on-demand placement.",
			catalog.Money(p.BaselineMicros-p.CostMicros), percent(p.BaselineMicros-p.CostMicros, p.BaselineMicros))
	}
	b.WriteString("\n")
	if len(r.Warnings) > 0 {
		b.WriteString("\n> [!WARNING]\n")
		for _, warn := range r.Warnings {
			fmt.Fprintf(&b, "> - %s\n", warn)
		}
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
		var diff []string
		for _, c := range r.Changes {
			if c.Fleet != f.Name {
				continue
			}
			diff = append(diff, fmt.Sprintf("~ %s %s: %d → %d nodes, %s/h → %s/h", c.Workload, c.Kind, c.BeforeNodes, c.AfterNodes, catalog.Money(c.BeforeMicros), catalog.Money(c.AfterMicros)))
			for _, m := range c.Moves {
				sign, n := "+", m.Nodes
				if n < 0 {
					sign, n = "-", -n
				}
				diff = append(diff, fmt.Sprintf("%s   %d %s", sign, n, m.Offer))
			}
		}
		for _, a := range r.Head.Changes.Actions {
			if a.Fleet == f.Name {
				diff = append(diff, actionLine(a))
			}
		}
		for _, a := range r.Head.Changes.Refused {
			if a.Fleet == f.Name {
				diff = append(diff, "! refused: "+strings.TrimLeft(actionLine(a), "+- "))
			}
		}
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

func writeString(w io.Writer, s string) error {
	_, err := io.WriteString(w, s)
	return err
}
