// SPDX-License-Identifier: Apache-2.0

package backtest

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
)

// The summary, the table and the Markdown say a run dearer than the
// baseline costs more, never a negative saving, and give no share beyond
// 100 % however small the baseline.
func TestBaselineLinesSayMoreOrLess(t *testing.T) {
	for _, tt := range []struct {
		name           string
		cost, baseline int64
		summary        string
		share          string
	}{
		{"cheaper", 900_000_000, 1_000_000_000, ", $100.00 (10.0 %) less than the cheapest single cloud on demand.", "10.0 % less"},
		{"dearer", 1_100_000_000, 1_000_000_000, ", $100.00 more than the cheapest single cloud on demand.", "10.0 % more"},
		{"a baseline of micro-dollars", 37_600_004, 4, ", $37.60 more than the cheapest single cloud on demand.", "> 100 % more"},
		{"the same", 1_000_000_000, 1_000_000_000, ", the same as the cheapest single cloud on demand.", "same"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := &Report{From: t0, To: hour(24), Step: "1h", Steps: 24,
				Runs: []Run{{Name: "repository", CostMicros: tt.cost, BaselineMicros: tt.baseline}}}
			if got := r.Summary()[0]; !strings.HasSuffix(got, tt.summary) {
				t.Errorf("summary %q, want it to end %q", got, tt.summary)
			}
			var text, md bytes.Buffer
			if err := r.WriteText(&text); err != nil {
				t.Fatal(err)
			}
			if err := r.WriteMarkdown(&md); err != nil {
				t.Fatal(err)
			}
			for name, got := range map[string]string{"text": text.String(), "markdown": md.String()} {
				if !strings.Contains(got, tt.share) {
					t.Errorf("%s lacks the share %q:\n%s", name, tt.share, got)
				}
				if regexp.MustCompile(`[-−]\s*[\d.]+ %`).MatchString(got) {
					t.Errorf("%s gives a negative share:\n%s", name, got)
				}
				if strings.Contains(got, "-$") && tt.cost > tt.baseline {
					t.Errorf("%s says a negative amount:\n%s", name, got)
				}
				for _, pct := range regexp.MustCompile(`-?[\d.]+ %`).FindAllString(got, -1) {
					if len(strings.TrimPrefix(pct, "-")) > len("100.0 %") {
						t.Errorf("%s gives a share of %s", name, pct)
					}
				}
			}
		})
	}
}
