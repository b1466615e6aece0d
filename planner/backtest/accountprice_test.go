// SPDX-License-Identifier: Apache-2.0

package backtest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gpufleet/gpufleet/schema"
)

// A backtest charges what the account pays: with 20 % off AWS on-demand,
// AWS at $0.80 stays cheaper than GCP's drop to $0.85, so nothing moves and
// every hour costs the discounted price, where at list prices both nodes
// move at the drop.
func TestABacktestChargesTheAccountsPrices(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "fleets"), 0o755)
	os.WriteFile(filepath.Join(dir, "gpufleet.cue"), []byte(`package gpufleet

gpufleet: {
	clouds: {
		aws: regions: ["us-east-1"]
		gcp: {project: "acme-gpu", regions: ["us-central1"]}
	}
	defaults: {migrationThreshold: 0.10, maxDeletions: 8, spotRiskPremium: 0, blocklistFor: "1h"}
	pricing: aws: families: g6: discount: 20
}
`), 0o644)
	os.WriteFile(filepath.Join(dir, "fleets", "f.cue"), []byte(`package gpufleet

fleets: f: {owner: "me", workloads: w: {gpu: {model: "L4", perNode: 1}, nodes: 2, capacity: "on-demand"}}
`), 0o644)
	repo, err := schema.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{From: hour(0), To: hour(8), Catalog: twoClouds(), History: dropAt(3)}
	report, err := Backtest(repo, opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := runNamed(t, report, Repository)
	// The cheapest single cloud is AWS at the account's price throughout.
	if want := int64(8 * 2 * 800_000); r.CostMicros != want || r.BaselineMicros != want || r.Migrations != 0 {
		t.Errorf("cost %d, baseline %d, %d migrations; want %d, %d and none", r.CostMicros, r.BaselineMicros, r.Migrations, want, want)
	}

	list, err := Backtest(loadRepo(t, 2, "on-demand", "0.10"), opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := runNamed(t, list, Repository); r.Migrations != 2 {
		t.Errorf("at list prices %d nodes moved, want 2: the discount is what keeps them", r.Migrations)
	}
}
