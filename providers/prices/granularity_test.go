// SPDX-License-Identifier: Apache-2.0

package prices

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/gpufleet/gpufleet/schema/catalog"
)

// asTheAPIsPrice is what a refresh can give back of a catalog's offers of
// one cloud, at the granularity of the APIs it reads:
//
//   - AWS on-demand per region: the Price List has no zones (an on-demand
//     price is the same in every zone of a region; which zones sell a type
//     is EC2's DescribeInstanceTypeOfferings, read at reconcile time);
//   - AWS spot per zone, as the spot price history answers, a region's
//     offer standing for every zone of it; where every zone of the region
//     has the same price, one offer for the region, as the loader writes
//     it; and only for types the region's Price List names, since spot
//     prices are asked for those;
//   - GCP per region, as the billing catalog prices parts: cores, memory
//     and GPUs of a machine series. Where a region sells one machine type
//     it prices the parts of every type billed by the same SKUs, so a
//     refresh prices there every such type the catalog knows, the sizes
//     the data lists elsewhere only too (which sizes a zone offers is
//     GCE's machine type list, read at reconcile time). Those come with
//     PriceMicros 0: the catalog has no price of them there to compare;
//     the dearest zone's price otherwise, as the emulator splits it;
//   - Azure per region, as the Retail Prices API and the catalog do;
//   - Lambda per region, each its own zone, as the instance types give one
//     price a type and the catalog has it in every region.
//
// It fails the test where the catalog holds what no API could say: an AWS
// on-demand type priced differently in two zones of a region.
func asTheAPIsPrice(t *testing.T, cat *catalog.Catalog, cloud string) []catalog.Offer {
	t.Helper()
	type key struct {
		region, instanceType string
		market               catalog.Market
	}
	regional := map[key]catalog.Offer{}
	var out []catalog.Offer
	spot := map[key]map[string]catalog.Offer{} // AWS spot, by zone
	for _, o := range cat.Offers {
		if o.Cloud != cloud || o.PriceMicros <= 0 {
			continue
		}
		k := key{o.Region, o.InstanceType, o.Market}
		if cloud == catalog.AWS && o.Market == catalog.Spot {
			if spot[k] == nil {
				spot[k] = map[string]catalog.Offer{}
			}
			zones := []string{o.Zone}
			if o.Zone == "" {
				r, _ := cat.Region(cloud, o.Region)
				zones = r.Zones
			}
			for _, z := range zones {
				if held, ok := spot[k][z]; !ok || held.Zone == "" {
					zonal := o
					zonal.Zone = z
					spot[k][z] = zonal
				}
			}
			continue
		}
		if cloud == catalog.Lambda {
			// One price a type, every region its own zone.
			out = append(out, o)
			continue
		}
		held, ok := regional[k]
		o.Zone = ""
		switch {
		case !ok:
			regional[k] = o
		case cloud == catalog.AWS && held.PriceMicros != o.PriceMicros:
			t.Fatalf("%s on-demand in %s at %d in one zone and %d in another: the Price List has one price a region", o.InstanceType, o.Region, held.PriceMicros, o.PriceMicros)
		case o.PriceMicros > held.PriceMicros:
			// GCP's regional part prices are the dearest zone's.
			regional[k] = o
		}
	}
	if cloud == catalog.GCP {
		// The types each set of parts bills, and where each is sold.
		byParts := map[string][]catalog.Offer{}
		sold := map[string]bool{} // parts, region and market
		for _, o := range regional {
			parts := gcpBilledBy(o.InstanceType, o.GPUModel)
			if !slices.ContainsFunc(byParts[parts], func(x catalog.Offer) bool { return x.InstanceType == o.InstanceType }) {
				byParts[parts] = append(byParts[parts], o)
			}
			sold[parts+" "+o.Region+" "+string(o.Market)] = true
		}
		for k := range regional {
			parts := gcpBilledBy(k.instanceType, regional[k].GPUModel)
			for _, sibling := range byParts[parts] {
				sk := key{k.region, sibling.InstanceType, k.market}
				if _, ok := regional[sk]; ok || !sold[parts+" "+k.region+" "+string(k.market)] {
					continue
				}
				sibling.Region, sibling.Market, sibling.PriceMicros = k.region, k.market, 0
				regional[sk] = sibling
			}
		}
	}
	for _, o := range regional {
		out = append(out, o)
	}
	for k, byZone := range spot {
		if _, listed := regional[key{k.region, k.instanceType, catalog.OnDemand}]; !listed {
			continue
		}
		r, _ := cat.Region(cloud, k.region)
		first := byZone[r.Zones[0]]
		same := len(byZone) == len(r.Zones)
		for _, z := range r.Zones {
			same = same && byZone[z].PriceMicros == first.PriceMicros
		}
		if same {
			first.Zone = ""
			out = append(out, first)
			continue
		}
		for _, o := range byZone {
			out = append(out, o)
		}
	}
	sortOffers(out)
	return out
}

// TestAsTheAPIsPrice checks the expectation itself on a small catalog.
func TestAsTheAPIsPrice(t *testing.T) {
	od, spot := catalog.OnDemand, catalog.Spot
	cat := &catalog.Catalog{
		Regions: []catalog.Region{{Cloud: catalog.AWS, Name: "us-east-1", Zones: []string{"us-east-1a", "us-east-1b"}}},
		Offers: []catalog.Offer{
			offer(catalog.AWS, "us-east-1", "us-east-1a", "g6.xlarge", od, "L4", 1, 4, 16, 800_000),
			offer(catalog.AWS, "us-east-1", "us-east-1b", "g6.xlarge", od, "L4", 1, 4, 16, 800_000),
			offer(catalog.AWS, "us-east-1", "us-east-1a", "g6.xlarge", spot, "L4", 1, 4, 16, 300_000),
			offer(catalog.AWS, "us-east-1", "us-east-1b", "g6.xlarge", spot, "L4", 1, 4, 16, 310_000),
			offer(catalog.AWS, "us-east-1", "us-east-1a", "p5.48xlarge", od, "H100", 8, 192, 2048, 98_000_000),
			offer(catalog.AWS, "us-east-1", "us-east-1a", "p5.48xlarge", spot, "H100", 8, 192, 2048, 30_000_000),
			offer(catalog.AWS, "us-east-1", "us-east-1b", "p5.48xlarge", spot, "H100", 8, 192, 2048, 30_000_000),
			// Spot with no on-demand row: not asked for.
			offer(catalog.AWS, "us-east-1", "us-east-1a", "g5.xlarge", spot, "A10G", 1, 4, 16, 400_000),
		},
	}
	want := []catalog.Offer{
		offer(catalog.AWS, "us-east-1", "", "g6.xlarge", od, "L4", 1, 4, 16, 800_000),
		offer(catalog.AWS, "us-east-1", "", "p5.48xlarge", od, "H100", 8, 192, 2048, 98_000_000),
		offer(catalog.AWS, "us-east-1", "", "p5.48xlarge", spot, "H100", 8, 192, 2048, 30_000_000),
		offer(catalog.AWS, "us-east-1", "us-east-1a", "g6.xlarge", spot, "L4", 1, 4, 16, 300_000),
		offer(catalog.AWS, "us-east-1", "us-east-1b", "g6.xlarge", spot, "L4", 1, 4, 16, 310_000),
	}
	got := asTheAPIsPrice(t, cat, catalog.AWS)
	if !slices.EqualFunc(got, want, func(a, b catalog.Offer) bool { return a == b }) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
}

// placed names each offer by where it is and what, less its price.
func placed(offers []catalog.Offer) []string {
	out := make([]string, len(offers))
	for i, o := range offers {
		out[i] = fmt.Sprintf("%s %s %s %s %s", o.Cloud, o.Region, orDash(o.Zone), o.InstanceType, o.Market)
	}
	return out
}

// gcpBilledBy names the SKUs that bill a GCP machine type, as the loader
// finds them.
func gcpBilledBy(instanceType, gpuModel string) string {
	series := instanceType[:max(strings.LastIndex(instanceType, "-"), 0)]
	parts, ok := gcpSeries[series]
	if !ok {
		parts, _ = gcpPartsOf(series, gpuModel)
	}
	return fmt.Sprint(parts)
}
