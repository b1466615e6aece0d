// SPDX-License-Identifier: Apache-2.0

package backtest

import (
	"bytes"
	"encoding/xml"
	"strings"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/schema"
	"github.com/gpufleet/gpufleet/schema/catalog"
	"github.com/gpufleet/gpufleet/schema/catalog/history"
)

func exampleRun(t testing.TB, days int) (*schema.Repo, Options) {
	t.Helper()
	repo, err := schema.Load("../../examples/fleet-repo")
	if err != nil {
		t.Fatal(err)
	}
	hist, err := history.Load("../../examples/price-history.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(hist.Series) == 0 {
		t.Fatal("the example history is empty")
	}
	from, _ := hist.Span()
	return repo, Options{From: from, To: from.Add(time.Duration(days) * 24 * time.Hour), Seed: 1, Catalog: catalog.Default(), History: hist,
		PreemptRate: map[catalog.Market]float64{catalog.Spot: 0.01}}
}

// The example's recorded week: AWS eu-west-1 spot T4 falls 16 % below the
// Azure spot the batch fleet runs on; at a 10 % threshold its nodes move,
// once, and at 20 % they stay. -short skips it.
func TestExampleHistoryDropMovesBatchOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("backtests the example's week twice; run without -short")
	}
	repo, opts := exampleRun(t, 7)
	opts.PreemptRate = nil
	report, err := Backtest(repo, opts, []Variant{{Name: "0.2", Settings: []Setting{{"defaults.migrationThreshold", "0.2"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if r := runNamed(t, report, Repository); r.MoveSteps != 1 || r.Migrations == 0 {
		t.Errorf("the repository moved %d nodes in %d steps, want some in one", r.Migrations, r.MoveSteps)
	}
	if r := runNamed(t, report, "0.2"); r.Migrations != 0 {
		t.Errorf("a 20 %% threshold moved %d nodes", r.Migrations)
	}
	if report.Runs[0].CostMicros >= runNamed(t, report, "0.2").CostMicros {
		t.Error("moving to the cheaper offer saved nothing")
	}
	var text, md, svg bytes.Buffer
	report.WriteText(&text)
	report.WriteMarkdown(&md)
	if err := report.WriteSVG(&svg); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "would have cost $") || !strings.Contains(md.String(), "more over 7 days") {
		t.Errorf("markdown says no cost difference:\n%s", md.String())
	}
	if !strings.Contains(text.String(), "no-migrations") {
		t.Errorf("text:\n%s", text.String())
	}
	// The chart is well-formed XML with a line and a legend entry a run.
	dec := xml.NewDecoder(&svg)
	lines := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		if el, ok := tok.(xml.StartElement); ok && el.Name.Local == "polyline" {
			lines++
		}
	}
	if lines != len(report.Runs) {
		t.Errorf("the chart has %d lines for %d runs", lines, len(report.Runs))
	}
}

// BenchmarkExample30Days replays the example repository hourly over 30
// days (720 steps), for the repository and no-migrations, with spot
// preemptions.
func BenchmarkExample30Days(b *testing.B) {
	repo, opts := exampleRun(b, 30)
	var solves int
	for b.Loop() {
		report, err := Backtest(repo, opts, nil)
		if err != nil {
			b.Fatal(err)
		}
		solves = report.Runs[0].Solves
		if report.Steps != 720 {
			b.Fatalf("%d steps", report.Steps)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Seconds())/float64(b.N), "s/backtest")
	b.ReportMetric(float64(solves), "solves/run")
}
