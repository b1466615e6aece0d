package planner

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// Review compares the plan of a pull request's head with the plan of its
// base: what merging would change, in actions and in dollars per hour.
type Review struct {
	// Head is the head's plan and the actions it takes from what runs;
	// nil when the head's specs do not load.
	Head *Report `json:"head,omitempty"`
	// Base is the base's plan; nil when the base's specs do not load.
	Base *Plan `json:"base,omitempty"`
	// HeadErrors and BaseErrors are spec errors, as file:line:column:
	// path: message.
	HeadErrors []string `json:"headErrors,omitempty"`
	BaseErrors []string `json:"baseErrors,omitempty"`
	// Changes per workload between base and head.
	Changes []WorkloadChange `json:"changes"`
	// BeforeMicros and AfterMicros are $/h of the base and the head.
	BeforeMicros int64    `json:"beforeMicros"`
	AfterMicros  int64    `json:"afterMicros"`
	DeltaMicros  int64    `json:"deltaMicros"`
	Warnings     []string `json:"warnings,omitempty"`
}

// WorkloadChange is how one workload's placement differs between base and
// head.
type WorkloadChange struct {
	Fleet    string `json:"fleet"`
	Workload string `json:"workload"`
	// Kind is added, removed or changed.
	Kind         string `json:"kind"`
	BeforeNodes  int    `json:"beforeNodes"`
	AfterNodes   int    `json:"afterNodes"`
	BeforeMicros int64  `json:"beforeMicros"`
	AfterMicros  int64  `json:"afterMicros"`
	// Moves lists placement counts that differ, per offer: "+2 gcp/…".
	Moves []string `json:"moves,omitempty"`
}

// NewReview compares a head report with a base plan.
func NewReview(head *Report, base *Plan, headErrors, baseErrors []string) *Review {
	r := &Review{Head: head, Base: base, HeadErrors: headErrors, BaseErrors: baseErrors, Changes: []WorkloadChange{}}
	if base != nil {
		r.BeforeMicros = base.CostMicros
	} else if head != nil {
		r.BeforeMicros = head.CurrentMicros
	}
	if head != nil {
		r.AfterMicros = head.Plan.CostMicros
		r.Warnings = append(r.Warnings, head.Plan.Warnings...)
		if head.Changes.Refusal != "" {
			r.Warnings = append(r.Warnings, head.Changes.Refusal)
		}
	} else {
		r.AfterMicros = r.BeforeMicros
	}
	r.DeltaMicros = r.AfterMicros - r.BeforeMicros
	if len(baseErrors) > 0 {
		r.Warnings = append(r.Warnings, fmt.Sprintf("the base's specs do not load (%d errors): costs compare with what runs now", len(baseErrors)))
	}
	r.Changes = compareWorkloads(base, head)
	return r
}

func compareWorkloads(base *Plan, head *Report) []WorkloadChange {
	type key struct{ fleet, workload string }
	before, after := map[key]WorkloadPlan{}, map[key]WorkloadPlan{}
	if base != nil {
		for _, f := range base.Fleets {
			for _, w := range f.Workloads {
				before[key{f.Name, w.Name}] = w
			}
		}
	}
	if head != nil {
		for _, f := range head.Plan.Fleets {
			for _, w := range f.Workloads {
				after[key{f.Name, w.Name}] = w
			}
		}
	}
	keys := slices.Collect(maps.Keys(before))
	for k := range after {
		if _, ok := before[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b key) int { return cmp.Or(cmp.Compare(a.fleet, b.fleet), cmp.Compare(a.workload, b.workload)) })
	var out []WorkloadChange
	for _, k := range keys {
		b, inBase := before[k]
		a, inHead := after[k]
		c := WorkloadChange{Fleet: k.fleet, Workload: k.workload, BeforeNodes: b.Placed, AfterNodes: a.Placed, BeforeMicros: b.CostMicros, AfterMicros: a.CostMicros}
		switch {
		case !inBase:
			c.Kind = "added"
		case !inHead:
			c.Kind = "removed"
		default:
			c.Kind = "changed"
		}
		counts := map[OfferKey]int{}
		for _, p := range b.Placements {
			counts[p.Offer] -= p.Count
		}
		for _, p := range a.Placements {
			counts[p.Offer] += p.Count
		}
		for _, o := range slices.SortedFunc(maps.Keys(counts), OfferKey.Compare) {
			if n := counts[o]; n != 0 {
				c.Moves = append(c.Moves, fmt.Sprintf("%+d %s", n, o))
			}
		}
		if c.Kind == "changed" && len(c.Moves) == 0 && c.BeforeMicros == c.AfterMicros {
			continue
		}
		out = append(out, c)
	}
	if out == nil {
		out = []WorkloadChange{}
	}
	return out
}

// Marker starts every plan comment, so the commenter finds its own.
const Marker = "<!-- gpufleet-plan -->"

// Summary is the first line a reviewer reads.
func (r *Review) Summary() string {
	if r.Head == nil {
		if len(r.HeadErrors) == 1 {
			return "Plan failed: the specs have an error"
		}
		return fmt.Sprintf("Plan failed: the specs have %d errors", len(r.HeadErrors))
	}
	creates, deletes := r.Head.Changes.Counts()
	return fmt.Sprintf("Plan: %d to create, %d to delete — %s/h → %s/h (%s/h)",
		creates, deletes, money(r.BeforeMicros), money(r.AfterMicros), signed(r.DeltaMicros))
}

// WriteMarkdown writes the review as a pull-request comment: the summary,
// then a collapsible section per fleet with a diff of its actions.
func (r *Review) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n### %s\n\n", Marker, r.Summary())
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
			money(p.BaselineMicros-p.CostMicros), percent(p.BaselineMicros-p.CostMicros, p.BaselineMicros))
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
			f.Name, money(baseCost[f.Name]), money(f.CostMicros), signed(f.CostMicros-baseCost[f.Name]))
		writePlacementTable(&b, f)
		var diff []string
		for _, c := range r.Changes {
			if c.Fleet != f.Name {
				continue
			}
			diff = append(diff, fmt.Sprintf("~ %s %s: %d → %d nodes, %s/h → %s/h", c.Workload, c.Kind, c.BeforeNodes, c.AfterNodes, money(c.BeforeMicros), money(c.AfterMicros)))
			for _, m := range c.Moves {
				sign := "+"
				if strings.HasPrefix(m, "-") {
					sign = "-"
				}
				diff = append(diff, fmt.Sprintf("%s   %s", sign, strings.TrimLeft(m, "+-")))
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
		if c.Kind == "removed" && p.Fleet(c.Fleet) == nil {
			fmt.Fprintf(&b, "\nfleet **%s** is removed: workload `%s` (%d nodes, %s/h)\n", c.Fleet, c.Workload, c.BeforeNodes, money(c.BeforeMicros))
		}
	}
	return writeString(w, b.String())
}

func writeString(w io.Writer, s string) error {
	_, err := io.WriteString(w, s)
	return err
}
