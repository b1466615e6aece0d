// SPDX-License-Identifier: Apache-2.0

package catalog

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// smallCatalog is a valid catalog small enough to read in a test failure.
func smallCatalog() *Catalog {
	return &Catalog{
		Source:    "aws+gcp",
		FetchedAt: time.Date(2026, 10, 1, 12, 0, 0, 0, time.UTC),
		Regions: []Region{
			{Cloud: AWS, Name: "us-east-1", Geo: "us", Zones: []string{"us-east-1a", "us-east-1b"}},
			{Cloud: GCP, Name: "us-central1", Geo: "us", Zones: []string{"us-central1-a"}},
		},
		Offers: []Offer{
			{Cloud: AWS, Region: "us-east-1", InstanceType: "g4dn.xlarge", Market: OnDemand, GPUModel: "T4", GPUs: 1, VCPUs: 4, MemoryGiB: 16, PriceMicros: 526000},
			{Cloud: AWS, Region: "us-east-1", Zone: "us-east-1b", InstanceType: "g4dn.xlarge", Market: Spot, GPUModel: "T4", GPUs: 1, VCPUs: 4, MemoryGiB: 16, PriceMicros: 201000},
			{Cloud: GCP, Region: "us-central1", InstanceType: "g2-standard-4", Market: OnDemand, GPUModel: "L4", GPUs: 1, VCPUs: 4, MemoryGiB: 16, PriceMicros: 707000},
		},
		Egress: []Egress{
			{Cloud: AWS, InterRegionMicrosPerGB: 20000, InternetMicrosPerGB: 90000},
			{Cloud: GCP, InterRegionMicrosPerGB: 20000, InternetMicrosPerGB: 120000},
		},
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		change func(c *Catalog)
		// want lists fragments of the expected problems, one per problem;
		// none means the catalog must validate.
		want []string
	}{
		{"valid", func(c *Catalog) {}, nil},
		{"zero price is tolerated", func(c *Catalog) { c.Offers[0].PriceMicros = 0 }, nil},
		{"negative price is tolerated", func(c *Catalog) { c.Offers[0].PriceMicros = -1 }, nil},
		{"same type in two zones", func(c *Catalog) {
			extra := c.Offers[1]
			extra.Zone = "us-east-1a"
			c.Offers = append(c.Offers, extra)
		}, nil},
		{"unknown cloud on offer", func(c *Catalog) { c.Offers[2].Cloud = "oracle" },
			[]string{`offers[2] (oracle us-central1 g2-standard-4 on-demand): unknown cloud "oracle"`, "region oracle us-central1 is not listed"}},
		{"unknown cloud on region", func(c *Catalog) { c.Regions[1].Cloud = "oracle"; c.Offers = c.Offers[:2] },
			[]string{`regions[1] (oracle us-central1): unknown cloud "oracle"`}},
		{"unknown cloud on egress", func(c *Catalog) { c.Egress[1].Cloud = "oracle" },
			[]string{`egress[1] (oracle): unknown cloud "oracle"`}},
		{"region not listed", func(c *Catalog) { c.Offers[0].Region = "us-east-2" },
			[]string{"offers[0] (aws us-east-2 g4dn.xlarge on-demand): region aws us-east-2 is not listed"}},
		{"region of another cloud", func(c *Catalog) { c.Offers[2].Region = "us-east-1" },
			[]string{"region gcp us-east-1 is not listed"}},
		{"zone not in region", func(c *Catalog) { c.Offers[1].Zone = "us-east-1z" },
			[]string{`offers[1] (aws us-east-1 us-east-1z g4dn.xlarge spot): zone "us-east-1z" is not in region us-east-1`}},
		{"gpu model not normalised", func(c *Catalog) { c.Offers[0].GPUModel = "nvidia-tesla-t4" },
			[]string{`GPU model "nvidia-tesla-t4" is not normalised, want "T4"`}},
		{"gpu model unknown", func(c *Catalog) { c.Offers[0].GPUModel = "A100" },
			[]string{`unknown GPU model "A100"`}},
		{"no gpus", func(c *Catalog) { c.Offers[0].GPUs = 0 },
			[]string{"offers[0] (aws us-east-1 g4dn.xlarge on-demand): 0 GPUs, want at least 1"}},
		{"negative gpus", func(c *Catalog) { c.Offers[0].GPUs = -2 },
			[]string{"-2 GPUs, want at least 1"}},
		{"unknown market", func(c *Catalog) { c.Offers[0].Market = "reserved" },
			[]string{`unknown market "reserved"`}},
		{"duplicate offer", func(c *Catalog) { c.Offers = append(c.Offers, c.Offers[1]) },
			[]string{"offers[3] (aws us-east-1 us-east-1b g4dn.xlarge spot): duplicates offers[1]"}},
		{"duplicate region", func(c *Catalog) { c.Regions = append(c.Regions, c.Regions[0]) },
			[]string{"regions[2] (aws us-east-1): region listed twice"}},
		{"duplicate egress", func(c *Catalog) { c.Egress = append(c.Egress, c.Egress[0]) },
			[]string{"egress[2] (aws): cloud listed twice"}},
		{"every problem at once", func(c *Catalog) {
			c.Offers[0].GPUs = 0
			c.Offers[1].Zone = "us-east-1z"
			c.Offers[2].GPUModel = "L40"
		}, []string{"0 GPUs", `zone "us-east-1z"`, `unknown GPU model "L40"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := smallCatalog()
			tt.change(c)
			err := c.Validate()
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want %q", tt.want)
			}
			problems := strings.Split(err.Error(), "\n")
			if len(problems) != len(tt.want) {
				t.Errorf("Validate() reported %d problems, want %d:\n%v", len(problems), len(tt.want), err)
			}
			for _, fragment := range tt.want {
				if !strings.Contains(err.Error(), fragment) {
					t.Errorf("Validate() = %q, want it to contain %q", err, fragment)
				}
			}
		})
	}
}

func TestReadWriteRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		json []byte
	}{
		{"snapshot", snapshotJSON},
		{"small", func() []byte {
			var buf bytes.Buffer
			if err := smallCatalog().Write(&buf); err != nil {
				t.Fatal(err)
			}
			return buf.Bytes()
		}()},
		{"empty", []byte("{\n  \"source\": \"\",\n  \"fetchedAt\": \"0001-01-01T00:00:00Z\",\n  \"regions\": null,\n  \"offers\": null,\n  \"egress\": null\n}\n")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Read(bytes.NewReader(tt.json))
			if err != nil {
				t.Fatalf("Read: %v", err)
			}
			var out bytes.Buffer
			if err := c.Write(&out); err != nil {
				t.Fatalf("Write: %v", err)
			}
			if !bytes.Equal(out.Bytes(), tt.json) {
				t.Errorf("Write(Read(x)) differs from x:\n%s", firstDifference(out.Bytes(), tt.json))
			}
		})
	}
}

func TestReadPreservesValues(t *testing.T) {
	want := smallCatalog()
	var buf bytes.Buffer
	if err := want.Write(&buf); err != nil {
		t.Fatal(err)
	}
	got, err := Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if got.Source != want.Source || !got.FetchedAt.Equal(want.FetchedAt) ||
		!slices.Equal(got.Offers, want.Offers) || !slices.Equal(got.Egress, want.Egress) ||
		!slices.EqualFunc(got.Regions, want.Regions, regionsEqual) {
		t.Errorf("Read(Write(c)) = %+v, want %+v", got, want)
	}
}

func TestReadRejects(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  string
	}{
		{"not json", "prices", "reading catalog"},
		{"misspelt field", `{"source": "snapshot", "offers": [{"priceMicro": 5}]}`, "unknown field"},
		{"wrong type", `{"offers": [{"gpus": "eight"}]}`, "reading catalog"},
		{"trailing data", `{"source": "snapshot"} {"source": "again"}`, "unexpected data after the catalog"},
		{"empty input", "", "reading catalog"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Read(strings.NewReader(tt.input))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Read(%q) error = %v, want one containing %q", tt.input, err, tt.want)
			}
		})
	}
}

func TestDefaultReturnsIndependentCopies(t *testing.T) {
	first, second := Default(), Default()
	if first == second {
		t.Fatal("Default returned the same pointer twice")
	}

	first.Source = "changed"
	first.Offers[0].PriceMicros = -1
	first.Offers = append(first.Offers[:1], first.Offers[2:]...)
	first.Regions[0].Zones[0] = "changed"
	first.Regions[1].Name = "changed"
	first.Egress[0].InternetMicrosPerGB = 0

	third := Default()
	for name, c := range map[string]*Catalog{"second": second, "third": third} {
		t.Run(name, func(t *testing.T) {
			if c.Source != "snapshot" {
				t.Errorf("Source = %q", c.Source)
			}
			if c.Offers[0].PriceMicros <= 0 || c.Offers[1] == first.Offers[1] {
				t.Error("offers changed through another copy")
			}
			if c.Regions[0].Zones[0] == "changed" || c.Regions[1].Name == "changed" {
				t.Error("regions changed through another copy")
			}
			if c.Egress[0].InternetMicrosPerGB == 0 {
				t.Error("egress changed through another copy")
			}
		})
	}
}

func TestRegion(t *testing.T) {
	c := smallCatalog()
	tests := []struct {
		name          string
		cloud, region string
		ok            bool
	}{
		{"listed", AWS, "us-east-1", true},
		{"other cloud's name", GCP, "us-east-1", false},
		{"missing", AWS, "mars-1", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, ok := c.Region(tt.cloud, tt.region)
			if ok != tt.ok || (ok && (r.Cloud != tt.cloud || r.Name != tt.region)) {
				t.Errorf("Region(%q, %q) = %+v, %v", tt.cloud, tt.region, r, ok)
			}
		})
	}

	r, _ := c.Region(AWS, "us-east-1")
	r.Zones[0] = "changed"
	if c.Regions[0].Zones[0] != "us-east-1a" {
		t.Error("Region shares its zones with the catalog")
	}
}

func TestRegionsOf(t *testing.T) {
	c := Default()
	for _, cloud := range Clouds {
		t.Run(cloud, func(t *testing.T) {
			regions := c.RegionsOf(cloud)
			if len(regions) == 0 {
				t.Fatal("no regions")
			}
			for _, r := range regions {
				if r.Cloud != cloud {
					t.Errorf("region %s belongs to %s", r.Name, r.Cloud)
				}
			}
			if !slices.IsSortedFunc(regions, func(a, b Region) int { return strings.Compare(a.Name, b.Name) }) {
				t.Errorf("regions not sorted by name: %v", regions)
			}
		})
	}
	if regions := c.RegionsOf("oracle"); regions != nil {
		t.Errorf(`RegionsOf("oracle") = %v, want nil`, regions)
	}
}

func TestAge(t *testing.T) {
	c := smallCatalog()
	tests := []struct {
		name string
		now  time.Time
		want time.Duration
	}{
		{"a day later", c.FetchedAt.Add(24 * time.Hour), 24 * time.Hour},
		{"same instant", c.FetchedAt, 0},
		{"clock behind the fetcher", c.FetchedAt.Add(-time.Minute), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := c.Age(tt.now); got != tt.want {
				t.Errorf("Age = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestEgressOf(t *testing.T) {
	c := Default()
	tests := []struct {
		cloud                 string
		interRegion, internet int64
	}{
		{AWS, 20000, 90000},
		{Azure, 20000, 87000},
		{GCP, 20000, 120000},
	}
	for _, tt := range tests {
		t.Run(tt.cloud, func(t *testing.T) {
			e, ok := c.EgressOf(tt.cloud)
			if !ok || e.InterRegionMicrosPerGB != tt.interRegion || e.InternetMicrosPerGB != tt.internet {
				t.Errorf("EgressOf(%q) = %+v, %v", tt.cloud, e, ok)
			}
		})
	}
	if _, ok := c.EgressOf("oracle"); ok {
		t.Error(`EgressOf("oracle") found something`)
	}
}

func TestMicros(t *testing.T) {
	tests := []struct {
		name    string
		dollars float64
		want    int64
	}{
		{"whole cents", 98.32, 98320000},
		{"tenths of a cent", 0.526, 526000},
		{"sum of gcp parts", 9.46 + 33.61, 43070000},
		{"sub-micro rounds down", 0.0000004, 0},
		{"half a micro rounds away from zero", 0.0000005, 1},
		{"negative", -1.2, -1200000},
		{"zero", 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Micros(tt.dollars); got != tt.want {
				t.Errorf("Micros(%v) = %d, want %d", tt.dollars, got, tt.want)
			}
		})
	}
}

func TestFormatMicros(t *testing.T) {
	tests := []struct {
		name   string
		micros int64
		want   string
	}{
		{"cents", 98320000, "$98.32"},
		{"whole dollars", 5000000, "$5.00"},
		{"tenths of a cent", 526000, "$0.526"},
		{"hundredths of a cent", 59100, "$0.0591"},
		{"one micro", 1, "$0.000001"},
		{"zero", 0, "$0.00"},
		{"negative", -1200000, "-$1.20"},
		{"negative fraction", -59100, "-$0.0591"},
		{"large", 123456789000000, "$123456789.00"},
		{"most negative", math.MinInt64, "-$9223372036854.775808"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := FormatMicros(tt.micros); got != tt.want {
				t.Errorf("FormatMicros(%d) = %q, want %q", tt.micros, got, tt.want)
			}
		})
	}
}

func regionsEqual(a, b Region) bool {
	return a.Cloud == b.Cloud && a.Name == b.Name && a.Geo == b.Geo && slices.Equal(a.Zones, b.Zones)
}

// firstDifference shows where two texts part, which a whole-file dump of
// the snapshot would bury.
func firstDifference(got, want []byte) string {
	gotLines, wantLines := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := range min(len(gotLines), len(wantLines)) {
		if gotLines[i] != wantLines[i] {
			return fmt.Sprintf("line %d:\n got: %s\nwant: %s", i+1, gotLines[i], wantLines[i])
		}
	}
	return fmt.Sprintf("got %d lines, want %d", len(gotLines), len(wantLines))
}

func TestMoney(t *testing.T) {
	tests := []struct {
		micros int64
		want   string
	}{
		{0, "$0.00"},
		{68_000, "$0.068"},
		{500_000, "$0.50"},
		{535_714, "$0.536"},
		{999_600, "$1.00"},
		{1_000_000, "$1.00"},
		{92_983_856, "$92.98"},
		{92_985_000, "$92.99"},
		{-2_480_000, "-$2.48"},
		{-68_000, "-$0.068"},
	}
	for _, tt := range tests {
		if got := Money(tt.micros); got != tt.want {
			t.Errorf("Money(%d) = %q, want %q", tt.micros, got, tt.want)
		}
	}
}

// The fetchedAt read from the start of a catalog is the one the whole
// catalog says, wherever among its fields it comes.
func TestFetchedAtIsTheCatalogs(t *testing.T) {
	if got, want := SnapshotFetchedAt(), Default().FetchedAt; !got.Equal(want) {
		t.Errorf("SnapshotFetchedAt() = %v, the snapshot says %v", got, want)
	}
	at := time.Date(2026, 10, 1, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name, json string
		want       time.Time
		err        string
	}{
		{name: "second", json: `{"source": "x", "fetchedAt": "2026-10-01T12:00:00Z", "offers": []}`, want: at},
		{name: "after nested values", json: `{"regions": [{"zones": ["a", {"fetchedAt": "2020-01-01T00:00:00Z"}]}], "fetchedAt": "2026-10-01T12:00:00Z"}`, want: at},
		{name: "missing", json: `{"source": "x"}`, err: "no fetchedAt"},
		{name: "not a time", json: `{"fetchedAt": 3}`, err: "fetchedAt"},
		{name: "not an object", json: `[]`, err: "not an object"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := fetchedAt([]byte(tt.json))
			switch {
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
				t.Errorf("error %v, want one saying %q", err, tt.err)
			case tt.err == "" && (err != nil || !got.Equal(tt.want)):
				t.Errorf("got %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}
