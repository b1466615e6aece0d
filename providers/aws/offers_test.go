// SPDX-License-Identifier: Apache-2.0

package aws

import (
	"context"
	"errors"
	"testing"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

func TestOffersTakeLiveSpotPrices(t *testing.T) {
	cat := catalog.Default()
	// The world's market moved: one zone's spot price differs from the
	// catalog the provider was built with.
	live := *cat
	live.Offers = append([]catalog.Offer{}, cat.Offers...)
	var moved catalog.Offer
	for i, o := range live.Offers {
		if o.Cloud == catalog.AWS && o.Region == testSpot.Region && o.InstanceType == testSpot.InstanceType && o.Market == catalog.Spot && o.Zone == testSpot.Zone {
			live.Offers[i].PriceMicros *= 3
			moved = live.Offers[i]
		}
	}
	if moved.Cloud == "" {
		t.Fatal("the catalog has no spot price for the test offer's zone")
	}

	p := emulator(t, &live).provider(t, cat)
	offers, err := p.Offers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := map[planner.OfferKey]int64{}
	for _, o := range planner.Expand(cat, map[string][]string{catalog.AWS: p.cfg.Regions}) {
		want[o.OfferKey] = o.PriceMicros
	}
	want[testSpot] = moved.PriceMicros
	if len(offers) != len(want) {
		t.Fatalf("%d offers, want %d", len(offers), len(want))
	}
	for _, o := range offers {
		if o.PriceMicros != want[o.OfferKey] {
			t.Errorf("%s costs %d, want %d", o.OfferKey, o.PriceMicros, want[o.OfferKey])
		}
	}
}

func TestOffersFailWhenPricesCannotBeRead(t *testing.T) {
	b := emulator(t, catalog.Default())
	p := b.provider(t, catalog.Default())
	if err := b.world.AddFaults(&sim.Fault{Cloud: catalog.AWS, Op: "DescribeSpotPriceHistory", Kind: sim.FaultServerError, Times: 100}); err != nil {
		t.Fatal(err)
	}
	_, err := p.Offers(context.Background())
	var pe *providers.Error
	if !errors.As(err, &pe) || pe.Kind != providers.KindUnavailable || pe.Op != "offers" || pe.Code != "InternalError" {
		t.Fatalf("got %v, want an unavailable error from offers", err)
	}
	// Every region gave up after its bounded attempts.
	if n := b.world.Calls()["aws DescribeSpotPriceHistory"]; n > 2*5 {
		t.Errorf("%d calls for two regions, want at most 5 each", n)
	}
}
