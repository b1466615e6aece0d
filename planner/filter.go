package planner

import (
	"slices"

	"github.com/gpufleet/gpufleet/planner/catalog"
	"github.com/gpufleet/gpufleet/schema"
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
	RejectBadPrice     Reason = "bad price data"
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

func (p *planning) filters() []filter {
	return []filter{
		{RejectWrongGPU, func(w *schema.Workload, o *Offer, _ bool) bool { return o.GPUModel == w.GPU.Model }},
		{RejectGPUsPerNode, func(w *schema.Workload, o *Offer, _ bool) bool { return o.GPUs == w.GPU.PerNode }},
		{RejectCloud, func(w *schema.Workload, o *Offer, _ bool) bool { return slices.Contains(w.Placement.Clouds, o.Cloud) }},
		{RejectRegion, func(w *schema.Workload, o *Offer, _ bool) bool {
			return schema.MatchRegion(o.Region, w.Placement.Regions.Allow, w.Placement.Regions.Deny)
		}},
		{RejectZone, func(w *schema.Workload, o *Offer, _ bool) bool {
			return len(w.Placement.Zones) == 0 || slices.Contains(w.Placement.Zones, o.Zone)
		}},
		{RejectMarket, func(w *schema.Workload, o *Offer, _ bool) bool { return marketAllowed(w.Capacity, o.Market) }},
		{RejectBadPrice, func(_ *schema.Workload, o *Offer, _ bool) bool {
			return o.PriceMicros > 0 && o.PriceMicros < maxPriceMicros
		}},
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
