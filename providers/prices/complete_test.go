// SPDX-License-Identifier: Apache-2.0

package prices

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/gpufleet/gpufleet/providers/aws"
	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/providers/sim/emulator"
	"github.com/gpufleet/gpufleet/providers/sim/pricesim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

func offersIn(cat *catalog.Catalog, cloud, region string) []string {
	var in []catalog.Offer
	for _, o := range cat.Offers {
		if o.Cloud == cloud && o.Region == region {
			in = append(in, o)
		}
	}
	return universe(in)
}

// A refresh takes a cloud's offers away only where it read the cloud's
// price list to the end: a region whose listing fails fails the load, so
// nothing is merged; a region whose rows are all refused, or that the
// account may not read, is left out of the fresh catalog, and the merged
// one keeps the prices it had there.
func TestARefreshTakesNothingAwayFromWhatItCouldNotRead(t *testing.T) {
	t.Run("a failed region fails the load", func(t *testing.T) {
		emu := startEmulator(t, &sim.Fault{Cloud: catalog.Azure, Op: "RetailPrices", Region: "westus", Kind: "server-error", Times: 100})
		for _, l := range loaders(t, emu, Options{Retry: Retry{Max: -1}}, nil) {
			if l.Cloud() != catalog.Azure {
				continue
			}
			got, err := l.Load(context.Background())
			if err == nil || got != nil || !strings.Contains(err.Error(), "westus") {
				t.Fatalf("load gave %d offers and %v, want no catalog and westus's error", len(got.Offers), err)
			}
		}
	})

	t.Run("a region of refused rows keeps its prices", func(t *testing.T) {
		srv := priceServer(t, nil, strings.Join([]string{
			azureRowIn("eastus", "Standard_NC4as_T4_v3", "NC4as T4 v3", "USD", "1 Hour", "0.526"),
			azureRowIn("westus", "Standard_NC4as_T4_v3", "NC4as T4 v3", "EUR", "1 Hour", "0.49"),
			azureRowIn("westus", "Standard_NC4as_T4_v3", "NC4as T4 v3 Spot", "USD", "1 Hour", "0"),
		}, ","), "")
		existing := catalog.Default()
		l, err := NewAzure(Options{Regions: []string{"eastus", "westus"}, Endpoint: srv.URL, Retry: Retry{Max: -1}})
		if err != nil {
			t.Fatal(err)
		}
		fresh, err := l.Load(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := fresh.Region(catalog.Azure, "westus"); ok {
			t.Error("westus, all of whose rows were refused, is among the fresh catalog's regions")
		}
		merged, err := Merge(existing, fresh)
		if err != nil {
			t.Fatal(err)
		}
		before := offersIn(existing, catalog.Azure, "westus")
		if len(before) == 0 {
			t.Fatal("the snapshot has no Azure offers in westus to keep")
		}
		diffStrings(t, "westus", offersIn(merged, catalog.Azure, "westus"), before)
		diffStrings(t, "eastus", offersIn(merged, catalog.Azure, "eastus"), []string{"azure eastus Standard_NC4as_T4_v3 on-demand"})
	})

	t.Run("a region the account has not opted in to keeps its prices", func(t *testing.T) {
		known := catalog.Default()
		world := catalog.Default()
		// An opt-in region the world prices: like every region AWS
		// lists, a refresh of all regions reads it.
		const optIn = "af-south-1"
		if _, ok := known.Region(catalog.AWS, optIn); ok {
			t.Skipf("the snapshot has %s; the test wants a region it lacks", optIn)
		}
		r := newRegion(catalog.AWS, optIn)
		r.Zones = []string{optIn + "a"}
		world.Regions = append(world.Regions, r)
		for _, o := range known.Offers {
			if o.Cloud == catalog.AWS && o.Region == "us-east-1" && o.Zone == "" {
				o.Region = optIn
				world.Offers = append(world.Offers, o)
			}
		}
		w, err := sim.New(sim.Config{Seed: 7, Catalog: world})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.AddFaults(&sim.Fault{Cloud: catalog.AWS, Op: "DescribeSpotPriceHistory", Region: optIn, Kind: "server-error", Code: "OptInRequired", Times: 100}); err != nil {
			t.Fatal(err)
		}
		emu, err := emulator.Start(w, emulator.Options{Prices: pricesim.Options{APIKey: emulatorKey}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { emu.Close(context.Background()) })
		l, err := NewAWS(context.Background(), AWSOptions{
			Options:      Options{Known: known, Endpoint: emu.Endpoints.AWSPricing, Retry: Retry{Max: -1}, HTTPClient: aws.LoopbackHTTPClient()},
			SpotEndpoint: emu.Endpoints.EC2,
			Credentials:  credentials.NewStaticCredentialsProvider("AKIDSIM", "secret", ""),
		})
		if err != nil {
			t.Fatal(err)
		}
		fresh, err := l.Load(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := fresh.Region(catalog.AWS, optIn); ok || len(offersIn(fresh, catalog.AWS, optIn)) > 0 {
			t.Errorf("%s, whose spot prices the account may not read, is in the fresh catalog", optIn)
		}
		if len(offersIn(fresh, catalog.AWS, "us-east-1")) == 0 {
			t.Error("the other regions were not read")
		}
		// Asked for by name, the region is an error: the user wants it.
		l, err = NewAWS(context.Background(), AWSOptions{
			Options:      Options{Regions: []string{optIn}, Known: known, Endpoint: emu.Endpoints.AWSPricing, Retry: Retry{Max: -1}, HTTPClient: aws.LoopbackHTTPClient()},
			SpotEndpoint: emu.Endpoints.EC2,
			Credentials:  credentials.NewStaticCredentialsProvider("AKIDSIM", "secret", ""),
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Load(context.Background()); err == nil || errors.Is(err, ErrNoOffers) {
			t.Errorf("a refresh of %s alone gave %v, want its error", optIn, err)
		}
	})
}
