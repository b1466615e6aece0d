// SPDX-License-Identifier: Apache-2.0

package sim

import (
	"cmp"
	"slices"

	"github.com/gpufleet/gpufleet/schema/catalog"
)

// The world's universe is its catalog's: the types each cloud has, and
// the zones that sell each on each market. A zone-level offer sells its
// type in that zone only; a region-level one in every zone of its region.
// No front keeps a list of its own, so a catalog with another type or
// region is a world with it. The universe is indexed once, when the world
// is built: a full catalog has thousands of offers, and fronts ask about
// a type in a zone on every call.
type universe struct {
	// clouds are the clouds the catalog has regions or offers of, in
	// catalog.Clouds order, any others after them by name.
	clouds []string
	// types holds every type of each cloud, described by the first of its
	// offers in catalog order.
	types map[typeKey]InstanceType
	// names lists each cloud's types by name.
	names map[string][]string
	// zoneRegion finds the region of each cloud's zone.
	zoneRegion map[zoneKey]string
	// sold is every (cloud, zone, type, market) the catalog offers, and
	// zoneTypes the names sold in a zone on a market, sorted.
	sold      map[soldKey]bool
	zoneTypes map[zoneMarketKey][]string
}

type typeKey struct{ Cloud, Name string }

type zoneKey struct{ Cloud, Zone string }

type soldKey struct {
	Cloud, Zone, InstanceType string
	Market                    catalog.Market
}

type zoneMarketKey struct {
	Cloud, Zone string
	Market      catalog.Market
}

// newUniverse indexes a catalog. Offers of a region the catalog does not
// list sell nowhere, as there is no zone to sell them in, but their type
// still exists.
func newUniverse(cat *catalog.Catalog) universe {
	u := universe{
		types:      map[typeKey]InstanceType{},
		names:      map[string][]string{},
		zoneRegion: map[zoneKey]string{},
		sold:       map[soldKey]bool{},
		zoneTypes:  map[zoneMarketKey][]string{},
	}
	zonesOf := map[typeKey][]string{}
	seen := map[string]bool{}
	addCloud := func(c string) {
		if !seen[c] {
			seen[c] = true
			u.clouds = append(u.clouds, c)
		}
	}
	for _, r := range cat.Regions {
		addCloud(r.Cloud)
		zonesOf[typeKey{r.Cloud, r.Name}] = r.Zones
		for _, z := range r.Zones {
			u.zoneRegion[zoneKey{r.Cloud, z}] = r.Name
		}
	}
	for _, o := range cat.Offers {
		addCloud(o.Cloud)
		k := typeKey{o.Cloud, o.InstanceType}
		if _, ok := u.types[k]; !ok {
			u.types[k] = InstanceType{Name: o.InstanceType, GPUModel: o.GPUModel, GPUs: o.GPUs, VCPUs: o.VCPUs, MemoryGiB: o.MemoryGiB, GPU: GPUFacts(o.GPUModel)}
			u.names[o.Cloud] = append(u.names[o.Cloud], o.InstanceType)
		}
		zones := zonesOf[typeKey{o.Cloud, o.Region}]
		if o.Zone != "" {
			// A zone the region does not list is no place to sell in.
			zones = nil
			if u.zoneRegion[zoneKey{o.Cloud, o.Zone}] == o.Region {
				zones = []string{o.Zone}
			}
		}
		for _, z := range zones {
			s := soldKey{o.Cloud, z, o.InstanceType, o.Market}
			if !u.sold[s] {
				u.sold[s] = true
				zm := zoneMarketKey{o.Cloud, z, o.Market}
				u.zoneTypes[zm] = append(u.zoneTypes[zm], o.InstanceType)
			}
		}
	}
	slices.SortFunc(u.clouds, func(a, b string) int {
		ia, ib := slices.Index(catalog.Clouds, a), slices.Index(catalog.Clouds, b)
		switch {
		case ia >= 0 && ib >= 0:
			return cmp.Compare(ia, ib)
		case ia >= 0:
			return -1
		case ib >= 0:
			return 1
		}
		return cmp.Compare(a, b)
	})
	for _, names := range u.names {
		slices.Sort(names)
	}
	for _, names := range u.zoneTypes {
		slices.Sort(names)
	}
	return u
}

// ZoneRegion returns the region a zone belongs to.
func (w *World) ZoneRegion(cloud, zone string) (string, bool) {
	r, ok := w.uni.zoneRegion[zoneKey{cloud, zone}]
	return r, ok
}

// InstanceType describes an instance type as the catalog knows it.
type InstanceType struct {
	Name      string
	GPUModel  string
	GPUs      int
	VCPUs     int
	MemoryGiB float64
	// GPU is what the cloud's type API tells of its accelerators.
	GPU GPU
}

// Type looks an instance type up in a zone for a market. It reports false
// when the zone does not offer it.
func (w *World) Type(cloud, zone, name string, market catalog.Market) (InstanceType, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.typeIn(cloud, zone, name, market)
}

func (w *World) typeIn(cloud, zone, name string, market catalog.Market) (InstanceType, bool) {
	if !w.uni.sold[soldKey{cloud, zone, name, market}] || w.unoffered[offeringKey{cloud, zone, name}] {
		return InstanceType{}, false
	}
	return w.uni.types[typeKey{cloud, name}], true
}

// SetOffered says whether a zone offers an instance type the catalog sells
// there: a zone that does not refuses creates of it as the cloud does, and
// its offerings APIs leave it out. It cannot make a zone sell what the
// catalog does not.
func (w *World) SetOffered(cloud, zone, instanceType string, offered bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	k := offeringKey{cloud, zone, instanceType}
	if offered {
		delete(w.unoffered, k)
	} else {
		w.unoffered[k] = true
	}
	w.changed()
}

// Offered lists the instance types a zone offers, for a market, sorted.
func (w *World) Offered(cloud, zone string, market catalog.Market) []InstanceType {
	w.mu.Lock()
	defer w.mu.Unlock()
	names := w.uni.zoneTypes[zoneMarketKey{cloud, zone, market}]
	out := make([]InstanceType, 0, len(names))
	for _, name := range names {
		if !w.unoffered[offeringKey{cloud, zone, name}] {
			out = append(out, w.uni.types[typeKey{cloud, name}])
		}
	}
	return out
}

// TypeExists reports whether a cloud has an instance type anywhere.
func (w *World) TypeExists(cloud, name string) bool {
	_, ok := w.uni.types[typeKey{cloud, name}]
	return ok
}

// TypeNamed describes a type of a cloud, wherever it is sold.
func (w *World) TypeNamed(cloud, name string) (InstanceType, bool) {
	t, ok := w.uni.types[typeKey{cloud, name}]
	return t, ok
}

// Types lists every instance type of a cloud, sold anywhere or not, by
// name: what a type API answers when asked about the whole cloud.
func (w *World) Types(cloud string) []InstanceType {
	out := make([]InstanceType, 0, len(w.uni.names[cloud]))
	for _, name := range w.uni.names[cloud] {
		out = append(out, w.uni.types[typeKey{cloud, name}])
	}
	return out
}

// OfferedZones lists the zones of a region that offer a type on some
// market, in the region's order.
func (w *World) OfferedZones(cloud, region, name string) []string {
	r, ok := w.cat.Region(cloud, region)
	if !ok {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, z := range r.Zones {
		for _, m := range []catalog.Market{catalog.OnDemand, catalog.Spot} {
			if _, ok := w.typeIn(cloud, z, name, m); ok {
				out = append(out, z)
				break
			}
		}
	}
	return out
}
