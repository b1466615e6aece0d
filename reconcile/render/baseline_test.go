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
			"Saving against the cheapest single-cloud on-demand placement: $93.00/h of $186.00/h (50%)",
			"Saves $93.00/h (50%) against the cheapest single-cloud on-demand placement.",
			"; $93.00/h (50%) less than the cheapest single-cloud on-demand placement ($186.00/h)."},
		{"dearer", 223_600_000, 186_000_000,
			"Costs $37.60/h (20%) more than the cheapest single-cloud on-demand placement ($186.00/h)",
			"Costs $37.60/h (20%) more than the cheapest single-cloud on-demand placement ($186.00/h).",
			"; $37.60/h (20%) more than the cheapest single-cloud on-demand placement ($186.00/h)."},
		{"a baseline of micro-dollars", 37_600_004, 4,
			"Costs $37.60/h more than the cheapest single-cloud on-demand placement ($0.00/h)",
			"Costs $37.60/h more than the cheapest single-cloud on-demand placement ($0.00/h).",
			"; $37.60/h more than the cheapest single-cloud on-demand placement ($0.00/h)."},
		{"the same", 186_000_000, 186_000_000,
			"Costs the same as the cheapest single-cloud on-demand placement ($186.00/h)",
			"Costs the same as the cheapest single-cloud on-demand placement ($186.00/h).",
			"; the same as the cheapest single-cloud on-demand placement ($186.00/h)."},
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
