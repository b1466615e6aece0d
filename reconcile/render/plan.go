// SPDX-License-Identifier: Apache-2.0

package render

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// PlanSummary is the one line a reviewer reads first: the nodes the plan
// cannot place, when it cannot place them all, else what it changes.
func PlanSummary(r *planner.Report) string {
	return planHeadline(r)[0]
}

// planHeadline is the lines a plan opens with: the shortfall, if any, then
// the changes and their cost. A plan that changes nothing yet falls short
// says that no change can help, not that all is well.
func planHeadline(r *planner.Report) []string {
	creates, deletes := r.Changes.Counts()
	delta := r.Plan.CostMicros - r.CurrentMicros
	short := reportShortfall(r).line()
	counts := changeCounts(r.Changes)
	line := fmt.Sprintf("Plan: %s — %s/h → %s/h (%s/h)",
		counts, catalog.Money(r.CurrentMicros), catalog.Money(r.Plan.CostMicros), signed(delta))
	switch {
	case creates > 0 || deletes > 0 || len(r.Changes.Refused) > 0 || len(r.Changes.Deferred) > 0:
	case short != "":
		line = fmt.Sprintf("No changes possible — %s/h", catalog.Money(r.Plan.CostMicros))
	default:
		line = fmt.Sprintf("No changes — %s/h", catalog.Money(r.Plan.CostMicros))
	}
	if short == "" {
		return []string{line}
	}
	return []string{short, line}
}

// changeCounts is what a headline counts of the changes: "120 to create,
// 58 to delete, 518 deferred to later runs". Refused and deferred actions
// are counted: the cost the plan reaches is not reached while they wait.
func changeCounts(c planner.Changes) string {
	creates, deletes := c.Counts()
	counts := fmt.Sprintf("%d to create, %d to delete", creates, deletes)
	if n := len(c.Refused); n > 0 {
		counts += fmt.Sprintf(", %d refused", n)
	}
	if d := deferredPhrase(c); d != "" {
		counts += ", " + d
	}
	return counts
}

// signed writes a cost change with its sign, using a true minus sign.
func signed(m int64) string {
	switch {
	case m > 0:
		return "+" + catalog.Money(m)
	case m < 0:
		return "−" + catalog.Money(-m)
	}
	return catalog.Money(0)
}

// PlanText writes a report as the plan command prints it, its changes
// grouped.
func PlanText(w io.Writer, r *planner.Report) error {
	return View{}.PlanText(w, r)
}

// PlanText writes a report as the plan command prints it.
func (v View) PlanText(w io.Writer, r *planner.Report) error {
	var b strings.Builder
	v.writePlanText(&b, r, "")
	_, err := io.WriteString(w, b.String())
	return err
}

// writePlanText writes a report as text, leaving out a headline line that
// is said already.
func (v View) writePlanText(b *strings.Builder, r *planner.Report, said string) {
	p := r.Plan
	for _, line := range planHeadline(r) {
		if line != said {
			fmt.Fprintln(b, line)
		}
	}
	fmt.Fprintf(b, "Prices: %s of %s. %s\n", p.Prices.Source, p.Prices.AsOf.Format("2006-01-02"), optimality(p))
	if line := observedLine(r); line != "" {
		fmt.Fprintln(b, strings.ReplaceAll(line, "`", ""))
	}
	switch {
	case saves(p):
		fmt.Fprintf(b, "Saving against %s: %s/h of %s/h (%s)\n", baselinePlace,
			catalog.Money(p.BaselineMicros-p.CostMicros), catalog.Money(p.BaselineMicros), percent(p.BaselineMicros-p.CostMicros, p.BaselineMicros))
	case p.BaselineMicros > 0:
		fmt.Fprintf(b, "Costs %s %s (%s/h)\n", versusBaseline(p.CostMicros, p.BaselineMicros), baselinePlace, catalog.Money(p.BaselineMicros))
	}
	for _, f := range p.Fleets {
		fmt.Fprintf(b, "\nfleet %s — owner %s, %s/h", f.Name, f.Owner, catalog.Money(f.CostMicros))
		if f.BudgetMicros != nil {
			fmt.Fprintf(b, " of a %s/h budget", catalog.Money(*f.BudgetMicros))
		}
		fmt.Fprintln(b)
		tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  WORKLOAD\tNODES\tCLOUD\tREGION\tZONE\tTYPE\tMARKET\t$/NODE-H\t$/H")
		for _, wl := range f.Workloads {
			label := fmt.Sprintf("%s (%d/%d)", wl.Name, wl.Placed, wl.Desired)
			if len(wl.Placements) == 0 {
				fmt.Fprintf(tw, "  %s\t0\t-\t-\t-\t-\t-\t-\t%s\n", label, catalog.Money(0))
			}
			shown, rest := v.tableRows(wl.Placements)
			for _, pl := range shown {
				o := pl.Offer
				price := catalog.Money(pl.PriceMicros + pl.EgressMicros)
				total := catalog.Money(pl.Cost())
				note := placementNote(pl)
				fmt.Fprintf(tw, "  %s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s%s\n", label, pl.Count, o.Cloud, o.Region, o.Zone, o.InstanceType, o.Market, price, total, note)
				label = ""
			}
			if len(rest) > 0 {
				nodes, cost := 0, int64(0)
				for _, pl := range rest {
					nodes += pl.Count
					cost += pl.Cost()
				}
				fmt.Fprintf(tw, "  \t%d\t…\t\t\t\t\t\t%s  (on %d more offers; --detail lists them)\n", nodes, catalog.Money(cost), len(rest))
			}
		}
		tw.Flush()
		for _, wl := range f.Workloads {
			for _, line := range explanation(wl) {
				fmt.Fprintf(b, "  %s: %s\n", wl.Name, line)
			}
		}
	}
	if lines := quotaLines(p); len(lines) > 0 {
		fmt.Fprintln(b, "\nQuotas:")
		for _, line := range lines {
			fmt.Fprintf(b, "  - %s\n", line)
		}
	}
	v.writeChanges(b, r.Changes)
	if len(p.Warnings) > 0 {
		fmt.Fprintln(b, "\nWarnings:")
		for _, warn := range p.Warnings {
			fmt.Fprintf(b, "  - %s\n", warn)
		}
	}
}

// maxTableRows is how many offers a workload's rows of the text plan show
// without detail: those holding the most nodes, the rest summed in one.
const maxTableRows = 12

// tableRows are the placements a workload's rows show, in offer order,
// and the rest, summed in a row of their own.
func (v View) tableRows(placements []planner.Placement) (shown, rest []planner.Placement) {
	if v.Detail || len(placements) <= maxTableRows {
		return placements, nil
	}
	order := make([]int, len(placements))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return placements[b].Count - placements[a].Count })
	keep := map[int]bool{}
	for _, i := range order[:maxTableRows-1] {
		keep[i] = true
	}
	for i, pl := range placements {
		if keep[i] {
			shown = append(shown, pl)
		} else {
			rest = append(rest, pl)
		}
	}
	return shown, rest
}

func placementNote(pl planner.Placement) string {
	var notes []string
	if pl.Kept > 0 {
		notes = append(notes, fmt.Sprintf("%d running", pl.Kept))
	}
	if pl.Reserved > 0 {
		notes = append(notes, fmt.Sprintf("%d reserved", pl.Reserved))
	}
	if pl.EgressMicros > 0 {
		notes = append(notes, fmt.Sprintf("egress %s/node-h", catalog.Money(pl.EgressMicros)))
	}
	if pl.Unpriced {
		notes = append(notes, "price unknown, kept")
	}
	if note := pl.Note(); note != "" {
		notes = append(notes, note)
	}
	if len(notes) == 0 {
		return ""
	}
	return "  (" + strings.Join(notes, ", ") + ")"
}

// explanation says why a workload is placed as it is.
func explanation(wl planner.WorkloadPlan) []string {
	var lines []string
	if wl.Shortfall != nil {
		lines = append(lines, fmt.Sprintf("%d nodes short (%s): %s", wl.Shortfall.Nodes, wl.Shortfall.Cause, wl.Shortfall.Message))
	}
	if ru := wl.RunnerUp; ru != nil {
		lines = append(lines, fmt.Sprintf("runner-up %s at %s", ru.Offer, ru.Annotate(catalog.Money(ru.PriceMicros+ru.EgressMicros)+"/node-h")))
	}
	if line := gpuCloudLine(wl); line != "" {
		lines = append(lines, line)
	}
	lines = append(lines, bootstrapLines(wl)...)
	if len(wl.Rejected) > 0 {
		var parts []string
		for _, reason := range slices.Sorted(maps.Keys(wl.Rejected)) {
			parts = append(parts, fmt.Sprintf("%d %s", wl.Rejected[reason], reason))
		}
		lines = append(lines, "offers rejected: "+strings.Join(parts, ", "))
	}
	return lines
}

// gpuCloudLine says what a workload's nodes on GPU clouds save against the
// cheapest on-demand offer of a hyperscaler it may use, or cost over it.
func gpuCloudLine(wl planner.WorkloadPlan) string {
	h := wl.Hyperscaler
	if h == nil {
		return ""
	}
	var nodes int
	var cost int64
	var clouds []string
	for _, pl := range wl.Placements {
		if slices.Contains(catalog.Hyperscalers, pl.Offer.Cloud) {
			continue
		}
		nodes += pl.Count
		cost += int64(pl.Count) * (pl.PriceMicros + pl.EgressMicros)
		if !slices.Contains(clouds, pl.Offer.Cloud) {
			clouds = append(clouds, pl.Offer.Cloud)
		}
	}
	against := int64(nodes) * (h.PriceMicros + h.EgressMicros)
	what := "1 node"
	if nodes != 1 {
		what = fmt.Sprintf("%d nodes", nodes)
	}
	return fmt.Sprintf("%s on %s: %s the cheapest hyperscaler on-demand offer it may use, %s at %s", what, strings.Join(clouds, ", "),
		versusBaseline(cost, against), h.Offer, h.Annotate(catalog.Money(h.PriceMicros+h.EgressMicros)+"/node-h"))
}

// bootstrapLines name the file a workload's nodes boot with, by cloud,
// and the nodes of an older one.
func bootstrapLines(wl planner.WorkloadPlan) []string {
	var lines []string
	var order []string
	clouds := map[string][]string{}
	for _, b := range wl.Bootstrap {
		k := b.File + " " + b.Digest
		if clouds[k] == nil {
			order = append(order, k)
		}
		clouds[k] = append(clouds[k], b.Cloud)
	}
	for _, k := range order {
		lines = append(lines, fmt.Sprintf("boots with %s (%s)", k, strings.Join(clouds[k], ", ")))
	}
	switch {
	case wl.Outdated > 0 && wl.KeepOutdated:
		lines = append(lines, fmt.Sprintf("%d nodes run an older bootstrap and stay: the workload is not movable", wl.Outdated))
	case wl.Outdated > 0:
		lines = append(lines, fmt.Sprintf("%d nodes run an older bootstrap and are replaced", wl.Outdated))
	}
	return lines
}

// writeChanges writes the actions grouped, then the refused and the
// deferred ones, grouped too, each under its heading.
func (v View) writeChanges(b *strings.Builder, c planner.Changes) {
	creates, deletes := c.Counts()
	fmt.Fprintf(b, "\nActions: %d to create, %d to delete\n", creates, deletes)
	for _, line := range v.groupLines(c.Actions, "") {
		fmt.Fprintf(b, "  %s\n", line)
	}
	if c.Refusal != "" {
		fmt.Fprintf(b, "Refused: %s\n", c.Refusal)
		for _, line := range v.groupLines(c.Refused, "!") {
			fmt.Fprintf(b, "  %s\n", line)
		}
	}
	if len(c.Deferred) > 0 {
		fmt.Fprintln(b, deferredHeading(c))
		for _, line := range v.groupLines(c.Deferred, "~") {
			fmt.Fprintf(b, "  %s\n", line)
		}
	}
	for _, line := range v.orphanLines(c.Orphans) {
		fmt.Fprintf(b, "  %s\n", line)
	}
}

// fleetDiff is a fleet's changes as the lines of a diff: its actions
// grouped, then the refused and the deferred ones.
func (v View) fleetDiff(c planner.Changes, fleet string) []string {
	of := func(actions []planner.Action) []planner.Action {
		var out []planner.Action
		for _, a := range actions {
			if a.Fleet == fleet {
				out = append(out, a)
			}
		}
		return out
	}
	return slices.Concat(v.groupLines(of(c.Actions), ""), v.groupLines(of(c.Refused), "!"), v.groupLines(of(c.Deferred), "~"))
}

// orphanLines are the orphaned instances, a line per workload and offer.
func (v View) orphanLines(orphans []planner.Instance) []string {
	type key struct {
		fleet, workload string
		offer           planner.OfferKey
	}
	var order []key
	ids := map[key][]string{}
	for _, o := range orphans {
		k := key{o.Fleet, o.Workload, o.OfferKey}
		if ids[k] == nil {
			order = append(order, k)
		}
		ids[k] = append(ids[k], o.ID)
	}
	var lines []string
	for _, k := range order {
		lines = append(lines, fmt.Sprintf("? %d × orphaned %s/%s on %s: fleet removed from the repository; prune is off", len(ids[k]), k.fleet, k.workload, k.offer))
		if v.Detail {
			lines = append(lines, v.nodeLines(ids[k])...)
		}
	}
	return lines
}

// optimality says whether the plan is proven best, and otherwise how far
// from the best bound it may be: in nodes, when a plan might place more,
// and in dollars an hour, to the tenth of a cent or finer where the gap is
// smaller, so that it never reads "within $0.00".
func optimality(p *planner.Plan) string {
	if p.Optimal {
		return "Optimal."
	}
	var gaps []string
	if p.GapNodes > 0 {
		gaps = append(gaps, fmt.Sprintf("a plan might place up to %d more %s", p.GapNodes, plural(int(p.GapNodes), "node", "nodes")))
	}
	switch {
	case p.GapMicros >= 500:
		gaps = append(gaps, fmt.Sprintf("within %s/h of the best bound", catalog.Money(p.GapMicros)))
	case p.GapMicros > 0:
		gaps = append(gaps, fmt.Sprintf("within %s/h of the best bound", catalog.FormatMicros(p.GapMicros)))
	}
	if len(gaps) == 0 {
		return "Not proven optimal: the search stopped before it could prove so, and found no better plan."
	}
	return "Not proven optimal: " + strings.Join(gaps, "; ") + "."
}

// baselineSentence is the Markdown's sentence on the baseline, "" without
// one.
func baselineSentence(p *planner.Plan) string {
	switch {
	case p.BaselineMicros <= 0:
		return ""
	case saves(p):
		return fmt.Sprintf(" Saves %s/h (%s) against %s.", catalog.Money(p.BaselineMicros-p.CostMicros), percent(p.BaselineMicros-p.CostMicros, p.BaselineMicros), baselinePlace)
	}
	return fmt.Sprintf(" Costs %s %s (%s/h).", versusBaseline(p.CostMicros, p.BaselineMicros), baselinePlace, catalog.Money(p.BaselineMicros))
}

// percent is part of whole, rounded; a share that rounds to nothing, of
// something, is "<1%", for "0%" would say there was none.
func percent(part, whole int64) string {
	if whole == 0 {
		return "0%"
	}
	share := 100 * float64(part) / float64(whole)
	if part > 0 && share < 0.5 {
		return "<1%"
	}
	return fmt.Sprintf("%.0f%%", share)
}

// saves reports whether a plan's cost is less than its baseline by a
// saving worth saying: at least a tenth of a cent an hour.
func saves(p *planner.Plan) bool {
	return p.BaselineMicros > 0 && p.BaselineMicros-p.CostMicros >= 500
}

// PlanMarkdown writes a report for a pull-request comment or a Markdown
// file: the summary first, then a collapsible section per fleet, its
// changes grouped.
func PlanMarkdown(w io.Writer, r *planner.Report) error {
	return View{}.PlanMarkdown(w, r)
}

// PlanMarkdown writes a report in Markdown.
func (v View) PlanMarkdown(w io.Writer, r *planner.Report) error {
	v = v.markdown()
	p := r.Plan
	var b strings.Builder
	for _, line := range planHeadline(r) {
		fmt.Fprintf(&b, "**%s**\n\n", line)
	}
	fmt.Fprintf(&b, "Prices: %s of %s. %s", p.Prices.Source, p.Prices.AsOf.Format("2006-01-02"), optimality(p))
	b.WriteString(baselineSentence(p))
	fmt.Fprintln(&b)
	if line := observedLine(r); line != "" {
		fmt.Fprintf(&b, "\n%s\n", line)
	}
	for _, f := range p.Fleets {
		fmt.Fprintf(&b, "\n<details><summary>fleet <b>%s</b> — %s/h", f.Name, catalog.Money(f.CostMicros))
		if f.BudgetMicros != nil {
			fmt.Fprintf(&b, " of %s/h budget", catalog.Money(*f.BudgetMicros))
		}
		fmt.Fprintln(&b, "</summary>")
		fmt.Fprintln(&b)
		writePlacementTable(&b, f)
		fmt.Fprintln(&b)
		for _, wl := range f.Workloads {
			for _, line := range explanation(wl) {
				fmt.Fprintf(&b, "- `%s`: %s\n", wl.Name, line)
			}
		}
		if diff := v.fleetDiff(r.Changes, f.Name); len(diff) > 0 {
			fmt.Fprintln(&b, "\n```diff")
			for _, line := range diff {
				fmt.Fprintln(&b, line)
			}
			fmt.Fprintln(&b, "```")
		}
		fmt.Fprintln(&b, "</details>")
	}
	if lines := quotaLines(p); len(lines) > 0 {
		fmt.Fprintln(&b, "\n**Quotas**")
		for _, line := range lines {
			fmt.Fprintf(&b, "- %s\n", line)
		}
	}
	if r.Changes.Refusal != "" {
		fmt.Fprintf(&b, "\n> [!WARNING]\n> %s\n", r.Changes.Refusal)
	}
	if len(r.Changes.Deferred) > 0 {
		fmt.Fprintf(&b, "\n> [!NOTE]\n> %s\n", deferredHeading(r.Changes))
	}
	if len(p.Warnings) > 0 {
		fmt.Fprintln(&b, "\n**Warnings**")
		for _, warn := range p.Warnings {
			fmt.Fprintf(&b, "- %s\n", warn)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writePlacementTable writes a fleet's placements as a Markdown table, a
// row per offer, the workload named on its first row.
func writePlacementTable(b *strings.Builder, f planner.FleetPlan) {
	b.WriteString("| workload | nodes | cloud | region | zone | type | market | $/node-h | $/h |\n|---|---:|---|---|---|---|---|---:|---:|\n")
	for _, wl := range f.Workloads {
		if len(wl.Placements) == 0 {
			fmt.Fprintf(b, "| %s (0/%d) | 0 | | | | | | | %s |\n", wl.Name, wl.Desired, catalog.Money(0))
		}
		for i, pl := range wl.Placements {
			name := ""
			if i == 0 {
				name = fmt.Sprintf("%s (%d/%d)", wl.Name, wl.Placed, wl.Desired)
			}
			o := pl.Offer
			fmt.Fprintf(b, "| %s | %d | %s | %s | %s | %s | %s | %s | %s |\n", name, pl.Count, o.Cloud, o.Region, o.Zone, o.InstanceType, o.Market,
				pl.Annotate(catalog.Money(pl.PriceMicros+pl.EgressMicros)), catalog.Money(pl.Cost()))
		}
	}
}
