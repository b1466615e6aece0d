// SPDX-License-Identifier: Apache-2.0

package backtest

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/schema"
	"github.com/gpufleet/gpufleet/schema/catalog"
	"github.com/gpufleet/gpufleet/schema/catalog/history"
)

var t0 = time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)

func hour(n int) time.Time { return t0.Add(time.Duration(n) * time.Hour) }

// loadRepo writes a one-workload repository: nodes L4 nodes bought on
// market capacity, on AWS or GCP.
func loadRepo(t testing.TB, nodes int, capacity string, threshold string) *schema.Repo {
	t.Helper()
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "fleets"), 0o755)
	config := `package gpufleet

gpufleet: {
	clouds: {
		aws: regions: ["us-east-1"]
		gcp: {project: "acme-gpu", regions: ["us-central1"]}
	}
	defaults: {migrationThreshold: ` + threshold + `, maxDeletions: 8, spotRiskPremium: 0, blocklistFor: "1h"}
}
`
	fleet := `package gpufleet

fleets: f: {owner: "me", workloads: w: {gpu: {model: "L4", perNode: 1}, nodes: ` + itoa(nodes) + `, capacity: "` + capacity + `"}}
`
	os.WriteFile(filepath.Join(dir, "gpufleet.cue"), []byte(config), 0o644)
	os.WriteFile(filepath.Join(dir, "fleets", "f.cue"), []byte(fleet), 0o644)
	repo, err := schema.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return repo
}

func itoa(n int) string { return string(rune('0' + n)) }

// twoClouds sells L4 nodes in one zone of each cloud, on both markets.
func twoClouds() *catalog.Catalog {
	cat := &catalog.Catalog{
		Source: "test",
		Regions: []catalog.Region{
			{Cloud: "aws", Name: "us-east-1", Geo: "us", Zones: []string{"us-east-1a"}},
			{Cloud: "gcp", Name: "us-central1", Geo: "us", Zones: []string{"us-central1-a"}},
		},
	}
	for _, m := range []catalog.Market{catalog.OnDemand, catalog.Spot} {
		cat.Offers = append(cat.Offers,
			catalog.Offer{Cloud: "aws", Region: "us-east-1", InstanceType: "g6.xlarge", Market: m, GPUModel: "L4", GPUs: 1, VCPUs: 4, MemoryGiB: 16, PriceMicros: 1_000_000},
			catalog.Offer{Cloud: "gcp", Region: "us-central1", InstanceType: "g2-standard-4", Market: m, GPUModel: "L4", GPUs: 1, VCPUs: 4, MemoryGiB: 16, PriceMicros: 1_200_000},
		)
	}
	return cat
}

const (
	awsOnDemand = "aws/us-east-1//g6.xlarge/on-demand"
	gcpOnDemand = "gcp/us-central1//g2-standard-4/on-demand"
)

// dropAt records AWS at $1.00 and GCP at $1.20 an hour, and GCP falling
// to $0.85 (15 % below AWS) at the given hour.
func dropAt(h int) *history.History {
	hist := &history.History{}
	hist.Add(awsOnDemand, hour(-24), 1_000_000)
	hist.Add(gcpOnDemand, hour(-24), 1_200_000)
	hist.Add(gcpOnDemand, hour(h), 850_000)
	return hist
}

func TestAPriceDropMovesNodesOnceWhenItBeatsTheThreshold(t *testing.T) {
	repo := loadRepo(t, 2, "on-demand", "0.10")
	opts := Options{From: hour(0), To: hour(8), Catalog: twoClouds(), History: dropAt(3)}
	report, err := Backtest(repo, opts, []Variant{
		{Name: "threshold 0.2", Settings: []Setting{{"defaults.migrationThreshold", "0.2"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if report.Steps != 8 || len(report.Runs) != 3 {
		t.Fatalf("%d steps, %d runs", report.Steps, len(report.Runs))
	}
	// Hand-computed, in micro-dollars: two nodes on AWS at $1.00 for hours
	// 0-2; after the drop at hour 3, a 15 % saving beats a 10 % threshold,
	// so both move to GCP at $0.85 for hours 3-7. Against 20 %, or with
	// migrations off, they stay on AWS all 8 hours.
	moved := int64(3*2*1_000_000 + 5*2*850_000)
	stayed := int64(8 * 2 * 1_000_000)
	// The cheapest single cloud: AWS ($2.00 for both) before the drop, GCP
	// ($1.70) after.
	baseline := int64(3*2_000_000 + 5*1_700_000)
	for _, tc := range []struct {
		run                   string
		cost                  int64
		migrations, moveSteps int
	}{
		{Repository, moved, 2, 1},
		{NoMigrations, stayed, 0, 0},
		{"threshold 0.2", stayed, 0, 0},
	} {
		t.Run(tc.run, func(t *testing.T) {
			r := runNamed(t, report, tc.run)
			if r.CostMicros != tc.cost || r.BaselineMicros != baseline {
				t.Errorf("cost %d, baseline %d; want %d, %d", r.CostMicros, r.BaselineMicros, tc.cost, baseline)
			}
			if r.Migrations != tc.migrations || r.MoveSteps != tc.moveSteps {
				t.Errorf("%d nodes moved in %d steps; want %d in %d", r.Migrations, r.MoveSteps, tc.migrations, tc.moveSteps)
			}
			var sum int64
			for _, h := range r.Hourly {
				sum += h
			}
			if sum != tc.cost {
				t.Errorf("the hourly costs add up to %d, not %d", sum, tc.cost)
			}
			if r.Preemptions != 0 {
				t.Errorf("%d preemptions with no rate", r.Preemptions)
			}
		})
	}
	// Prices change once in the period: the repository plans at the start,
	// after its first creates, at the drop and after the move; every other
	// step reuses the plan.
	if got := runNamed(t, report, Repository).Solves; got > 4 {
		t.Errorf("the repository planned %d times in 8 steps, want at most 4", got)
	}
}

// A drop below the threshold moves nothing, however long it lasts.
func TestAPriceDropUnderTheThresholdNeverMoves(t *testing.T) {
	repo := loadRepo(t, 2, "on-demand", "0.25")
	report, err := Backtest(repo, Options{From: hour(0), To: hour(48), Catalog: twoClouds(), History: dropAt(3)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := runNamed(t, report, Repository)
	if r.Migrations != 0 || r.CostMicros != 48*2*1_000_000 {
		t.Fatalf("moved %d nodes, cost %d", r.Migrations, r.CostMicros)
	}
}

func TestPreemptionsAreSeededAndReplaced(t *testing.T) {
	repo := loadRepo(t, 4, "spot", "0.10")
	opts := Options{From: hour(0), To: hour(72), Catalog: twoClouds(), Seed: 7,
		PreemptRate: map[catalog.Market]float64{catalog.Spot: 0.05}}
	first, err := Backtest(repo, opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := Backtest(repo, opts, nil)
	if !reflect.DeepEqual(first, again) {
		t.Fatal("the same seed gave another report")
	}
	r := runNamed(t, first, Repository)
	if r.Preemptions == 0 {
		t.Fatal("no preemptions at 5 % an hour over 72 node-hours × 4")
	}
	// Every preempted node is deleted and replaced, on GCP while AWS's
	// offer is blocklisted; when the block ends, the nodes move back to
	// the cheaper AWS. Nothing else creates a node.
	if r.Creates != 4+r.Preemptions+r.Migrations || r.Deletes != r.Preemptions+r.Migrations {
		t.Errorf("%d creates and %d deletes for 4 nodes, %d preemptions and %d moves", r.Creates, r.Deletes, r.Preemptions, r.Migrations)
	}
	opts.Seed = 8
	other, _ := Backtest(repo, opts, nil)
	if reflect.DeepEqual(runNamed(t, other, Repository).Hourly, r.Hourly) && runNamed(t, other, Repository).Preemptions == r.Preemptions {
		t.Error("another seed preempted the same")
	}
}

func TestSettings(t *testing.T) {
	for _, tc := range []struct {
		in   string
		ok   bool
		want Setting
	}{
		{"defaults.migrationThreshold=0.2", true, Setting{"defaults.migrationThreshold", "0.2"}},
		{"defaults.spotRiskPremium = 0.5", true, Setting{"defaults.spotRiskPremium", "0.5"}},
		{"defaults.maxDeletions=3", true, Setting{"defaults.maxDeletions", "3"}},
		{"defaults.migrationThreshold=2", false, Setting{}},
		{"defaults.budget=1", false, Setting{}},
		{"migrationThreshold", false, Setting{}},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseSetting(tc.in)
			if (err == nil) != tc.ok || got != tc.want {
				t.Fatalf("ParseSetting = %v, %v", got, err)
			}
		})
	}
	repo := loadRepo(t, 1, "spot", "0.10")
	p, err := patched(repo, []Setting{{"defaults.spotRiskPremium", "0.5"}})
	if err != nil || p.Config.Defaults.SpotRiskPremium != 0.5 || repo.Config.Defaults.SpotRiskPremium != 0 {
		t.Fatalf("patched %v, original %v, %v", p.Config.Defaults, repo.Config.Defaults, err)
	}
}

func runNamed(t testing.TB, r *Report, name string) Run {
	t.Helper()
	for _, run := range r.Runs {
		if run.Name == name {
			return run
		}
	}
	t.Fatalf("no run %q", name)
	return Run{}
}
