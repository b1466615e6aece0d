// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpufleet/gpufleet/planner/backtest"
	"github.com/gpufleet/gpufleet/schema"
	"github.com/gpufleet/gpufleet/schema/atomicfile"
	"github.com/gpufleet/gpufleet/schema/catalog"
	"github.com/gpufleet/gpufleet/schema/catalog/history"
)

type backtestFlags struct {
	repo, history, from, to, output, chart, catalogFile string
	step                                                time.Duration
	seed                                                uint64
	preempt, set                                        []string
	catalogExplicit                                     bool
}

func (a *app) backtestCommand() *cobra.Command {
	var f backtestFlags
	cmd := &cobra.Command{
		Use:   "backtest",
		Short: "Replay the reconcile loop over recorded prices: what a policy would have cost",
		Long: `backtest replays the reconcile loop over a price history, as catalog refresh
records it: at each step it plans with the prices of then against the nodes
the step before left running, applies the diff with the repository's rules
(migrationThreshold, the disruption budget, movable, budgets), preempts spot nodes at
the --preempt-rate per hour, seeded, and charges what runs. It reports the
total cost, the cheapest on-demand baseline on one hyperscaler and the cost with
migrations off, and the same for each --set variant, side by side.

--from and --to default to the history's first and last point.`,
		Example: `  gpufleet backtest --repo examples/fleet-repo --history examples/price-history.json
  gpufleet backtest --repo fleets --from 2026-11-01T00:00:00Z --to 2026-12-01T00:00:00Z --set defaults.migrationThreshold=0.2
  gpufleet backtest --repo fleets --preempt-rate spot=0.02 --seed 7 -o markdown --chart cost.svg`,
		Args: cobra.NoArgs,
		PreRun: func(cmd *cobra.Command, _ []string) {
			f.catalogExplicit = cmd.Flags().Changed("catalog") || os.Getenv("GPUFLEET_CATALOG") != ""
		},
		RunE: func(cmd *cobra.Command, _ []string) error { return a.backtest(f) },
	}
	cmd.Flags().StringVar(&f.repo, "repo", ".", "fleet repository directory")
	cmd.Flags().StringVar(&f.history, "history", envOr("GPUFLEET_HISTORY", defaultHistoryPath), "price history file, as catalog refresh appends to it [GPUFLEET_HISTORY]")
	cmd.Flags().StringVar(&f.catalogFile, "catalog", envOr("GPUFLEET_CATALOG", defaultCatalogPath), "price catalog file for what is sold where; the embedded snapshot when it is missing or older [GPUFLEET_CATALOG]")
	cmd.Flags().StringVar(&f.from, "from", "", "start of the period, RFC 3339 (default the history's first point)")
	cmd.Flags().StringVar(&f.to, "to", "", "end of the period, RFC 3339, not included (default the history's last point and a step)")
	cmd.Flags().DurationVar(&f.step, "step", time.Hour, "how often the loop runs")
	cmd.Flags().Uint64Var(&f.seed, "seed", 1, "seed of the preemptions")
	cmd.Flags().StringArrayVar(&f.preempt, "preempt-rate", []string{"spot=0.01"}, "MARKET=RATE: chance per hour that a running node of the market is preempted; repeat for both")
	cmd.Flags().StringArrayVar(&f.set, "set", nil, "a variant with a default changed, as defaults.migrationThreshold=0.2; repeat for more variants")
	cmd.Flags().StringVarP(&f.output, "output", "o", "text", "output format: text, json or markdown")
	cmd.Flags().StringVar(&f.chart, "chart", "", "also draw the hourly cost of each run to this SVG file")
	return cmd
}

func (a *app) backtest(f backtestFlags) error {
	if err := outputFormat(f.output, "text", "json", "markdown"); err != nil {
		return err
	}
	opts := backtest.Options{Step: f.step, Seed: f.seed, PreemptRate: map[catalog.Market]float64{}}
	for _, p := range f.preempt {
		market, rate, ok := strings.Cut(p, "=")
		r, err := strconv.ParseFloat(strings.TrimSpace(rate), 64)
		m := catalog.Market(strings.TrimSpace(market))
		if !ok || err != nil || (m != catalog.Spot && m != catalog.OnDemand) {
			return fmt.Errorf("--preempt-rate %q: want spot=RATE or on-demand=RATE, as spot=0.01", p)
		}
		opts.PreemptRate[m] = r
	}
	var variants []backtest.Variant
	for _, s := range f.set {
		setting, err := backtest.ParseSetting(s)
		if err != nil {
			return fmt.Errorf("--set: %w", err)
		}
		variants = append(variants, backtest.Variant{Name: setting.String(), Settings: []backtest.Setting{setting}})
	}
	repo, err := schema.Load(f.repo)
	if err != nil {
		return a.specErrors(f.repo, err)
	}
	if opts.Catalog, err = loadCatalog(f.catalogFile, f.catalogExplicit); err != nil {
		return err
	}
	if _, err := os.Stat(f.history); err != nil {
		return fmt.Errorf("reading the price history, %w; gpufleet catalog refresh records one", err)
	}
	if opts.History, err = history.Load(f.history); err != nil {
		return err
	}
	first, last := opts.History.Span()
	if opts.From, err = timeFlag("--from", f.from, first); err != nil {
		return err
	}
	if opts.To, err = timeFlag("--to", f.to, last.Add(f.step)); err != nil {
		return err
	}
	report, err := backtest.Backtest(repo, opts, variants)
	if err != nil {
		return err
	}
	if f.chart != "" {
		var buf bytes.Buffer
		if err := report.WriteSVG(&buf); err != nil {
			return err
		}
		if err := atomicfile.Write(f.chart, buf.Bytes()); err != nil {
			return fmt.Errorf("writing the chart, %w", err)
		}
	}
	switch f.output {
	case "json":
		return a.writeOutput("backtest", report)
	case "markdown":
		return report.WriteMarkdown(a.stdout)
	default:
		return report.WriteText(a.stdout)
	}
}

func timeFlag(name, value string, fallback time.Time) (time.Time, error) {
	if value == "" {
		if fallback.IsZero() {
			return time.Time{}, fmt.Errorf("%s: the price history is empty, so give the period", name)
		}
		return fallback, nil
	}
	t, err := time.Parse(time.RFC3339, value)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s %q: want an RFC 3339 time, as 2026-11-01T00:00:00Z", name, value)
	}
	return t, nil
}
