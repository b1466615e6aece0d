// SPDX-License-Identifier: Apache-2.0

package planner

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gpufleet/gpufleet/schema"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// Reason says why an offer cannot serve a workload. Each offer is rejected
// for the first reason that applies, in the order of the filters below.
type Reason string

const (
	RejectWrongGPU     Reason = "wrong GPU model"
	RejectGPUsPerNode  Reason = "wrong GPUs per node"
	RejectCloud        Reason = "cloud not allowed"
	RejectRegion       Reason = "region not allowed"
	RejectZone         Reason = "zone not allowed"
	RejectMarket       Reason = "capacity type not allowed"
	RejectNotOffered   Reason = "not offered in the zone"
	RejectBadPrice     Reason = "bad price data"
	RejectNoEFA        Reason = "no EFA"
	RejectOverMaxPrice Reason = "over max price"
	RejectBlocklisted  Reason = "blocklisted"
	RejectNoCapacity   Reason = "no capacity"
)

// filter is one eligibility check. Cheap, selective checks come first:
// most offers fail on the GPU model, so later checks see few offers.
type filter struct {
	reason Reason
	// ok reports whether the offer passes; running says the workload
	// already has nodes on it, which exempts it from capacity and blocklist
	// checks: a running node needs no new capacity.
	ok func(w *schema.Workload, o *Offer, running bool) bool
}

// regionMemo is the last region rule match made: offers are looked at in
// key order, so a workload's run of offers in one region asks about the
// same region over and over, and matching its rules (globs, geographies)
// is most of what eligibility costs.
type regionMemo struct {
	spec          *schema.Workload
	rules         *schema.RegionRules
	cloud, region string
	ok, set       bool
}

// regionAllowed reports whether a workload's region rules allow a cloud's
// region.
func (p *planning) regionAllowed(w *schema.Workload, cloud, region string) bool {
	m := &p.lastRegion
	if m.set && m.spec == w && m.cloud == cloud && m.region == region {
		return m.ok
	}
	rules := m.rules
	if !m.set || m.spec != w {
		rules = p.regionRules[w]
		if rules == nil {
			rules = schema.NewRegionRules(w.Placement.Regions.Allow, w.Placement.Regions.Deny)
			p.regionRules[w] = rules
		}
	}
	ok := rules.Match(cloud, region)
	*m = regionMemo{spec: w, rules: rules, cloud: cloud, region: region, ok: ok, set: true}
	return ok
}

func (p *planning) filters() []filter {
	return []filter{
		{RejectWrongGPU, func(w *schema.Workload, o *Offer, _ bool) bool { return o.GPUModel == w.GPU.Model }},
		{RejectGPUsPerNode, func(w *schema.Workload, o *Offer, _ bool) bool { return o.GPUs == w.GPU.PerNode }},
		{RejectCloud, func(w *schema.Workload, o *Offer, _ bool) bool { return slices.Contains(w.Placement.Clouds, o.Cloud) }},
		{RejectRegion, func(w *schema.Workload, o *Offer, _ bool) bool { return p.regionAllowed(w, o.Cloud, o.Region) }},
		{RejectZone, func(w *schema.Workload, o *Offer, _ bool) bool {
			return len(w.Placement.Zones) == 0 || slices.Contains(w.Placement.Zones, o.Zone)
		}},
		{RejectMarket, func(w *schema.Workload, o *Offer, _ bool) bool { return marketAllowed(w.Capacity, o.Market) }},
		{RejectNoEFA, func(w *schema.Workload, o *Offer, _ bool) bool {
			return !w.EFA || o.Cloud != catalog.AWS || catalog.EFAInterfaces(o.InstanceType) > 0
		}},
		{RejectNotOffered, func(_ *schema.Workload, o *Offer, running bool) bool { return running || !o.NotOffered }},
		{RejectBadPrice, func(_ *schema.Workload, o *Offer, _ bool) bool { return ValidPrice(*o) }},
		{RejectOverMaxPrice, func(w *schema.Workload, o *Offer, _ bool) bool {
			return w.MaxPricePerNodeHour == nil || o.PriceMicros <= catalog.Micros(*w.MaxPricePerNodeHour)
		}},
		{RejectBlocklisted, func(_ *schema.Workload, o *Offer, running bool) bool { return running || !p.blocked[o.OfferKey] }},
		{RejectNoCapacity, func(_ *schema.Workload, o *Offer, running bool) bool { return running || o.Available != 0 }},
	}
}

// maxPriceMicros bounds a believable node-hour price ($10,000); a price
// above it is a data error, and keeping prices bounded keeps every cost sum
// far from overflowing.
const maxPriceMicros = 10_000 * 1_000_000

// maxGPUHourMicros bounds a believable price per GPU-hour ($100, several
// times the dearest GPU any cloud rents); the price loaders drop rows above
// it too.
const maxGPUHourMicros = 100 * 1_000_000

// minGPUHourMicros bounds a believable price per GPU-hour from below ($0.01).
// The cheapest GPU any public price list rents goes for about $0.026 per
// GPU-hour (an Azure spot slice of a Radeon MI25; AWS's Inferentia at
// $0.031, GCP's cheapest spot GPU at $0.066, the embedded catalog's at
// $0.063), so no real price is refused, while the micro-dollar
// placeholders some price lists carry are. Planned with, such a price
// would be cheaper than anything real, and so small that the keep bonus
// running nodes get rounds to nothing.
const minGPUHourMicros = 10_000

// ValidPrice reports whether an offer's price can be planned with: known,
// and believable for its GPUs, neither a placeholder nor a mistake. An
// offer without one is never chosen, and a node running on it is never
// moved or deleted because of its price. Believable is asked of the list
// price, which is the cloud's data; what the account pays only has to be
// a price, as a deep discount or a private rate is the account's to have.
func ValidPrice(o Offer) bool {
	gpus := int64(max(o.GPUs, 1))
	list := o.ListPrice()
	return list >= minGPUHourMicros*gpus && list < maxPriceMicros && list <= maxGPUHourMicros*gpus &&
		o.PriceMicros > 0 && o.PriceMicros < maxPriceMicros
}

// CheckPrices refuses offers that leave an enabled cloud without a single
// valid price. Planning on them would read every node in that cloud as
// misplaced (a catalog of zeros, or one that lost a cloud) and move the
// whole fleet for no true reason.
func CheckPrices(offers []Offer, clouds []string, source string) error {
	valid := map[string]int{}
	for _, o := range offers {
		if ValidPrice(o) {
			valid[o.Cloud]++
		}
	}
	var missing []string
	for _, c := range clouds {
		if valid[c] == 0 {
			missing = append(missing, c)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("the prices (%s) have no valid offer for %s in the configured regions: every price is missing, zero, negative or implausible. "+
		"Refusing to plan, since every node there would look misplaced; fix the catalog or refresh it with `gpufleet catalog refresh`",
		source, strings.Join(missing, ", "))
}

func marketAllowed(policy string, m catalog.Market) bool {
	switch policy {
	case schema.CapacitySpot:
		return m == catalog.Spot
	case schema.CapacitySpotFallback:
		return true
	default:
		return m == catalog.OnDemand
	}
}
