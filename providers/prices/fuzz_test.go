// SPDX-License-Identifier: Apache-2.0

package prices

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/gpufleet/gpufleet/schema/catalog"
)

// fuzzBase is a loader's shared part over the embedded catalog, reading
// the regions given, or all it finds.
func fuzzBase(t *testing.T, cloud string, regions ...string) *base {
	b, err := newBase(cloud, Options{Regions: regions})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkCollected fails on an offer no loader may produce: one at a price
// that is not positive, or on a market that is neither.
func checkCollected(t *testing.T, c *collector) {
	t.Helper()
	for _, held := range c.offers {
		o := held.offer
		if o.PriceMicros <= 0 {
			t.Fatalf("offer %+v at a price that is not positive", o)
		}
		if o.Market != catalog.OnDemand && o.Market != catalog.Spot {
			t.Fatalf("offer %+v on market %q", o, o.Market)
		}
		if o.GPUs <= 0 {
			t.Fatalf("offer %+v with no GPU", o)
		}
	}
	if len(c.offers) > 0 {
		cat, err := c.catalog()
		if err != nil {
			t.Fatalf("offers that make no catalog: %v", err)
		}
		if err := cat.Validate(); err != nil {
			t.Fatal(err)
		}
	}
}

func seedFile(f *testing.F, cloud, name string) []byte {
	b, err := os.ReadFile(filepath.Join(fixtureDir(cloud), name))
	if err != nil {
		f.Fatal(err)
	}
	return b
}

// The Price List's product documents, one by one.
func FuzzAWSProduct(f *testing.F) {
	for _, name := range []string{"getproducts-us-east-1-page1.json", "getproducts-us-east-1-page2.json"} {
		var page struct{ PriceList []string }
		if err := json.Unmarshal(seedFile(f, "aws", name), &page); err != nil {
			f.Fatal(err)
		}
		for _, p := range page.PriceList {
			f.Add(p)
		}
	}
	f.Add(awsDoc("g4dn.xlarge", 1, "Hrs", map[string]string{"USD": "NaN"}))
	f.Add(awsDoc("p5.48xlarge", 8, "Hrs", map[string]string{"USD": "-0.0"}))
	f.Fuzz(func(t *testing.T, raw string) {
		b := fuzzBase(t, catalog.AWS, "us-east-1")
		a := &AWS{b: b}
		r, _ := b.region("us-east-1")
		c := b.collector()
		a.product(*r, raw, map[string]shape{}, c)
		checkCollected(t, c)
	})
}

// A page of retail prices, its rows of any shape.
func FuzzAzurePage(f *testing.F) {
	for _, name := range []string{"retailprices-eastus-page1.json", "retailprices-eastus-page2.json"} {
		f.Add(seedFile(f, "azure", name))
	}
	f.Add([]byte(`{"Items":[` + azureRow("Standard_NC4as_T4_v3", "NC4as T4 v3", "USD", "1 Hour", "1e308") + `]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var page azurePage
		if json.Unmarshal(body, &page) != nil {
			return // a page that is not one is the request's error
		}
		b := fuzzBase(t, catalog.Azure, "eastus")
		a := &Azure{b: b}
		c := b.collector()
		a.page("eastus", page, c)
		checkCollected(t, c)
	})
}

// A page of billing catalog SKUs, priced into machines in every region
// it names.
func FuzzGCPPage(f *testing.F) {
	for _, name := range []string{"skus-page1.json", "skus-page2.json"} {
		f.Add(seedFile(f, "gcp", name))
	}
	f.Add([]byte(`{"skus":[` + gcpPart("X", "G2 Instance Core", "OnDemand", "h", "USD", `"9223372036854775807"`, 999999999) + `]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var page gcpPage
		if json.Unmarshal(body, &page) != nil {
			return
		}
		b := fuzzBase(t, catalog.GCP)
		g := &GCP{b: b}
		machines := g.machines()
		parts, seen := map[partKey]partPrice{}, map[partKey]bool{}
		g.page(page, partKinds(machines), parts, seen)
		checkCollected(t, g.price(machines, parts, seen))
	})
}

// Prices written as decimals, and nothing else.
func FuzzParseDollars(f *testing.F) {
	for _, s := range []string{"30.330000", "0.0000000000", "NaN", "-1.5", "1e3", ".", "12,5", "Inf", "0x1p-2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, ok := parseDollars(s)
		if !ok {
			return
		}
		if _, reason, _ := checkPrice(v, 1); reason == "" && (v <= 0 || v != v) {
			t.Fatalf("%q read as %v and passed as a price", s, v)
		}
	})
}
