package catalog

import (
	"bytes"
	"cmp"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestSnapshotValidates(t *testing.T) {
	if err := Default().Validate(); err != nil {
		t.Fatalf("embedded snapshot is invalid:\n%v", err)
	}
}

func TestSnapshotHeader(t *testing.T) {
	c := Default()
	if c.Source != "snapshot" {
		t.Errorf("Source = %q, want snapshot", c.Source)
	}
	if want := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC); !c.FetchedAt.Equal(want) {
		t.Errorf("FetchedAt = %v, want %v", c.FetchedAt, want)
	}
	if n := len(c.Offers); n < 250 || n > 600 {
		t.Errorf("%d offers, want 250 to 600", n)
	}
}

// findOffer returns the offer with exactly this key.
func findOffer(c *Catalog, cloud, region, zone, instanceType string, market Market) (Offer, bool) {
	for _, o := range c.Offers {
		if o.Cloud == cloud && o.Region == region && o.Zone == zone && o.InstanceType == instanceType && o.Market == market {
			return o, true
		}
	}
	return Offer{}, false
}

// TestSnapshotQuotes checks every prices.md figure the snapshot uses,
// written out by hand so that a slip in the generator cannot hide itself.
// GCP figures are machine + GPUs. A want of 0 means prices.md has "—" and
// the offer must be absent.
func TestSnapshotQuotes(t *testing.T) {
	tests := []struct {
		cloud, region, zone, instanceType string
		market                            Market
		want                              int64
	}{
		{AWS, "us-east-1", "", "p5.48xlarge", OnDemand, 98320000},
		{AWS, "us-east-1", "", "p5.48xlarge", Spot, 30330000},
		{AWS, "us-west-2", "", "p5.48xlarge", OnDemand, 98320000},
		{AWS, "us-west-2", "", "p5.48xlarge", Spot, 33240000},
		{AWS, "ap-northeast-1", "", "p5.48xlarge", OnDemand, 123190000},
		{AWS, "ap-northeast-1", "", "p5.48xlarge", Spot, 40100000},
		{AWS, "eu-north-1", "", "p5.48xlarge", OnDemand, 105200000},
		{AWS, "eu-north-1", "eu-north-1b", "p5.48xlarge", Spot, 28530000},
		{AWS, "eu-north-1", "", "p5.48xlarge", Spot, 0}, // one zone only
		{AWS, "ca-central-1", "", "p5.48xlarge", OnDemand, 113070000},
		{AWS, "ca-central-1", "", "p5.48xlarge", Spot, 113070000},
		{AWS, "us-east-1", "", "p5en.48xlarge", OnDemand, 84800000},
		{AWS, "us-east-1", "", "p5en.48xlarge", Spot, 24290000},
		{AWS, "ap-northeast-1", "", "p5en.48xlarge", OnDemand, 106000000},
		{AWS, "ap-northeast-1", "", "p5en.48xlarge", Spot, 32620000},
		{AWS, "us-east-1", "", "p4d.24xlarge", OnDemand, 32770000},
		{AWS, "us-east-1", "", "p4d.24xlarge", Spot, 6790000},
		{AWS, "eu-west-1", "", "p4d.24xlarge", OnDemand, 35400000},
		{AWS, "eu-west-1", "", "p4d.24xlarge", Spot, 16320000},
		{AWS, "ap-south-1", "", "p4d.24xlarge", OnDemand, 39320000},
		{AWS, "ap-south-1", "", "p4d.24xlarge", Spot, 0},
		{AWS, "us-east-1", "", "g6e.2xlarge", OnDemand, 2240000},
		{AWS, "us-east-1", "", "g6e.2xlarge", Spot, 740000},
		{AWS, "eu-central-1", "", "g6e.2xlarge", OnDemand, 2800000},
		{AWS, "eu-central-1", "", "g6e.2xlarge", Spot, 1210000},
		{AWS, "us-east-1", "", "g6e.48xlarge", OnDemand, 30130000},
		{AWS, "us-east-1", "", "g6e.48xlarge", Spot, 7550000},
		{AWS, "eu-central-1", "", "g6.2xlarge", OnDemand, 1220000},
		{AWS, "eu-central-1", "", "g6.2xlarge", Spot, 320000},
		{AWS, "us-west-2", "", "g6.12xlarge", OnDemand, 4600000},
		{AWS, "us-west-2", "", "g6.12xlarge", Spot, 0},
		{AWS, "us-east-1", "", "g6.24xlarge", OnDemand, 6680000},
		{AWS, "us-east-1", "", "g6.24xlarge", Spot, 3030000},
		{AWS, "us-east-1", "", "g5.12xlarge", OnDemand, 5670000},
		{AWS, "us-east-1", "", "g5.12xlarge", Spot, 1990000},
		{AWS, "ap-northeast-2", "", "g5.12xlarge", OnDemand, 6970000},
		{AWS, "ap-northeast-2", "", "g5.12xlarge", Spot, 6970000},
		{AWS, "us-east-1", "", "g4dn.xlarge", OnDemand, 526000},
		{AWS, "us-east-1", "", "g4dn.xlarge", Spot, 201000},
		{AWS, "eu-west-1", "", "g4dn.xlarge", OnDemand, 587000},
		{AWS, "eu-west-1", "", "g4dn.xlarge", Spot, 266000},

		{Azure, "eastus", "", "Standard_ND96isr_H100_v5", OnDemand, 96870000},
		{Azure, "eastus", "", "Standard_ND96isr_H100_v5", Spot, 0},
		{Azure, "eastus", "", "Standard_ND96asr_v4", OnDemand, 27200000},
		{Azure, "eastus", "", "Standard_ND96asr_v4", Spot, 2990000},
		{Azure, "eastus", "", "Standard_ND96amsr_A100_v4", OnDemand, 32770000},
		{Azure, "eastus", "", "Standard_ND96amsr_A100_v4", Spot, 3600000},
		{Azure, "eastus", "", "Standard_NC24ads_A100_v4", OnDemand, 3670000},
		{Azure, "eastus", "", "Standard_NC24ads_A100_v4", Spot, 440000},
		{Azure, "eastus", "", "Standard_NC40ads_H100_v5", OnDemand, 6980000},
		{Azure, "eastus", "", "Standard_NC40ads_H100_v5", Spot, 6980000},
		{Azure, "eastus", "", "Standard_NV36ads_A10_v5", OnDemand, 3200000},
		{Azure, "eastus", "", "Standard_NV36ads_A10_v5", Spot, 800000},
		{Azure, "eastus", "", "Standard_NC4as_T4_v3", OnDemand, 526000},
		{Azure, "eastus", "", "Standard_NC4as_T4_v3", Spot, 63000},
		{Azure, "westus", "", "Standard_NC4as_T4_v3", OnDemand, 631000},
		{Azure, "westus", "", "Standard_NC4as_T4_v3", Spot, 69000},

		{GCP, "us-central1", "", "a3-highgpu-8g", OnDemand, 43070000},   // 9.46 + 33.61
		{GCP, "us-central1", "", "a3-highgpu-8g", Spot, 20200000},       // 2.18 + 18.02
		{GCP, "europe-west4", "", "a3-highgpu-8g", OnDemand, 111810000}, // 9.93 + 101.88
		{GCP, "europe-west4", "", "a3-highgpu-8g", Spot, 20120000},      // 1.79 + 18.33
		{GCP, "us-central1", "", "a3-ultragpu-8g", OnDemand, 86760000},  // 12.27 + 74.49
		{GCP, "us-central1", "", "a3-ultragpu-8g", Spot, 32620000},      // 2.82 + 29.80
		{GCP, "us-central1", "", "a2-highgpu-8g", OnDemand, 29390000},   // 5.92 + 23.47
		{GCP, "us-central1", "", "a2-highgpu-8g", Spot, 11550000},       // 2.37 + 9.18
		{GCP, "us-central1", "", "g2-standard-4", OnDemand, 707000},     // 0.147 + 0.560
		{GCP, "us-central1", "", "g2-standard-4", Spot, 282000},         // 0.059 + 0.223
	}
	c := Default()
	for _, tt := range tests {
		name := strings.Join([]string{tt.cloud, tt.region, tt.zone, tt.instanceType, string(tt.market)}, "/")
		t.Run(name, func(t *testing.T) {
			o, ok := findOffer(c, tt.cloud, tt.region, tt.zone, tt.instanceType, tt.market)
			switch {
			case tt.want == 0 && ok:
				t.Errorf("offer present at %s, want none", FormatMicros(o.PriceMicros))
			case tt.want != 0 && !ok:
				t.Error("offer missing")
			case ok && o.PriceMicros != tt.want:
				t.Errorf("price %s, want %s", FormatMicros(o.PriceMicros), FormatMicros(tt.want))
			}
		})
	}
}

// TestSnapshotDerivations spot-checks the generator's arithmetic on derived
// rows, one per kind of derivation.
func TestSnapshotDerivations(t *testing.T) {
	tests := []struct {
		name                        string
		cloud, region, instanceType string
		market                      Market
		want                        int64
	}{
		{"level 1.00 copies the base", AWS, "us-east-2", "p5.48xlarge", OnDemand, 98320000},
		{"eu-central-1 from eu-west-1: 35.40 × 1.25 / 1.08", AWS, "eu-central-1", "p4d.24xlarge", OnDemand, 40972200},
		{"no spot where the base has none", AWS, "ap-northeast-1", "p4d.24xlarge", Spot, 0},
		{"80GB premium: 32.77 × 32.77 / 27.20", AWS, "us-east-1", "p4de.24xlarge", OnDemand, 39480600},
		{"H200 ratio: 96.87 × 84.80 / 98.32", Azure, "eastus2", "Standard_ND96isr_H200_v5", OnDemand, 83549400},
		{"machine derived, GPUs quoted: 9.46 × 1.12 + 78.37", GCP, "us-east4", "a3-highgpu-8g", OnDemand, 88965200},
		{"machine ×12, GPUs ×4: 0.147 × 12 + 0.560 × 4", GCP, "us-central1", "g2-standard-48", OnDemand, 4004000},
		{"ap level 1.20: 0.526 × 1.20", Azure, "japaneast", "Standard_NC4as_T4_v3", OnDemand, 631200},
	}
	c := Default()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, ok := findOffer(c, tt.cloud, tt.region, "", tt.instanceType, tt.market)
			switch {
			case tt.want == 0 && ok:
				t.Errorf("offer present at %s, want none", FormatMicros(o.PriceMicros))
			case tt.want != 0 && !ok:
				t.Error("offer missing")
			case ok && o.PriceMicros != tt.want:
				t.Errorf("price %s, want %s", FormatMicros(o.PriceMicros), FormatMicros(tt.want))
			}
		})
	}
}

func TestSnapshotCoverage(t *testing.T) {
	// What each cloud really sells among the catalog's models.
	wantModels := map[string][]string{
		AWS:   {"H100", "H200", "A100-40GB", "A100-80GB", "L40S", "L4", "A10G", "T4"},
		Azure: {"H100", "H200", "A100-40GB", "A100-80GB", "A10G", "T4"},
		GCP:   {"H100", "H200", "A100-40GB", "A100-80GB", "L4"},
	}
	c := Default()
	for _, cloud := range Clouds {
		t.Run(cloud, func(t *testing.T) {
			models := make(map[string]map[Market]bool)
			sizes := make(map[int]bool)
			for _, o := range c.Offers {
				if o.Cloud != cloud {
					continue
				}
				if models[o.GPUModel] == nil {
					models[o.GPUModel] = make(map[Market]bool)
				}
				models[o.GPUModel][o.Market] = true
				sizes[o.GPUs] = true
			}
			for _, model := range wantModels[cloud] {
				if !models[model][OnDemand] {
					t.Errorf("no on-demand %s", model)
				}
			}
			if len(models) != len(wantModels[cloud]) {
				t.Errorf("offers %d models, want %d", len(models), len(wantModels[cloud]))
			}
			if !sizes[1] || !sizes[8] {
				t.Errorf("GPUs per node %v, want 1 and 8 among them", sizes)
			}
			if cloud != Azure && !sizes[4] {
				t.Errorf("GPUs per node %v, want 4 among them", sizes)
			}
		})
	}
}

func TestSnapshotIsSorted(t *testing.T) {
	c := Default()
	byKey := func(a, b Offer) int {
		return cmp.Or(
			strings.Compare(a.Cloud, b.Cloud),
			strings.Compare(a.Region, b.Region),
			strings.Compare(a.Zone, b.Zone),
			strings.Compare(a.InstanceType, b.InstanceType),
			strings.Compare(string(a.Market), string(b.Market)),
		)
	}
	if !slices.IsSortedFunc(c.Offers, byKey) {
		t.Error("offers are not sorted by cloud, region, zone, instance type, market")
	}
	if !slices.IsSortedFunc(c.Regions, func(a, b Region) int {
		return cmp.Or(strings.Compare(a.Cloud, b.Cloud), strings.Compare(a.Name, b.Name))
	}) {
		t.Error("regions are not sorted by cloud, name")
	}
}

// TestSnapshotIsGenerated regenerates the snapshot and compares, so that a
// hand edit to snapshot.json or a forgotten `go generate` fails here.
func TestSnapshotIsGenerated(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the generator")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to run the generator with")
	}
	out := filepath.Join(t.TempDir(), "snapshot.json")
	cmd := exec.Command(goTool, "run", "gen_snapshot.go", "-o", out)
	if output, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go run gen_snapshot.go: %v\n%s", err, output)
	}
	generated, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(generated, snapshotJSON) {
		t.Errorf("snapshot.json is stale; run go generate:\n%s", firstDifference(snapshotJSON, generated))
	}
}
