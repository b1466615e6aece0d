// SPDX-License-Identifier: Apache-2.0

package planner

import (
	"strconv"

	"github.com/gpufleet/gpufleet/schema"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// AccountTerms say how an offer's price comes from the cloud's list price
// when the account pays another: an agreement's discount or a private
// price. They are zero for an offer at list price, and travel with the
// price into placements and actions so that every output can say so.
type AccountTerms struct {
	// ListMicros is the list price the account price was made from.
	ListMicros int64 `json:"listMicros,omitempty"`
	// DiscountPPM is the share off the list price in millionths of it
	// (120000 is 12 %).
	DiscountPPM int64 `json:"discountPpm,omitempty"`
	// PrivatePrice says the price is the account's own for the type.
	PrivatePrice bool `json:"privatePrice,omitempty"`
}

// Adjusted reports whether the price is not the list price.
func (t AccountTerms) Adjusted() bool { return t.ListMicros > 0 }

// Note says how an account price was made, "" for a list price: the one
// wording every plan, comment, status and explanation uses.
func (t AccountTerms) Note() string {
	switch {
	case !t.Adjusted():
		return ""
	case t.PrivatePrice:
		return "private price, list " + catalog.Money(t.ListMicros)
	}
	return "list " + catalog.Money(t.ListMicros) + " − " + strconv.FormatFloat(float64(t.DiscountPPM)/10_000, 'f', -1, 64) + " %"
}

// Annotate follows a shown price with its note, in brackets, when it is
// not the list price.
func (t AccountTerms) Annotate(price string) string {
	if note := t.Note(); note != "" {
		return price + " (" + note + ")"
	}
	return price
}

// PriceText writes a node-hour price with how it was made: "$52.80/h
// (list $60.00 − 12 %)", or "$52.80/h" at list price.
func PriceText(micros int64, t AccountTerms) string {
	return t.Annotate(catalog.Money(micros) + "/h")
}

// ListPrice is the cloud's list price of an offer, whatever the account
// pays.
func (o Offer) ListPrice() int64 {
	if o.Adjusted() {
		return o.ListMicros
	}
	return o.PriceMicros
}

// ApplyAccountPrices sets each offer's price to what the account pays, as
// pricing states it, keeping the list price beside it. Offers whose list
// price is not valid are left as they are: an account term prices what
// the cloud sells, and cannot make bad price data good. Applying it again
// changes nothing, as it prices from the list price each time.
//
// Callers apply it where offers enter planning (NewInput, and the
// reconciler's live offers), so that the plan, its budgets, baseline,
// diff and every output count the same prices.
func ApplyAccountPrices(offers []Offer, pricing schema.Pricing) {
	for i := range offers {
		o := &offers[i]
		list := o.ListPrice()
		o.PriceMicros, o.AccountTerms = list, AccountTerms{}
		if !ValidPrice(*o) {
			continue
		}
		p := pricing.Price(o.Cloud, o.InstanceType, o.Market, list)
		if p.Micros == list && !p.Private {
			continue
		}
		o.PriceMicros = p.Micros
		o.AccountTerms = AccountTerms{ListMicros: list, DiscountPPM: p.DiscountPPM, PrivatePrice: p.Private}
	}
}
