// SPDX-License-Identifier: Apache-2.0

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
	if want := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC); !c.FetchedAt.Equal(want) {
		t.Errorf("FetchedAt = %v, want %v", c.FetchedAt, want)
	}
	for _, s := range c.Sources {
		if s.Date.IsZero() || s.What == "" {
			t.Errorf("source %q has no date or no description", s.ID)
		}
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

// TestSnapshotQuotes spot-checks figures copied by hand from the rows in
// data/, so that a slip in how the generator names zones or joins GCP's
// machine and GPU rows cannot hide itself. AWS zones are named after their
// ids (use1-az3 is us-east-1c); GCP prices are machine + GPUs. A want of 0
// means the data has no such price and the offer must be absent.
func TestSnapshotQuotes(t *testing.T) {
	tests := []struct {
		cloud, region, zone, instanceType string
		market                            Market
		want                              int64
	}{
		{AWS, "us-east-1", "us-east-1a", "p5.48xlarge", OnDemand, 98320000},
		{AWS, "us-east-1", "us-east-1a", "p5.48xlarge", Spot, 30326000},
		{AWS, "us-east-1", "us-east-1c", "p5.48xlarge", Spot, 20993400},
		{AWS, "us-east-1", "us-east-1f", "p5.48xlarge", Spot, 25302600},
		{AWS, "us-east-1", "us-east-1", "p5.48xlarge", OnDemand, 0},
		{AWS, "us-east-1", "", "p5.48xlarge", OnDemand, 0},
		// Listed twice in us-east-1d, once with a spot price and once without.
		{AWS, "us-east-1", "us-east-1d", "p4de.24xlarge", OnDemand, 40965750},
		{AWS, "us-east-1", "us-east-1d", "p4de.24xlarge", Spot, 7807400},
		{AWS, "us-east-1", "us-east-1a", "p4de.24xlarge", Spot, 0},

		{Azure, "eastus", "", "Standard_NC4as_T4_v3", OnDemand, 526000},
		{Azure, "eastus", "", "Standard_NC4as_T4_v3", Spot, 62699},
		{Azure, "eastus", "", "Standard_ND96isr_H100_v5", OnDemand, 98320000},

		{GCP, "us-central1", "us-central1-a", "a3-highgpu-8g", OnDemand, 43066150}, // 9.46006 + 33.60609
		{GCP, "us-central1", "us-central1-a", "a3-highgpu-8g", Spot, 20199470},     // 2.17547 + 18.024
		{GCP, "us-central1", "", "a3-highgpu-8g", OnDemand, 0},
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
	if o, _ := findOffer(c, Azure, "eastus", "", "Standard_ND96isr_H100_v5", OnDemand); o.GPUs != 8 {
		t.Errorf("Standard_ND96isr_H100_v5 has %d GPUs, want the 8 data/corrections.csv gives", o.GPUs)
	}
}

// TestSnapshotDerivations checks the generator's arithmetic on a derived
// offer: the eastus quote times the level data/derived.csv gives, rounded
// to $0.0001.
func TestSnapshotDerivations(t *testing.T) {
	c := Default()
	o, ok := findOffer(c, Azure, "japaneast", "", "Standard_NC4as_T4_v3", OnDemand)
	if !ok || !o.Derived || o.PriceMicros != 631200 { // 0.526 × 1.20
		t.Errorf("japaneast Standard_NC4as_T4_v3 = %+v, want a derived $0.6312", o)
	}
	if o, ok := findOffer(c, Azure, "japaneast", "", "Standard_NC4as_T4_v3", Spot); !ok || o.PriceMicros != 75200 { // 0.062699 × 1.20
		t.Errorf("japaneast Standard_NC4as_T4_v3 spot = %+v, want a derived $0.0752", o)
	}
	// europe-west9 has a3-edgegpu machines in the data and no row pricing
	// H100s there: the GPUs' price is borrowed from europe-west4, the
	// first zone of Europe that prices both, scaled by the machines'.
	o, ok = findOffer(c, GCP, "europe-west9", "europe-west9-c", "a3-edgegpu-8g", OnDemand)
	if !ok || !o.Derived || o.PriceMicros <= 10973670 {
		t.Errorf("europe-west9-c a3-edgegpu-8g = %+v, want a derived price above its machine's $10.97367", o)
	}
	for _, o := range c.Offers {
		if o.Derived && o.Cloud == AWS {
			t.Errorf("%s %s %s is derived: the data prices every AWS offer", o.Cloud, o.Zone, o.InstanceType)
		}
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
