// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpufleet/gpufleet/schema/catalog/history"
)

// -short skips it; TestEveryJSONOutputMatchesItsSchema still backtests two
// days of the example through the command.
func TestBacktestOfTheExampleRepository(t *testing.T) {
	if testing.Short() {
		t.Skip("backtests the example's week, twice; run without -short")
	}
	dir := t.TempDir()
	chart := filepath.Join(dir, "cost.svg")
	for _, tc := range []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"text", []string{"--set", "defaults.migrationThreshold=0.2"}, 0, []string{"no-migrations", "defaults.migrationThreshold=0.2", "over 7 days"}},
		{"markdown", []string{"-o", "markdown", "--chart", chart, "--seed", "3"}, 0, []string{"### Backtest over 7 days", "| run | cost |"}},
		{"two days", []string{"--to", "2026-11-03T00:00:00Z"}, 0, []string{"(48 steps)"}},
		{"bad set", []string{"--set", "defaults.budget=1"}, 1, []string{"defaults.budget cannot be set"}},
		{"bad rate", []string{"--preempt-rate", "spot"}, 1, []string{"want spot=RATE"}},
		{"bad time", []string{"--from", "yesterday"}, 1, []string{"RFC 3339"}},
		{"no history", []string{"--history", filepath.Join(dir, "none.json")}, 1, []string{"catalog refresh records one"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"backtest", "--repo", "../../examples/fleet-repo", "--history", "../../examples/price-history.json"}, tc.args...)
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), args, &stdout, &stderr)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, tc.code, stdout.String(), stderr.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(stdout.String()+stderr.String(), w) {
					t.Errorf("output lacks %q:\n%s%s", w, stdout.String(), stderr.String())
				}
			}
		})
	}
	svg, err := os.ReadFile(chart)
	if err != nil || !bytes.HasPrefix(svg, []byte("<svg ")) || !bytes.Contains(svg, []byte("US$ per hour")) {
		t.Fatalf("chart: %v\n%.200s", err, svg)
	}
}

// A refresh appends what changed to the history it is given; with --sim
// and no --history, the team's history is left alone.
func TestBacktestHistoryGrowsWithCatalogRefresh(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"catalog", "refresh", "--sim", "--cloud", "gcp", "--history", "h.json"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "changed prices to h.json") {
		t.Fatalf("stdout:\n%s", stdout.String())
	}
	h, err := history.Load("h.json")
	if err != nil || len(h.Series) == 0 {
		t.Fatalf("history %v, %v", h, err)
	}
	stdout.Reset()
	run(context.Background(), []string{"catalog", "refresh", "--sim", "--cloud", "gcp", "--history", "h.json"}, &stdout, &stderr)
	if !strings.Contains(stdout.String(), "h.json: no price changed") {
		t.Fatalf("a second refresh of the same prices:\n%s", stdout.String())
	}
	run(context.Background(), []string{"catalog", "refresh", "--sim", "--cloud", "gcp"}, &stdout, &stderr)
	if _, err := os.Stat(defaultHistoryPath); !os.IsNotExist(err) {
		t.Fatalf("an emulated refresh wrote the default history: %v", err)
	}
}
