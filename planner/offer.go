// SPDX-License-Identifier: Apache-2.0

package planner

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/gpufleet/gpufleet/schema/catalog"
)

// OfferKey names a place to buy nodes: one instance type in one zone, bought
// one way. It is what the blocklist, the diff and the status file refer to.
type OfferKey struct {
	Cloud        string         `json:"cloud"`
	Region       string         `json:"region"`
	Zone         string         `json:"zone"`
	InstanceType string         `json:"instanceType"`
	Market       catalog.Market `json:"market"`
}

func (k OfferKey) String() string {
	return strings.Join([]string{k.Cloud, k.Region, k.Zone, k.InstanceType, string(k.Market)}, "/")
}

// ParseOfferKey reads the form String writes.
func ParseOfferKey(s string) (OfferKey, error) {
	parts := strings.Split(s, "/")
	if len(parts) != 5 || slices.Contains(parts, "") {
		return OfferKey{}, fmt.Errorf("offer %q: want cloud/region/zone/type/market", s)
	}
	k := OfferKey{parts[0], parts[1], parts[2], parts[3], catalog.Market(parts[4])}
	if k.Market != catalog.OnDemand && k.Market != catalog.Spot {
		return OfferKey{}, fmt.Errorf("offer %q: market must be on-demand or spot", s)
	}
	return k, nil
}

// Compare orders keys by cloud, region, zone, type and market: the stable
// order every tie in the planner is broken by.
func (k OfferKey) Compare(o OfferKey) int {
	return cmp.Or(
		cmp.Compare(k.Cloud, o.Cloud),
		cmp.Compare(k.Region, o.Region),
		cmp.Compare(k.Zone, o.Zone),
		cmp.Compare(k.InstanceType, o.InstanceType),
		cmp.Compare(k.Market, o.Market),
	)
}

// Unlimited is an Available count meaning no limit is known.
const Unlimited = -1

// Offer is a zone-level offer the planner can place nodes on.
type Offer struct {
	OfferKey
	GPUModel  string  `json:"gpuModel"`
	GPUs      int     `json:"gpus"`
	VCPUs     int     `json:"vcpus"`
	MemoryGiB float64 `json:"memoryGiB"`
	// PriceMicros is US$ per node-hour × 1e6, what the account pays;
	// zero or less is unknown.
	PriceMicros int64 `json:"priceMicros"`
	// AccountTerms say how the price comes from the list price, when the
	// account does not pay list (ApplyAccountPrices).
	AccountTerms
	// Available is how many more nodes the offer can take, or Unlimited.
	// Nodes already running on it are not counted against it.
	Available int `json:"available"`
	// NotOffered says the zone does not offer the type at all, as the
	// cloud's offerings API reports.
	NotOffered bool `json:"notOffered,omitempty"`
	// Quotas is what each node counts against (see Quota).
	Quotas []QuotaCount `json:"quotas,omitempty"`
	// Derived says the price is the catalog's estimate, not a quote.
	Derived bool `json:"derived,omitempty"`
}

// Expand turns catalog prices into zone-level offers for the given regions
// of each cloud. A regional price applies to every zone of its region; a
// zone-level price replaces it in that zone. Offers come out sorted by key.
func Expand(cat *catalog.Catalog, regions map[string][]string) []Offer {
	type typeKey struct {
		cloud, region, instanceType string
		market                      catalog.Market
	}
	zoneRows := map[typeKey]map[string]catalog.Offer{}
	regional := map[typeKey]catalog.Offer{}
	for _, o := range cat.Offers {
		if !slices.Contains(regions[o.Cloud], o.Region) {
			continue
		}
		k := typeKey{o.Cloud, o.Region, o.InstanceType, o.Market}
		if o.Zone == "" {
			regional[k] = o
			continue
		}
		if zoneRows[k] == nil {
			zoneRows[k] = map[string]catalog.Offer{}
		}
		zoneRows[k][o.Zone] = o
	}
	var out []Offer
	add := func(o catalog.Offer, zone string) {
		out = append(out, Offer{
			OfferKey:    OfferKey{o.Cloud, o.Region, zone, o.InstanceType, o.Market},
			GPUModel:    o.GPUModel,
			GPUs:        o.GPUs,
			VCPUs:       o.VCPUs,
			MemoryGiB:   o.MemoryGiB,
			PriceMicros: o.PriceMicros,
			Available:   Unlimited,
			Quotas:      quotaCounts(cat, o.Cloud, o.InstanceType, o.Market),
			Derived:     o.Derived,
		})
	}
	for k, o := range regional {
		region, ok := cat.Region(k.cloud, k.region)
		if !ok {
			continue
		}
		for _, zone := range region.Zones {
			if z, ok := zoneRows[k][zone]; ok {
				add(z, zone)
			} else {
				add(o, zone)
			}
		}
	}
	for k, zones := range zoneRows {
		if _, ok := regional[k]; ok {
			continue
		}
		for zone, o := range zones {
			add(o, zone)
		}
	}
	slices.SortFunc(out, func(a, b Offer) int { return a.Compare(b.OfferKey) })
	return out
}
