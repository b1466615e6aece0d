// SPDX-License-Identifier: Apache-2.0

package catalogs

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/providers/sim/emulator"
	"github.com/gpufleet/gpufleet/schema/catalog"
	"github.com/gpufleet/gpufleet/schema/catalog/history"
)

// pricesOf starts an emulator selling cat's offers at cat's prices, and
// returns its price endpoints and its world.
func pricesOf(t *testing.T, cat *catalog.Catalog) (Endpoints, *sim.World) {
	t.Helper()
	world, err := sim.New(sim.Config{Seed: 1, Catalog: cat})
	if err != nil {
		t.Fatal(err)
	}
	emu, err := emulator.Start(world, emulator.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { emu.Close(context.Background()) })
	return Endpoints{AWSPricing: emu.Endpoints.AWSPricing, EC2: emu.Endpoints.EC2, AzurePrices: emu.Endpoints.AzurePrices, GCPBilling: emu.Endpoints.GCPBilling}, world
}

// withPrice is cat with one offer's price changed.
func withPrice(t *testing.T, cat *catalog.Catalog, offer catalog.Offer, micros int64) *catalog.Catalog {
	t.Helper()
	var buf bytes.Buffer
	if err := cat.Write(&buf); err != nil {
		t.Fatal(err)
	}
	out, err := catalog.Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	for i, o := range out.Offers {
		if history.Key(o) == history.Key(offer) {
			out.Offers[i].PriceMicros = micros
			return out
		}
	}
	t.Fatalf("no offer %s", history.Key(offer))
	return nil
}

// A refresh of some clouds over the snapshot merges into a catalog as old
// as the snapshot; the prices it read still go into the history as of when
// they were read. Two refreshes with a price change between add a point
// to the offer's series, the old price kept before it.
func TestRefreshAppendsAChangedPriceAsOfItsRead(t *testing.T) {
	dir := t.TempDir()
	base := catalog.Default()
	var offer catalog.Offer
	for _, o := range base.Offers {
		if o.Cloud == catalog.Azure && o.Market == catalog.OnDemand && o.Zone == "" && o.PriceMicros > 0 {
			offer = o
			break
		}
	}
	if offer.Cloud == "" {
		t.Skip("the snapshot has no regional Azure on-demand offer")
	}
	first := base.FetchedAt.Add(72 * time.Hour).Truncate(time.Second)
	second := first.Add(6 * time.Hour)
	opts := Options{Clouds: []string{catalog.Azure}, Path: filepath.Join(dir, "catalog.json"), History: filepath.Join(dir, "history.json")}

	opts.Endpoints, _ = pricesOf(t, base)
	opts.Now = func() time.Time { return first }
	if _, err := Refresh(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	dropped := offer.PriceMicros / 2
	opts.Endpoints, _ = pricesOf(t, withPrice(t, base, offer, dropped))
	opts.Now = func() time.Time { return second }
	res, err := Refresh(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.HistoryChanged < 1 {
		t.Errorf("the second refresh changed %d prices in the history, want at least the one that dropped", res.HistoryChanged)
	}

	h, err := history.Load(opts.History)
	if err != nil {
		t.Fatal(err)
	}
	key := history.Key(offer)
	for _, tt := range []struct {
		at   time.Time
		want int64
	}{{first, offer.PriceMicros}, {second.Add(-time.Second), offer.PriceMicros}, {second, dropped}} {
		if got, ok := h.PriceAt(key, tt.at); !ok || got != tt.want {
			t.Errorf("%s at %s: %d (%v), want %d", key, tt.at.Format(time.RFC3339), got, ok, tt.want)
		}
	}
	written, err := readCatalog(opts.Path)
	if err != nil {
		t.Fatal(err)
	}
	if got := priceIn(written, offer); got != dropped {
		t.Errorf("the catalog file prices %s at %d, want %d", key, got, dropped)
	}
}

// A price API that answers 500 fails the refresh: the catalog file and the
// history are left byte for byte as they were.
func TestRefreshThatFailsWritesNothing(t *testing.T) {
	dir := t.TempDir()
	opts := Options{Clouds: []string{catalog.Azure}, Path: filepath.Join(dir, "catalog.json"), History: filepath.Join(dir, "history.json")}
	var world *sim.World
	opts.Endpoints, world = pricesOf(t, catalog.Default())
	if _, err := Refresh(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	before := [2][]byte{mustRead(t, opts.Path), mustRead(t, opts.History)}
	if err := world.AddFaults(&sim.Fault{Cloud: catalog.Azure, Op: "RetailPrices", Kind: sim.FaultServerError, Rate: 1}); err != nil {
		t.Fatal(err)
	}
	res, err := Refresh(context.Background(), opts)
	if err == nil || res != nil {
		t.Fatalf("a refresh whose price API fails: %v, %v", res, err)
	}
	for i, name := range []string{opts.Path, opts.History} {
		if !bytes.Equal(mustRead(t, name), before[i]) {
			t.Errorf("%s changed after a failed refresh", name)
		}
	}
}

func mustRead(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func readCatalog(name string) (*catalog.Catalog, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return catalog.Read(f)
}

func priceIn(cat *catalog.Catalog, offer catalog.Offer) int64 {
	for _, o := range cat.Offers {
		if history.Key(o) == history.Key(offer) {
			return o.PriceMicros
		}
	}
	return 0
}
