// SPDX-License-Identifier: Apache-2.0

package prices

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/providers/sim/emulator"
	"github.com/gpufleet/gpufleet/providers/sim/pricesim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// emulatorOf runs the emulator over a world of the catalog given.
func emulatorOf(t *testing.T, cat *catalog.Catalog) *emulator.Emulator {
	t.Helper()
	world, err := sim.New(sim.Config{Seed: 7, Catalog: cat})
	if err != nil {
		t.Fatal(err)
	}
	emu, err := emulator.Start(world, emulator.Options{Prices: pricesim.Options{PageSize: 50, APIKey: emulatorKey}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { emu.Close(context.Background()) })
	return emu
}

// universe is what a catalog offers, less where in a region and at what
// price: the (cloud, region, type, market) it has a price for, or, from
// asTheAPIsPrice, one the APIs price with no price in the catalog (0).
func universe(offers []catalog.Offer) []string {
	var out []string
	for _, o := range offers {
		if o.PriceMicros >= 0 {
			out = append(out, fmt.Sprintf("%s %s %s %s", o.Cloud, o.Region, o.InstanceType, o.Market))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// A refresh reads every region the clouds' price APIs list, not only those
// the embedded catalog has: a region it lacks comes back as a region of the
// refreshed catalog, with its country and, on AWS, the zones its spot
// prices name, and with every type priced there.
func TestLoadersFindRegionsTheCatalogLacks(t *testing.T) {
	known := catalog.Default()
	world := catalog.Default()
	added := map[string]catalog.Region{}
	for _, cloud := range Clouds {
		if cloud == catalog.Lambda {
			// Lambda's API lists only the regions with room now: its
			// loader prices the regions the catalog knows, and finds none.
			continue
		}
		var name string
		for _, n := range catalog.RegionNames(cloud) {
			if _, ok := known.Region(cloud, n); !ok && !otherPartition(cloud, n) {
				name = n
				break
			}
		}
		if name == "" {
			t.Fatalf("the embedded catalog has every %s region gpufleet knows; the test needs one it lacks", cloud)
		}
		r := newRegion(cloud, name)
		switch cloud {
		case catalog.AWS:
			r.Zones = []string{name + "a", name + "b"}
		case catalog.GCP:
			r.Zones = []string{name + "-a"}
		}
		added[cloud] = r
		world.Regions = append(world.Regions, r)
		// The new region sells what a known one does, zone for zone in
		// its first zones; on AWS each of them has a spot price, whence
		// the loader learns the zones.
		from, ok := regionToCopy(known, cloud, len(r.Zones))
		if !ok {
			t.Fatalf("no %s region of the embedded catalog has spot prices in each of its first %d zones", cloud, len(r.Zones))
		}
		for _, o := range known.Offers {
			if o.Cloud != cloud || o.Region != from.Name {
				continue
			}
			if o.Zone != "" {
				i := slices.Index(from.Zones, o.Zone)
				if i < 0 || i >= len(r.Zones) {
					continue
				}
				o.Zone = r.Zones[i]
			}
			o.Region = name
			world.Offers = append(world.Offers, o)
		}
	}
	if err := world.Validate(); err != nil {
		t.Fatal(err)
	}
	emu := emulatorOf(t, world)
	for _, l := range loaders(t, emu, Options{Known: known, Retry: Retry{Max: -1}}, nil) {
		if l.Cloud() == catalog.Lambda {
			continue // it reads the regions the catalog has (above)
		}
		t.Run(l.Cloud(), func(t *testing.T) {
			got, err := l.Load(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			want := added[l.Cloud()]
			r, ok := got.Region(l.Cloud(), want.Name)
			if !ok {
				t.Fatalf("no region %s among %d", want.Name, len(got.Regions))
			}
			if r.Country == "" || r.Country != want.Country || r.Geo != want.Geo {
				t.Errorf("region %s in %q (%s), want %q (%s)", r.Name, r.Country, r.Geo, want.Country, want.Geo)
			}
			if l.Cloud() == catalog.AWS && !slices.Equal(r.Zones, want.Zones) {
				t.Errorf("zones %v, want %v from the spot prices", r.Zones, want.Zones)
			}
			var gotHere, wantHere []catalog.Offer
			for _, o := range got.Offers {
				if o.Region == want.Name {
					gotHere = append(gotHere, o)
				}
			}
			for _, o := range asTheAPIsPrice(t, world, l.Cloud()) {
				if o.Region == want.Name {
					wantHere = append(wantHere, o)
				}
			}
			diffStrings(t, "offers in "+want.Name, universe(gotHere), universe(wantHere))
		})
	}
}

// The emulator's price APIs serve the whole embedded catalog, and a
// refresh against them gives back its universe: every (cloud, region,
// type, market) it prices, as the APIs can say it (asTheAPIsPrice): not
// where in a region an offer is (the Price List and the billing catalog
// price regions; spot zones are compared elsewhere), no AWS spot offer of
// a type the region's Price List does not list, since spot prices are
// asked for the types the Price List names, and on GCP every size of a
// series where its parts are priced.
func TestRefreshAgainstTheEmulatorGivesTheSnapshotsUniverse(t *testing.T) {
	snapshot := catalog.Default()
	emu := emulatorOf(t, snapshot)
	var tally Tally
	for _, l := range loaders(t, emu, Options{Retry: Retry{Max: -1}, OnDrop: tally.Add}, nil) {
		t.Run(l.Cloud(), func(t *testing.T) {
			got, err := l.Load(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			diffStrings(t, "universe", universe(got.Offers), universe(asTheAPIsPrice(t, snapshot, l.Cloud())))
			if n := tally.Total(l.Cloud()); n > 0 {
				t.Errorf("%s", tally.Summary(l.Cloud()))
			}
		})
	}
}

// regionToCopy is the first region of a cloud that, on AWS, has a spot
// price in each of its first n zones, and on the other clouds has zones
// enough.
func regionToCopy(cat *catalog.Catalog, cloud string, n int) (catalog.Region, bool) {
	for _, r := range cat.RegionsOf(cloud) {
		if len(r.Zones) < n {
			continue
		}
		if cloud != catalog.AWS {
			return r, true
		}
		priced := 0
		for _, z := range r.Zones[:n] {
			if slices.ContainsFunc(cat.Offers, func(o catalog.Offer) bool {
				return o.Cloud == cloud && o.Region == r.Name && o.Zone == z && o.Market == catalog.Spot && o.PriceMicros > 0
			}) {
				priced++
			}
		}
		if priced == n {
			return r, true
		}
	}
	return catalog.Region{}, false
}
