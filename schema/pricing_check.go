// SPDX-License-Identifier: Apache-2.0

package schema

import (
	"maps"
	"slices"

	"github.com/gpufleet/gpufleet/schema/catalog"
)

// MaxPrivatePrice bounds a private price, in US$ per node-hour: the planner
// takes no price at or above it as believable.
const MaxPrivatePrice = 10_000

// checkPricing refuses account prices that cannot be what an account
// pays: discounts outside (0, 100) percent, prices that are not
// positive, families and types the catalog does not sell, terms that state
// both a discount and a price or neither.
func (l *loader) checkPricing(p Pricing, fail func(at string, format string, args ...any)) {
	for _, cloud := range catalog.Clouds {
		cp := p.Cloud(cloud)
		if cp == nil {
			continue
		}
		at := "pricing." + cloud
		if cp.Discount != nil {
			checkDiscount(*cp.Discount, at+".discount", fail)
		}
		checkMarkets(cp.Markets, at+".markets", fail)
		types, families := l.typesOf(cloud)
		for _, name := range slices.Sorted(maps.Keys(cp.Families)) {
			fat := at + ".families." + pathString([]string{name})
			if !slices.Contains(families, name) {
				fail(fat, "the catalog has no %s family %q%s", cloud, name, didYouMean(name, families))
				continue
			}
			term := cp.Families[name]
			if term.Price != nil {
				fail(fat+".price", "a private price is per node-hour of one type, and a family's sizes differ: give the family a discount, or each type its price")
				continue
			}
			checkTerm(term, fat, fail)
		}
		for _, name := range slices.Sorted(maps.Keys(cp.Types)) {
			tat := at + ".types." + pathString([]string{name})
			if !slices.Contains(types, name) {
				fail(tat, "the catalog has no %s type %q%s", cloud, name, didYouMean(name, types))
				continue
			}
			checkTerm(cp.Types[name], tat, fail)
		}
	}
}

func checkTerm(t PriceTerm, at string, fail func(at string, format string, args ...any)) {
	switch {
	case t.Discount != nil && t.Price != nil:
		fail(at, "a term is a discount or a private price, not both")
	case t.Discount != nil:
		checkDiscount(*t.Discount, at+".discount", fail)
	case t.Price != nil:
		// Prices are whole micro-dollars: one that rounds to none is none.
		if p := *t.Price; catalog.Micros(p) <= 0 || p >= MaxPrivatePrice {
			fail(at+".price", "a private price is US$ per node-hour, above 0 and below %d; %v is not one", MaxPrivatePrice, p)
		}
	default:
		fail(at, "a term states a discount (12 for 12 %% off) or a private price (US$ per node-hour); this one states neither")
	}
	if t.Markets != nil {
		checkMarkets(t.Markets, at+".markets", fail)
	}
}

func checkDiscount(d float64, at string, fail func(at string, format string, args ...any)) {
	// Discounts are taken in millionths: one that rounds to nothing, or
	// to all, is no discount.
	if cut := DiscountPPM(d); cut <= 0 || cut >= ppm {
		fail(at, "a discount is a percentage off the list price, above 0 and below 100 (12 for 12 %% off); %v is not one", d)
	}
}

func checkMarkets(markets []catalog.Market, at string, fail func(at string, format string, args ...any)) {
	if len(markets) == 0 {
		fail(at, "no market is named, so the terms would cover nothing: name on-demand, spot or both")
		return
	}
	names := make([]string, len(markets))
	for i, m := range markets {
		names[i] = string(m)
	}
	if dup := firstDuplicate(names); dup != "" {
		fail(at, "market %q is listed twice", dup)
	}
}

// typesOf lists the instance types the catalog has of a cloud, and their
// families, each sorted.
func (l *loader) typesOf(cloud string) (types, families []string) {
	for _, o := range l.cat.Offers {
		if o.Cloud != cloud {
			continue
		}
		types = append(types, o.InstanceType)
		families = append(families, catalog.Family(cloud, o.InstanceType))
	}
	slices.Sort(types)
	slices.Sort(families)
	return slices.Compact(types), slices.Compact(families)
}
