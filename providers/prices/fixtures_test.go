// SPDX-License-Identifier: Apache-2.0

package prices

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/gpufleet/gpufleet/providers/aws"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// The recorded pages of each API, parsed into exactly these offers. The
// rows that are quirks are listed in testdata/prices/README.md and
// checked one by one in TestQuirks.

func loadAWSFixtures(t *testing.T) (*catalog.Catalog, *drops, *requestLog) {
	t.Helper()
	srv, log := awsFixtureServer(t)
	dropped := &drops{}
	loader, err := NewAWS(context.Background(), AWSOptions{
		Options: Options{
			Regions:  []string{"us-east-1"},
			Endpoint: srv.URL,
			Now:      func() time.Time { return fixtureNow },
			OnDrop:   dropped.add,
			Retry:    Retry{Max: -1},
			// With retries off, the SDK's own race on its request bodies
			// against a loopback server this quick would fail the test at
			// random (see aws.LoopbackHTTPClient).
			HTTPClient: aws.LoopbackHTTPClient(),
		},
		SpotEndpoint: srv.URL,
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDFIXTURE", "secret", ""),
	})
	if err != nil {
		t.Fatal(err)
	}
	cat, err := loader.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return cat, dropped, log
}

func TestAWSFixtures(t *testing.T) {
	cat, dropped, log := loadAWSFixtures(t)

	const aws = catalog.AWS
	od, spot := catalog.OnDemand, catalog.Spot
	want := []catalog.Offer{
		offer(aws, "us-east-1", "", "g4dn.xlarge", od, "T4", 1, 4, 16, 526_000),
		offer(aws, "us-east-1", "", "g6.12xlarge", od, "L4", 4, 48, 192, 4_601_600),
		// V100 is a model gpufleet knows: the family names it.
		offer(aws, "us-east-1", "", "p3.2xlarge", od, "V100", 1, 8, 61, 3_060_000),
		offer(aws, "us-east-1", "", "p4d.24xlarge", od, "A100-40GB", 8, 96, 1152, 32_772_600),
		offer(aws, "us-east-1", "", "p4de.24xlarge", od, "A100-80GB", 8, 96, 1152, 40_965_700),
		offer(aws, "us-east-1", "", "p5.48xlarge", od, "H100", 8, 192, 2048, 98_320_000),
		// The same price in all six zones: one regional offer.
		offer(aws, "us-east-1", "", "p5.48xlarge", spot, "H100", 8, 192, 2048, 30_330_000),
		offer(aws, "us-east-1", "us-east-1a", "g4dn.xlarge", spot, "T4", 1, 4, 16, 201_000),
		offer(aws, "us-east-1", "us-east-1a", "g6.12xlarge", spot, "L4", 4, 48, 192, 1_600_000),
		offer(aws, "us-east-1", "us-east-1a", "p4d.24xlarge", spot, "A100-40GB", 8, 96, 1152, 6_790_000),
		offer(aws, "us-east-1", "us-east-1a", "p4de.24xlarge", spot, "A100-80GB", 8, 96, 1152, 45_000_000),
		offer(aws, "us-east-1", "us-east-1b", "g4dn.xlarge", spot, "T4", 1, 4, 16, 210_000),
		offer(aws, "us-east-1", "us-east-1b", "p4d.24xlarge", spot, "A100-40GB", 8, 96, 1152, 6_790_000),
		offer(aws, "us-east-1", "us-east-1c", "g4dn.xlarge", spot, "T4", 1, 4, 16, 201_000),
	}
	diffOffers(t, cat.Offers, want)
	diffStrings(t, "drops", dropped.keys(), []string{
		"us-east-1 - g4dn.xlarge on-demand: duplicate row",
		"us-east-1 - g5.12xlarge on-demand: no price",
		"us-east-1 - g6.2xlarge on-demand: implausible price",
		"us-east-1 - g6e.2xlarge on-demand: placeholder price",
		"us-east-1 - g6e.48xlarge on-demand: no price",
		"us-east-1 - p4d.24xlarge on-demand: duplicate row",
		"us-east-1 us-east-1a g6.12xlarge spot: duplicate row",
		"us-east-1 us-east-1b g6.12xlarge spot: placeholder price",
		"us-east-1 us-east-1z g4dn.xlarge spot: zone not in the catalog",
	})
	checkCatalog(t, cat, aws, []string{"us-east-1"})

	// Both pages of both APIs were read, with the filters cloud-apis.md
	// lists.
	filters := "GetProducts AmazonEC2 TERM_MATCH capacitystatus=Used, TERM_MATCH operatingSystem=Linux, TERM_MATCH preInstalledSw=NA, TERM_MATCH productFamily=Compute Instance, TERM_MATCH regionCode=us-east-1, TERM_MATCH tenancy=Shared"
	spotCall := "DescribeSpotPriceHistory Linux/UNIX start=true"
	diffStrings(t, "requests", log.all(), []string{filters, filters, spotCall, spotCall})
}

func loadAzureFixtures(t *testing.T) (*catalog.Catalog, *drops, *requestLog) {
	t.Helper()
	srv, log := azureFixtureServer(t)
	dropped := &drops{}
	loader, err := NewAzure(Options{
		Regions:  []string{"eastus"},
		Endpoint: srv.URL,
		Now:      func() time.Time { return fixtureNow },
		OnDrop:   dropped.add,
		Retry:    Retry{Max: -1},
	})
	if err != nil {
		t.Fatal(err)
	}
	cat, err := loader.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return cat, dropped, log
}

func TestAzureFixtures(t *testing.T) {
	cat, dropped, log := loadAzureFixtures(t)

	const azure = catalog.Azure
	od, spot := catalog.OnDemand, catalog.Spot
	// The Retail Prices API prices a size by name and says nothing of
	// its GPUs, vCPUs or memory: those are the catalog's.
	sized := func(instanceType string, market catalog.Market, micros int64) catalog.Offer {
		s := knownShape(t, azure, instanceType)
		return offer(azure, "eastus", "", instanceType, market, s.GPUModel, s.GPUs, s.VCPUs, s.MemoryGiB, micros)
	}
	want := []catalog.Offer{
		sized("Standard_NC24ads_A100_v4", od, 3_700_000),
		sized("Standard_NC40ads_H100_v5", od, 6_980_000),
		sized("Standard_NC40ads_H100_v5", spot, 7_500_000),
		sized("Standard_NC4as_T4_v3", od, 526_000),
		sized("Standard_NC4as_T4_v3", spot, 52_600),
		sized("Standard_ND96amsr_A100_v4", spot, 3_600_000),
		sized("Standard_ND96asr_v4", od, 27_197_000),
		sized("Standard_ND96isr_H100_v5", od, 98_320_000),
		sized("Standard_NV36ads_A10_v5", od, 3_200_000),
	}
	diffOffers(t, cat.Offers, want)
	diffStrings(t, "drops", dropped.keys(), []string{
		"eastus - Standard_NC24ads_A100_v4 on-demand: duplicate row",
		"eastus - Standard_NC24ads_A100_v4 spot: no price",
		"eastus - Standard_NC4as_T4_v3 on-demand: implausible price",
		"eastus - Standard_ND96amsr_A100_v4 on-demand: placeholder price",
		"eastus - Standard_ND96asr_v4 on-demand: duplicate row",
		"eastus - Standard_NV36ads_A10_v5 spot: not per hour",
	})
	checkCatalog(t, cat, azure, []string{"eastus"})

	filter := "/api/retail/prices 2023-01-01-preview serviceName eq 'Virtual Machines' and priceType eq 'Consumption' and armRegionName eq 'eastus'"
	diffStrings(t, "requests", log.all(), []string{filter, filter})
}

const fixtureKey = "AIzaSyFIXTURE-not-a-real-key"

func loadGCPFixtures(t *testing.T) (*catalog.Catalog, *drops, *requestLog) {
	t.Helper()
	srv, log := gcpFixtureServer(t, fixtureKey)
	dropped := &drops{}
	loader, err := NewGCP(GCPOptions{
		Options: Options{
			Regions:  []string{"us-central1", "europe-west4"},
			Known:    knownOnly(t, catalog.GCP, gcpFixtureMachines),
			Endpoint: srv.URL,
			Now:      func() time.Time { return fixtureNow },
			OnDrop:   dropped.add,
			Retry:    Retry{Max: -1},
		},
		APIKey: fixtureKey,
	})
	if err != nil {
		t.Fatal(err)
	}
	cat, err := loader.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return cat, dropped, log
}

func TestGCPFixtures(t *testing.T) {
	cat, dropped, log := loadGCPFixtures(t)

	const gcp = catalog.GCP
	od, spot := catalog.OnDemand, catalog.Spot
	// Each price is vCPUs × core + GiB × RAM + GPUs × GPU, from the SKUs'
	// unit prices: a2-highgpu-1g in us-central1 is 12 × 0.031611 + 85 ×
	// 0.004237 + 1 × 2.933908 = 3.673385.
	want := []catalog.Offer{
		offer(gcp, "europe-west4", "", "a2-highgpu-1g", od, "A100-40GB", 1, 12, 85, 3_966_777),
		offer(gcp, "europe-west4", "", "a2-highgpu-4g", od, "A100-40GB", 4, 48, 340, 15_867_108),
		offer(gcp, "europe-west4", "", "a2-highgpu-8g", od, "A100-40GB", 8, 96, 680, 31_734_216),
		offer(gcp, "us-central1", "", "a2-highgpu-1g", od, "A100-40GB", 1, 12, 85, 3_673_385),
		offer(gcp, "us-central1", "", "a2-highgpu-4g", od, "A100-40GB", 4, 48, 340, 14_693_540),
		offer(gcp, "us-central1", "", "a2-highgpu-8g", od, "A100-40GB", 8, 96, 680, 29_387_080),
		offer(gcp, "us-central1", "", "a3-highgpu-8g", od, "H100", 8, 208, 1872, 43_290_528),
		offer(gcp, "us-central1", "", "a3-highgpu-8g", spot, "H100", 8, 208, 1872, 20_249_968),
		offer(gcp, "us-central1", "", "g2-standard-4", od, "L4", 1, 4, 16, 726_800),
		offer(gcp, "us-central1", "", "g2-standard-4", spot, "L4", 1, 4, 16, 958_680),
		offer(gcp, "us-central1", "", "g2-standard-48", od, "L4", 4, 48, 192, 4_081_600),
		offer(gcp, "us-central1", "", "g2-standard-48", spot, "L4", 4, 48, 192, 4_304_160),
	}
	diffOffers(t, cat.Offers, want)
	diffStrings(t, "drops", dropped.keys(), []string{
		"europe-west4 - - on-demand: not per hour",
		"europe-west4 - - on-demand: placeholder price",
		"europe-west4 - a3-highgpu-8g on-demand: incomplete machine price",
		// Its memory SKU there is monthly, and dropped.
		"europe-west4 - g2-standard-4 on-demand: incomplete machine price",
		"europe-west4 - g2-standard-48 on-demand: incomplete machine price",
		"us-central1 - - on-demand: duplicate row",
		"us-central1 - - on-demand: no price",
		"us-central1 - a2-ultragpu-1g on-demand: incomplete machine price",
		"us-central1 - a2-ultragpu-8g on-demand: incomplete machine price",
	})
	checkCatalog(t, cat, gcp, []string{"europe-west4", "us-central1"})

	page := "/v1/services/6F81-5844-456A/skus pageSize=5000 key=true"
	diffStrings(t, "requests", log.all(), []string{page, page})
}

// checkCatalog checks what every loader's catalog must be: of one cloud,
// fetched now, listing the regions priced as the embedded catalog has
// them, and valid.
func checkCatalog(t *testing.T, cat *catalog.Catalog, cloud string, regions []string) {
	t.Helper()
	if cat.Source != cloud || !cat.FetchedAt.Equal(fixtureNow) {
		t.Errorf("source %q fetched %s, want %q at %s", cat.Source, cat.FetchedAt, cloud, fixtureNow)
	}
	var got []string
	for _, r := range cat.Regions {
		known, _ := catalog.Default().Region(cloud, r.Name)
		if r.Cloud != cloud || !slices.Equal(r.Zones, known.Zones) || r.Geo != known.Geo {
			t.Errorf("region %+v, want the catalog's %+v", r, known)
		}
		got = append(got, r.Name)
	}
	diffStrings(t, "regions", got, regions)
	if err := cat.Validate(); err != nil {
		t.Errorf("the catalog is invalid: %v", err)
	}
	if len(cat.Egress) != 1 || cat.Egress[0].Cloud != cloud {
		t.Errorf("egress %+v, want the cloud's own", cat.Egress)
	}
}

// TestQuirks checks, quirk by quirk, what the fixtures' odd rows become.
// Each names the row in testdata/prices that carries it.
func TestQuirks(t *testing.T) {
	awsCat, awsDrops, _ := loadAWSFixtures(t)
	azureCat, azureDrops, _ := loadAzureFixtures(t)
	gcpCat, gcpDrops, _ := loadGCPFixtures(t)
	type result struct {
		cat   *catalog.Catalog
		drops *drops
	}
	results := map[string]result{
		catalog.AWS:   {awsCat, awsDrops},
		catalog.Azure: {azureCat, azureDrops},
		catalog.GCP:   {gcpCat, gcpDrops},
	}

	find := func(cat *catalog.Catalog, region, zone, instanceType string, market catalog.Market) (catalog.Offer, bool) {
		for _, o := range cat.Offers {
			if o.Region == region && o.Zone == zone && o.InstanceType == instanceType && o.Market == market {
				return o, true
			}
		}
		return catalog.Offer{}, false
	}
	dropped := func(d *drops, reason string, match func(Drop) bool) []Drop {
		d.mu.Lock()
		defer d.mu.Unlock()
		var out []Drop
		for _, x := range d.all {
			if x.Reason == reason && match(x) {
				out = append(out, x)
			}
		}
		return out
	}
	of := func(instanceType string, market catalog.Market) func(Drop) bool {
		return func(d Drop) bool { return d.InstanceType == instanceType && d.Market == market }
	}

	tests := []struct {
		name  string
		cloud string
		check func(t *testing.T, r result)
	}{
		{"empty on-demand price string is dropped (g5.12xlarge USD \"\")", catalog.AWS, func(t *testing.T, r result) {
			if _, ok := find(r.cat, "us-east-1", "", "g5.12xlarge", catalog.OnDemand); ok {
				t.Error("g5.12xlarge has an offer")
			}
			if len(dropped(r.drops, ReasonNoPrice, of("g5.12xlarge", catalog.OnDemand))) != 1 {
				t.Error("not dropped as no price")
			}
		}},
		{"a product without an OnDemand term is dropped (g6e.48xlarge)", catalog.AWS, func(t *testing.T, r result) {
			if len(dropped(r.drops, ReasonNoPrice, of("g6e.48xlarge", catalog.OnDemand))) != 1 {
				t.Error("not dropped as no price")
			}
		}},
		{"empty retailPrice is dropped (NC24ads_A100_v4 Spot)", catalog.Azure, func(t *testing.T, r result) {
			if _, ok := find(r.cat, "eastus", "", "Standard_NC24ads_A100_v4", catalog.Spot); ok {
				t.Error("spot offer from a row with no price")
			}
			if len(dropped(r.drops, ReasonNoPrice, of("Standard_NC24ads_A100_v4", catalog.Spot))) != 1 {
				t.Error("not dropped as no price")
			}
		}},
		{"a SKU without tiered rates is dropped and its machines with it (A100 80GB)", catalog.GCP, func(t *testing.T, r result) {
			if len(dropped(r.drops, ReasonNoPrice, func(d Drop) bool { return strings.Contains(d.Detail, "Nvidia A100 80GB GPU") })) != 1 {
				t.Error("the SKU is not dropped as no price")
			}
			// In us-central1, where the SKU names them; not in
			// europe-west4, which only A2's shared cores reach.
			if n := len(dropped(r.drops, ReasonIncomplete, func(d Drop) bool { return strings.HasPrefix(d.InstanceType, "a2-ultragpu") })); n != 2 {
				t.Errorf("%d a2-ultragpu machines dropped as incomplete, want 2 (two sizes in us-central1)", n)
			}
		}},
		{"a zero placeholder is dropped (g6e.2xlarge 0.0000000000)", catalog.AWS, func(t *testing.T, r result) {
			if len(dropped(r.drops, ReasonPlaceholder, of("g6e.2xlarge", catalog.OnDemand))) != 1 {
				t.Error("not dropped as a placeholder")
			}
		}},
		{"a zero spot price in one zone is dropped, the others stay (g6.12xlarge us-east-1b)", catalog.AWS, func(t *testing.T, r result) {
			if _, ok := find(r.cat, "us-east-1", "us-east-1b", "g6.12xlarge", catalog.Spot); ok {
				t.Error("offer at a zero price")
			}
			if _, ok := find(r.cat, "us-east-1", "us-east-1a", "g6.12xlarge", catalog.Spot); !ok {
				t.Error("the priced zone lost its offer")
			}
		}},
		{"retailPrice 0 is dropped (ND96amsr_A100_v4)", catalog.Azure, func(t *testing.T, r result) {
			if len(dropped(r.drops, ReasonPlaceholder, of("Standard_ND96amsr_A100_v4", catalog.OnDemand))) != 1 {
				t.Error("not dropped as a placeholder")
			}
			// Its spot row is real, and stays.
			if _, ok := find(r.cat, "eastus", "", "Standard_ND96amsr_A100_v4", catalog.Spot); !ok {
				t.Error("the spot offer went with it")
			}
		}},
		{"a zero GPU price is dropped and the machine is incomplete (H100 in EMEA)", catalog.GCP, func(t *testing.T, r result) {
			if len(dropped(r.drops, ReasonPlaceholder, func(d Drop) bool { return d.Region == "europe-west4" })) != 1 {
				t.Error("the zero SKU is not dropped as a placeholder")
			}
			if _, ok := find(r.cat, "europe-west4", "", "a3-highgpu-8g", catalog.OnDemand); ok {
				t.Error("a3-highgpu-8g priced without its GPUs")
			}
		}},
		{"an absurd price is dropped (g6.2xlarge at $999999)", catalog.AWS, func(t *testing.T, r result) {
			if len(dropped(r.drops, ReasonImplausible, of("g6.2xlarge", catalog.OnDemand))) != 1 {
				t.Error("not dropped as implausible")
			}
		}},
		{"an absurd duplicate does not win (NC4as_T4_v3 at $52600)", catalog.Azure, func(t *testing.T, r result) {
			o, ok := find(r.cat, "eastus", "", "Standard_NC4as_T4_v3", catalog.OnDemand)
			if !ok || o.PriceMicros != 526_000 {
				t.Errorf("offer %+v, want the plausible $0.526", o)
			}
		}},
		{"spot above on-demand is kept (p4de.24xlarge $45 spot, $40.97 on-demand)", catalog.AWS, func(t *testing.T, r result) {
			s, sok := find(r.cat, "us-east-1", "us-east-1a", "p4de.24xlarge", catalog.Spot)
			o, ook := find(r.cat, "us-east-1", "", "p4de.24xlarge", catalog.OnDemand)
			if !sok || !ook || s.PriceMicros <= o.PriceMicros {
				t.Errorf("spot %+v, on-demand %+v: want both, spot dearer", s, o)
			}
		}},
		{"spot above on-demand is kept (NC40ads_H100_v5 $7.50 spot)", catalog.Azure, func(t *testing.T, r result) {
			s, sok := find(r.cat, "eastus", "", "Standard_NC40ads_H100_v5", catalog.Spot)
			o, ook := find(r.cat, "eastus", "", "Standard_NC40ads_H100_v5", catalog.OnDemand)
			if !sok || !ook || s.PriceMicros <= o.PriceMicros {
				t.Errorf("spot %+v, on-demand %+v: want both, spot dearer", s, o)
			}
		}},
		{"spot above on-demand is kept (g2-standard-4, L4 Spot GPU dearer)", catalog.GCP, func(t *testing.T, r result) {
			s, sok := find(r.cat, "us-central1", "", "g2-standard-4", catalog.Spot)
			o, ook := find(r.cat, "us-central1", "", "g2-standard-4", catalog.OnDemand)
			if !sok || !ook || s.PriceMicros <= o.PriceMicros {
				t.Errorf("spot %+v, on-demand %+v: want both, spot dearer", s, o)
			}
		}},
		{"duplicate products at one price collapse (g4dn.xlarge, two SKUs)", catalog.AWS, func(t *testing.T, r result) {
			o, ok := find(r.cat, "us-east-1", "", "g4dn.xlarge", catalog.OnDemand)
			if !ok || o.PriceMicros != 526_000 {
				t.Errorf("offer %+v", o)
			}
			d := dropped(r.drops, ReasonDuplicate, of("g4dn.xlarge", catalog.OnDemand))
			// Deterministic: the SKU first by name is kept.
			if len(d) != 1 || d[0].Row != "H8AQHUMKVRQ7ASQ9" {
				t.Errorf("dropped %+v, want SKU H8AQHUMKVRQ7ASQ9 (A7X9PNHC4JFJ7ZTQ kept)", d)
			}
		}},
		{"duplicate products at two prices keep the higher (p4d.24xlarge)", catalog.AWS, func(t *testing.T, r result) {
			o, _ := find(r.cat, "us-east-1", "", "p4d.24xlarge", catalog.OnDemand)
			if o.PriceMicros != 32_772_600 {
				t.Errorf("price %d, want the higher 32772600", o.PriceMicros)
			}
		}},
		{"duplicate spot rows of one moment keep the higher (g6.12xlarge us-east-1a)", catalog.AWS, func(t *testing.T, r result) {
			o, _ := find(r.cat, "us-east-1", "us-east-1a", "g6.12xlarge", catalog.Spot)
			if o.PriceMicros != 1_600_000 {
				t.Errorf("price %d, want the higher 1600000", o.PriceMicros)
			}
		}},
		{"an older spot price is history, not a duplicate (p4d.24xlarge us-east-1a)", catalog.AWS, func(t *testing.T, r result) {
			o, _ := find(r.cat, "us-east-1", "us-east-1a", "p4d.24xlarge", catalog.Spot)
			if o.PriceMicros != 6_790_000 {
				t.Errorf("price %d, want the latest 6790000", o.PriceMicros)
			}
			if d := dropped(r.drops, ReasonDuplicate, of("p4d.24xlarge", catalog.Spot)); len(d) != 0 {
				t.Errorf("dropped %+v", d)
			}
		}},
		{"duplicate rows keep the higher (ND96asr_v4 same price, NC24ads_A100_v4 two prices)", catalog.Azure, func(t *testing.T, r result) {
			if o, _ := find(r.cat, "eastus", "", "Standard_ND96asr_v4", catalog.OnDemand); o.PriceMicros != 27_197_000 {
				t.Errorf("ND96asr_v4 price %d", o.PriceMicros)
			}
			if o, _ := find(r.cat, "eastus", "", "Standard_NC24ads_A100_v4", catalog.OnDemand); o.PriceMicros != 3_700_000 {
				t.Errorf("NC24ads_A100_v4 price %d, want the higher 3700000", o.PriceMicros)
			}
		}},
		{"duplicate SKUs for one part keep the higher (L4 $0.5601 and $0.58)", catalog.GCP, func(t *testing.T, r result) {
			if o, _ := find(r.cat, "us-central1", "", "g2-standard-4", catalog.OnDemand); o.PriceMicros != 726_800 {
				t.Errorf("g2-standard-4 price %d, want 726800 (with the $0.58 GPU)", o.PriceMicros)
			}
		}},
		{"the same spot price in every zone is one regional offer (p5.48xlarge)", catalog.AWS, func(t *testing.T, r result) {
			for _, o := range r.cat.Offers {
				if o.InstanceType == "p5.48xlarge" && o.Market == catalog.Spot && o.Zone != "" {
					t.Errorf("zonal offer %+v", o)
				}
			}
		}},
		{"prices that differ by zone, or cover some zones, stay zonal (g4dn.xlarge)", catalog.AWS, func(t *testing.T, r result) {
			if _, ok := find(r.cat, "us-east-1", "", "g4dn.xlarge", catalog.Spot); ok {
				t.Error("a regional spot offer for zones that differ")
			}
			for _, zone := range []string{"us-east-1a", "us-east-1b", "us-east-1c"} {
				if _, ok := find(r.cat, "us-east-1", zone, "g4dn.xlarge", catalog.Spot); !ok {
					t.Errorf("no offer in %s", zone)
				}
			}
		}},
		{"a zone the catalog does not list is dropped (us-east-1z)", catalog.AWS, func(t *testing.T, r result) {
			if len(dropped(r.drops, ReasonUnknownZone, func(d Drop) bool { return d.Zone == "us-east-1z" })) != 1 {
				t.Error("not dropped")
			}
		}},
		{"a region-wide SKU prices each region it lists (A2 cores)", catalog.GCP, func(t *testing.T, r result) {
			for _, region := range []string{"us-central1", "europe-west4"} {
				if _, ok := find(r.cat, region, "", "a2-highgpu-8g", catalog.OnDemand); !ok {
					t.Errorf("no a2-highgpu-8g in %s", region)
				}
			}
		}},
		{"A100 memory decides the model (p4d 320 GB, p4de 640 GB)", catalog.AWS, func(t *testing.T, r result) {
			p4d, _ := find(r.cat, "us-east-1", "", "p4d.24xlarge", catalog.OnDemand)
			p4de, _ := find(r.cat, "us-east-1", "", "p4de.24xlarge", catalog.OnDemand)
			if p4d.GPUModel != "A100-40GB" || p4de.GPUModel != "A100-80GB" {
				t.Errorf("p4d %s, p4de %s", p4d.GPUModel, p4de.GPUModel)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.cloud+"/"+tt.name, func(t *testing.T) { tt.check(t, results[tt.cloud]) })
	}
}

// knownShape is the embedded catalog's offer of an instance type, for its
// GPUs, vCPUs and memory, which some price APIs leave to the catalog.
func knownShape(t *testing.T, cloud, instanceType string) catalog.Offer {
	t.Helper()
	for _, o := range catalog.Default().Offers {
		if o.Cloud == cloud && o.InstanceType == instanceType {
			return o
		}
	}
	t.Fatalf("the embedded catalog has no %s %s", cloud, instanceType)
	return catalog.Offer{}
}

// gcpFixtureMachines are the GCP machine types the fixtures were written
// for. The GCP loader prices every machine type its catalog knows, from
// part prices; the fixtures' catalog knows these, whatever sizes the
// embedded snapshot lists.
var gcpFixtureMachines = []string{
	"a2-highgpu-1g", "a2-highgpu-4g", "a2-highgpu-8g", "a2-ultragpu-1g", "a2-ultragpu-8g",
	"a3-highgpu-8g", "g2-standard-4", "g2-standard-48",
}

// knownOnly is the embedded catalog with only these instance types of a
// cloud.
func knownOnly(t *testing.T, cloud string, types []string) *catalog.Catalog {
	t.Helper()
	known := catalog.Default()
	var offers []catalog.Offer
	for _, o := range known.Offers {
		if o.Cloud != cloud || slices.Contains(types, o.InstanceType) {
			offers = append(offers, o)
		}
	}
	known.Offers = offers
	for _, it := range types {
		if !slices.ContainsFunc(offers, func(o catalog.Offer) bool { return o.Cloud == cloud && o.InstanceType == it }) {
			t.Fatalf("the embedded catalog has no %s %s", cloud, it)
		}
	}
	return known
}

// A3 Mega's GPUs are billed under a SKU of their own, "Nvidia H100 80GB
// Mega GPU", with A3 Mega's cores and memory: a3-megagpu-8g in us-central1
// is 208 × 0.038 + 1872 × 0.0051 + 8 × 4.40 = 52.6512.
func TestGCPPricesA3MegaByItsOwnGPUSKU(t *testing.T) {
	srv, _ := gcpFixtureServer(t, fixtureKey)
	dropped := &drops{}
	loader, err := NewGCP(GCPOptions{
		Options: Options{
			Regions:  []string{"us-central1"},
			Known:    knownOnly(t, catalog.GCP, []string{"a3-megagpu-8g"}),
			Endpoint: srv.URL,
			Now:      func() time.Time { return fixtureNow },
			OnDrop:   dropped.add,
			Retry:    Retry{Max: -1},
		},
		APIKey: fixtureKey,
	})
	if err != nil {
		t.Fatal(err)
	}
	cat, err := loader.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	s := knownShape(t, catalog.GCP, "a3-megagpu-8g")
	if s.VCPUs != 208 || s.MemoryGiB != 1872 || s.GPUs != 8 {
		t.Fatalf("the catalog's a3-megagpu-8g is %d vCPUs, %g GiB and %d GPUs; the sum above is of 208, 1872 and 8", s.VCPUs, s.MemoryGiB, s.GPUs)
	}
	want := []catalog.Offer{offer(catalog.GCP, "us-central1", "", "a3-megagpu-8g", catalog.OnDemand, "H100", 8, 208, 1872, 52_651_200)}
	diffOffers(t, cat.Offers, want)
	for _, d := range dropped.all {
		if d.InstanceType == "a3-megagpu-8g" {
			t.Errorf("dropped %+v", d)
		}
	}
}

// AWS names p3 and p3dn GPUs alike, "V100"; the memory tells the 16GB part
// from the 32GB one, as it does the two A100s.
func TestAWSGPUMemoryTellsV100sApart(t *testing.T) {
	a := &AWS{b: &base{shapes: map[string]shape{}}}
	for _, tt := range []struct {
		instanceType, gpus, gpuMemory, want string
	}{
		{"p3.2xlarge", "1", "16 GB", "V100"},
		{"p3.16xlarge", "8", "128 GB", "V100"},
		{"p3dn.24xlarge", "8", "256 GB", "V100-32GB"},
		{"p4d.24xlarge", "8", "320 GB", "A100-40GB"},
		{"p4de.24xlarge", "8", "640 GB", "A100-80GB"},
		{"p5.48xlarge", "8", "640 GB", "H100"},
		{"g6.12xlarge", "4", "NA", "L4"},
	} {
		s, reason, detail := a.spec(tt.instanceType, map[string]string{"gpu": tt.gpus, "gpuMemory": tt.gpuMemory, "vcpu": "8", "memory": "61 GiB"})
		if reason != "" || s.gpuModel != tt.want {
			t.Errorf("%s with %s of GPU memory: %q (%s %s), want %s", tt.instanceType, tt.gpuMemory, s.gpuModel, reason, detail, tt.want)
		}
	}
}
