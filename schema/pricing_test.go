// SPDX-License-Identifier: Apache-2.0

package schema

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpufleet/gpufleet/schema/catalog"
)

func ptr(f float64) *float64 { return &f }

// The most specific term covering the market prices a node-hour, and
// replaces the others: a type's private price beats its family's discount,
// which beats the cloud's; a term that leaves spot out leaves spot to the
// next term that covers it.
func TestAccountPriceTakesTheMostSpecificTerm(t *testing.T) {
	pricing := Pricing{AWS: &CloudPricing{
		Discount: ptr(12),
		Markets:  []catalog.Market{catalog.OnDemand, catalog.Spot},
		Families: map[string]PriceTerm{"p5": {Discount: ptr(20), Markets: []catalog.Market{catalog.OnDemand}}},
		Types: map[string]PriceTerm{
			"p5.48xlarge": {Price: ptr(50)},
			"g6.2xlarge":  {Discount: ptr(12.5)},
		},
	}, GCP: &CloudPricing{Discount: ptr(30), Markets: []catalog.Market{catalog.OnDemand}}}
	const list = 60_000_000
	tests := []struct {
		name         string
		cloud, typ   string
		market       catalog.Market
		want         int64
		discount     int64
		privatePrice bool
	}{
		{"type's private price", "aws", "p5.48xlarge", catalog.OnDemand, 50_000_000, 0, true},
		{"type's private price on the cloud's markets", "aws", "p5.48xlarge", catalog.Spot, 50_000_000, 0, true},
		{"family's discount", "aws", "p5e.48xlarge", catalog.OnDemand, 60_000_000 * 88 / 100, 120_000, false}, // p5e is a family of its own
		{"family's discount on its own market", "aws", "p5.4xlarge", catalog.OnDemand, 48_000_000, 200_000, false},
		{"family leaves spot to the cloud", "aws", "p5.4xlarge", catalog.Spot, 52_800_000, 120_000, false},
		{"type's discount, in fractions of a percent", "aws", "g6.2xlarge", catalog.OnDemand, 52_500_000, 125_000, false},
		{"cloud's discount", "aws", "g5.12xlarge", catalog.OnDemand, 52_800_000, 120_000, false},
		{"cloud's discount leaves spot at list", "gcp", "a3-highgpu-8g", catalog.Spot, list, 0, false},
		{"cloud's discount on on-demand", "gcp", "a3-highgpu-8g", catalog.OnDemand, 42_000_000, 300_000, false},
		{"no terms", "azure", "Standard_ND96isr_H100_v5", catalog.OnDemand, list, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := pricing.Price(tt.cloud, tt.typ, tt.market, list)
			if got.Micros != tt.want || got.DiscountPPM != tt.discount || got.Private != tt.privatePrice {
				t.Errorf("Price = %+v, want %d micros, discount %d ppm, private %v", got, tt.want, tt.discount, tt.privatePrice)
			}
		})
	}
	if got := pricing.Price("aws", "g5.12xlarge", catalog.OnDemand, 0); got.Micros != 0 || got.DiscountPPM != 0 {
		t.Errorf("an unknown list price became %+v: a term cannot price what has no price", got)
	}
	// Rounding is half up, in integers: $0.333333 × 0.88 = $0.29333304.
	if got := pricing.Price("aws", "g5.12xlarge", catalog.OnDemand, 333_333).Micros; got != 293_333 {
		t.Errorf("discounted $0.333333 = %d micros, want 293333", got)
	}
}

// Account prices that cannot be an account's are refused with the file,
// line and field, and a type or family the catalog does not sell with the
// names it may have meant.
func TestPricingBadInput(t *testing.T) {
	cat := catalog.Default()
	var p5 string
	for _, o := range cat.Offers {
		if o.Cloud == catalog.AWS && strings.HasPrefix(o.InstanceType, "p5.") {
			p5 = o.InstanceType
			break
		}
	}
	if p5 == "" {
		t.Fatal("the catalog has no aws p5 type to test with")
	}
	config := fmt.Sprintf(`package gpufleet

gpufleet: clouds: aws: regions: ["us-east-1"]
gpufleet: pricing: aws: {
	discount: 120
	markets: []
	types: %[1]q: {price: -1}
	types: %[2]q: {discount: 10}
	families: P5: {discount: 10}
	families: p5: {price: 30}
}
gpufleet: pricing: gcp: discount: 0
gpufleet: pricing: azure: discount: 100
`, p5, p5[:len(p5)-1])
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "gpufleet.cue"), []byte(config))
	got := loadErrors(t, dir)
	for _, want := range []string{
		"gpufleet.cue:5:12: gpufleet.pricing.aws.discount: a discount is a percentage off the list price, above 0 and below 100 (12 for 12 % off); 120 is not one",
		"gpufleet.cue:6:2: gpufleet.pricing.aws.markets: no market is named",
		fmt.Sprintf("gpufleet.cue:7:%d: gpufleet.pricing.aws.types.%q.price: a private price is US$ per node-hour, above 0 and below 10000; -1 is not one", 21+len(p5), p5),
		fmt.Sprintf("gpufleet.cue:8:9: gpufleet.pricing.aws.types.%q: the catalog has no aws type %[1]q: did you mean %q", p5[:len(p5)-1], p5),
		"gpufleet.cue:9:12: gpufleet.pricing.aws.families.P5: the catalog has no aws family \"P5\": did you mean \"p5\"",
		"gpufleet.cue:10:24: gpufleet.pricing.aws.families.p5.price: a private price is per node-hour of one type",
		"gpufleet.cue:12:35: gpufleet.pricing.gcp.discount: a discount is a percentage off the list price, above 0 and below 100 (12 for 12 % off); 0 is not one",
		"gpufleet.cue:13:37: gpufleet.pricing.azure.discount: a discount is a percentage off the list price, above 0 and below 100 (12 for 12 % off); 100 is not one",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("errors lack\n  %s\ngot:\n%s", want, got)
		}
	}

	// A type that exists, but is given both terms or none.
	config = fmt.Sprintf(`package gpufleet

gpufleet: clouds: aws: regions: ["us-east-1"]
gpufleet: pricing: aws: types: %[1]q: {price: 3, discount: 10}
gpufleet: pricing: aws: families: p5: {}
`, p5)
	writeFile(t, filepath.Join(dir, "gpufleet.cue"), []byte(config))
	got = loadErrors(t, dir)
	for _, want := range []string{
		fmt.Sprintf("gpufleet.cue:4:32: gpufleet.pricing.aws.types.%q: a term is a discount or a private price, not both", p5),
		"gpufleet.cue:5:35: gpufleet.pricing.aws.families.p5: a term states a discount (12 for 12 % off) or a private price (US$ per node-hour); this one states neither",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("errors lack\n  %s\ngot:\n%s", want, got)
		}
	}

	writeFile(t, filepath.Join(dir, "gpufleet.cue"), []byte("package gpufleet\n\ngpufleet: clouds: aws: regions: [\"us-east-1\"]\ngpufleet: pricing: gpc: discount: 10\n"))
	if got, want := loadErrors(t, dir), `gpufleet.cue:4:20: gpufleet.pricing.gpc: unknown cloud "gpc": gpufleet knows aws, azure, gcp, lambda, oci: did you mean "gcp"?`; !strings.Contains(got, want) {
		t.Errorf("errors lack\n  %s\ngot:\n%s", want, got)
	}
}

// Terms that are right load, with the cloud's markets on-demand unless
// said, and a type a refreshed catalog sells is one a term may name.
func TestPricingLoads(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "gpufleet.cue"), []byte(`package gpufleet

gpufleet: clouds: gcp: project: "acme-gpu-fleet"
gpufleet: pricing: gcp: {
	discount: 12
	families: a3: {discount: 30, markets: ["on-demand", "spot"]}
	types: "a3-privategpu-8g": {price: 70}
}
`))
	cat := *catalog.Default()
	cat.Offers = append(slices.Clone(cat.Offers), catalog.Offer{Cloud: catalog.GCP, Region: "us-central1", InstanceType: "a3-privategpu-8g", Market: catalog.OnDemand, GPUModel: "H100", GPUs: 8, PriceMicros: 80_000_000})
	repo, err := LoadWithCatalog(dir, &cat)
	if err != nil {
		t.Fatal(err)
	}
	gcp := repo.Config.Pricing.GCP
	if gcp == nil || *gcp.Discount != 12 || len(gcp.Markets) != 1 || gcp.Markets[0] != catalog.OnDemand {
		t.Fatalf("gcp pricing = %+v, want 12 %% off on-demand", gcp)
	}
	if got := repo.Config.Pricing.Price(catalog.GCP, "a3-privategpu-8g", catalog.OnDemand, 80_000_000); !got.Private || got.Micros != 70_000_000 {
		t.Errorf("a3-privategpu-8g = %+v, want the private $70", got)
	}
	if got := repo.Config.Pricing.Price(catalog.GCP, "a3-highgpu-8g", catalog.Spot, 10_000_000); got.Micros != 7_000_000 {
		t.Errorf("a3 spot = %+v, want the family's 30 %% off", got)
	}
	if repo.Config.Pricing.AWS != nil {
		t.Errorf("aws pricing = %+v, want none", repo.Config.Pricing.AWS)
	}
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), `no gcp type "a3-privategpu-8g"`) {
		t.Errorf("the embedded catalog took a type it does not sell: %v", err)
	}
}
