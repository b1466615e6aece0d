// SPDX-License-Identifier: Apache-2.0

package schema

import (
	"math"
	"math/bits"
	"slices"

	"github.com/gpufleet/gpufleet/schema/catalog"
)

// Pricing is gpufleet.cue's pricing: what the account pays each cloud
// where it is not the list price. A nil entry is a cloud at list price.
type Pricing struct {
	AWS    *CloudPricing `json:"aws,omitempty"`
	Azure  *CloudPricing `json:"azure,omitempty"`
	GCP    *CloudPricing `json:"gcp,omitempty"`
	Lambda *CloudPricing `json:"lambda,omitempty"`
	OCI    *CloudPricing `json:"oci,omitempty"`
}

// CloudPricing is one cloud's account prices. For a node-hour of a type
// bought on a market, the most specific term that covers the market
// applies — the type's, then its family's (catalog.Family), then the
// cloud's discount — and replaces the others: terms never add up.
type CloudPricing struct {
	// Discount is the percentage off every list price, above 0 and below
	// 100.
	Discount *float64 `json:"discount,omitempty"`
	// Markets are what the cloud's terms apply to, unless a term names
	// its own: on-demand only by default, as agreements seldom discount
	// spot.
	Markets  []catalog.Market     `json:"markets"`
	Families map[string]PriceTerm `json:"families,omitempty"`
	Types    map[string]PriceTerm `json:"types,omitempty"`
}

// PriceTerm is a family's or a type's own term: a discount, which
// replaces the cloud's, or a private price, which replaces the list price.
type PriceTerm struct {
	// Discount is in percent, as CloudPricing's.
	Discount *float64 `json:"discount,omitempty"`
	// Price is US$ per node-hour.
	Price *float64 `json:"price,omitempty"`
	// Markets it covers; the cloud's when nil.
	Markets []catalog.Market `json:"markets,omitempty"`
}

// Cloud returns a cloud's account pricing, nil when it pays list prices.
func (p Pricing) Cloud(cloud string) *CloudPricing {
	switch cloud {
	case catalog.AWS:
		return p.AWS
	case catalog.Azure:
		return p.Azure
	case catalog.GCP:
		return p.GCP
	case catalog.Lambda:
		return p.Lambda
	case catalog.OCI:
		return p.OCI
	}
	return nil
}

// AccountPrice is what an account pays for a node-hour, and how it comes
// from the list price.
type AccountPrice struct {
	Micros int64
	// DiscountPPM is the share taken off the list price, in millionths
	// of it (120000 is 12 %); zero for the list price or a private one.
	DiscountPPM int64
	// Private says Micros is the account's own price for the type.
	Private bool
}

// ppm is a fraction in millionths, the precision discounts are taken to.
const ppm = 1_000_000

// DiscountPPM is a discount in percent as millionths of the list price,
// rounded to the nearest: the one conversion every price and every
// message uses, so that 12.5 % off is the same cut everywhere.
func DiscountPPM(percent float64) int64 { return int64(math.Round(percent * (ppm / 100))) }

// Price is what the account pays for a node-hour of instanceType bought on
// market in cloud, whose list price is list micro-dollars. A list price
// that is unknown (zero or less) stays unknown: terms price what the
// cloud sells, and an offer without a price is not one.
//
// It is the one place list prices become account prices, so that every
// plan made from the same list prices and specs is the same, byte for
// byte, wherever it is made. Discounts are exact in integers: list × (1 −
// discount), rounded half up to a micro-dollar.
func (p Pricing) Price(cloud, instanceType string, market catalog.Market, list int64) AccountPrice {
	out := AccountPrice{Micros: list}
	cp := p.Cloud(cloud)
	if cp == nil || list <= 0 {
		return out
	}
	term, ok := cp.termFor(cloud, instanceType, market)
	switch {
	case !ok:
		return out
	case term.Price != nil:
		out.Micros, out.Private = catalog.Micros(*term.Price), true
	case term.Discount != nil:
		d := min(max(DiscountPPM(*term.Discount), 0), ppm)
		out.Micros, out.DiscountPPM = discounted(list, d), d
	}
	return out
}

// termFor finds the most specific term covering market.
func (cp *CloudPricing) termFor(cloud, instanceType string, market catalog.Market) (PriceTerm, bool) {
	covers := func(markets []catalog.Market) bool {
		if markets == nil {
			markets = cp.Markets
		}
		if markets == nil {
			markets = []catalog.Market{catalog.OnDemand}
		}
		return slices.Contains(markets, market)
	}
	if t, ok := cp.Types[instanceType]; ok && covers(t.Markets) {
		return t, true
	}
	if t, ok := cp.Families[catalog.Family(cloud, instanceType)]; ok && covers(t.Markets) {
		return t, true
	}
	if cp.Discount != nil && covers(nil) {
		return PriceTerm{Discount: cp.Discount}, true
	}
	return PriceTerm{}, false
}

// discounted is list × (1 − d/ppm), rounded half up, in 128 bits so that
// no list price overflows.
func discounted(list, d int64) int64 {
	hi, lo := bits.Mul64(uint64(list), uint64(ppm-d))
	lo, carry := bits.Add64(lo, ppm/2, 0)
	q, _ := bits.Div64(hi+carry, lo, ppm)
	return int64(q)
}
