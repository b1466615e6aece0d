// SPDX-License-Identifier: Apache-2.0

package render

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/reconcile/status"
)

// Every rendering of a plan says whether it costs less or more than the
// single-cloud baseline, by how much, and never gives a share beyond the
// baseline itself: a plan dearer than the baseline reads "more than", not a
// negative amount "less than", and a baseline of micro-dollars gives no
// absurd percentage.
func TestSavingsLinesSayMoreOrLess(t *testing.T) {
	for _, tt := range []struct {
		name           string
		cost, baseline int64
		// text, markdown and status are what each rendering must say.
		text, markdown, status string
	}{
		{"cheaper", 93_000_000, 186_000_000,
			"Saving against the cheapest on-demand placement on one hyperscaler: $93.00/h of $186.00/h (50%)",
			"Saves $93.00/h (50%) against the cheapest on-demand placement on one hyperscaler.",
			"; $93.00/h (50%) less than the cheapest on-demand placement on one hyperscaler ($186.00/h)."},
		{"dearer", 223_600_000, 186_000_000,
			"Costs $37.60/h (20%) more than the cheapest on-demand placement on one hyperscaler ($186.00/h)",
			"Costs $37.60/h (20%) more than the cheapest on-demand placement on one hyperscaler ($186.00/h).",
			"; $37.60/h (20%) more than the cheapest on-demand placement on one hyperscaler ($186.00/h)."},
		{"a baseline of micro-dollars", 37_600_004, 4,
			"Costs $37.60/h more than the cheapest on-demand placement on one hyperscaler ($0.00/h)",
			"Costs $37.60/h more than the cheapest on-demand placement on one hyperscaler ($0.00/h).",
			"; $37.60/h more than the cheapest on-demand placement on one hyperscaler ($0.00/h)."},
		{"a saving of micro-dollars", 185_999_800, 186_000_000,
			"Costs the same as the cheapest on-demand placement on one hyperscaler ($186.00/h)",
			"Costs the same as the cheapest on-demand placement on one hyperscaler ($186.00/h).",
			"; the same as the cheapest on-demand placement on one hyperscaler ($186.00/h)."},
		{"a saving of under one per cent", 185_500_000, 186_000_000,
			"Saving against the cheapest on-demand placement on one hyperscaler: $0.50/h of $186.00/h (<1%)",
			"Saves $0.50/h (<1%) against the cheapest on-demand placement on one hyperscaler.",
			"; $0.50/h (<1%) less than the cheapest on-demand placement on one hyperscaler ($186.00/h)."},
		{"the same", 186_000_000, 186_000_000,
			"Costs the same as the cheapest on-demand placement on one hyperscaler ($186.00/h)",
			"Costs the same as the cheapest on-demand placement on one hyperscaler ($186.00/h).",
			"; the same as the cheapest on-demand placement on one hyperscaler ($186.00/h)."},
	} {
		t.Run(tt.name, func(t *testing.T) {
			report := examplePlan(t)
			report.Plan.CostMicros, report.Plan.BaselineMicros = tt.cost, tt.baseline
			statuses := map[string]*status.FleetStatus{"f": {SchemaVersion: status.StatusVersion, Fleet: "f", CostMicros: tt.cost, BaselineMicros: tt.baseline}}
			review := planner.NewReview(report, report.Plan, nil, nil)
			outputs := map[string]struct {
				write func(*bytes.Buffer) error
				want  string
			}{
				"text":     {func(b *bytes.Buffer) error { return PlanText(b, report) }, tt.text},
				"markdown": {func(b *bytes.Buffer) error { return PlanMarkdown(b, report) }, tt.markdown},
				"comment":  {func(b *bytes.Buffer) error { return ReviewMarkdown(b, review) }, tt.markdown},
				"status": {func(b *bytes.Buffer) error {
					_, err := b.Write(StatusMarkdown(statuses, nil, Specs{}))
					return err
				}, tt.status},
			}
			for name, o := range outputs {
				var b bytes.Buffer
				if err := o.write(&b); err != nil {
					t.Fatal(err)
				}
				got := b.String()
				if !strings.Contains(got, o.want) {
					t.Errorf("%s lacks %q:\n%s", name, o.want, got)
				}
				if strings.Contains(got, "-$") {
					t.Errorf("%s says a negative amount:\n%s", name, got)
				}
				for _, pct := range regexp.MustCompile(`-?\d+%`).FindAllString(got, -1) {
					if strings.HasPrefix(pct, "-") || len(pct) > len("100%") {
						t.Errorf("%s gives a share of %s", name, pct)
					}
				}
			}
		})
	}
}

// A plan not proven optimal says how far it may be from the best, never
// "within $0.00": the nodes a better plan might place, a gap under a cent
// to its tenth or finer, and, with no gap to give, that none is known.
func TestOptimalitySaysWhatItKnows(t *testing.T) {
	for _, tt := range []struct {
		name string
		plan planner.Plan
		want string
	}{
		{"proven", planner.Plan{Optimal: true}, "Optimal."},
		{"dollars", planner.Plan{GapMicros: 2_500_000}, "Not proven optimal: within $2.50/h of the best bound."},
		{"mills", planner.Plan{GapMicros: 4_000}, "Not proven optimal: within $0.004/h of the best bound."},
		{"under a mill", planner.Plan{GapMicros: 300}, "Not proven optimal: within $0.0003/h of the best bound."},
		{"nodes", planner.Plan{GapNodes: 3}, "Not proven optimal: a plan might place up to 3 more nodes."},
		{"nodes and dollars", planner.Plan{GapNodes: 1, GapMicros: 1_200_000}, "Not proven optimal: a plan might place up to 1 more node; within $1.20/h of the best bound."},
		{"no gap", planner.Plan{}, "Not proven optimal: the search stopped before it could prove so, and found no better plan."},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := optimality(&tt.plan)
			if got != tt.want {
				t.Errorf("%q, want %q", got, tt.want)
			}
			if strings.Contains(got, "$0.00 ") || strings.Contains(got, "$0.00/h") {
				t.Errorf("%q says a gap of nothing", got)
			}
		})
	}
}
