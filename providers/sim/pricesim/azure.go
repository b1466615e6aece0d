// SPDX-License-Identifier: Apache-2.0

package pricesim

import (
	"cmp"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// Azure serves the Retail Prices API (GET /api/retail/prices) with its
// OData $filter of "field eq 'value'" clauses joined by "and", paged by
// $skip with an absolute NextPageLink. Every Azure offer of the world's
// catalog becomes a Consumption row, a spot offer a "… Spot" row; each
// on-demand row has Windows, Low Priority and Reservation siblings beside
// it, as the real list does.
type Azure struct {
	world *sim.World
	opts  Options
}

var _ http.Handler = (*Azure)(nil)

// NewAzure returns the Retail Prices front of a world.
func NewAzure(world *sim.World, opts Options) *Azure { return &Azure{world: world, opts: opts} }

const azurePageSize = 100

type azureItem struct {
	CurrencyCode         string  `json:"currencyCode"`
	TierMinimumUnits     float64 `json:"tierMinimumUnits"`
	ReservationTerm      string  `json:"reservationTerm,omitempty"`
	RetailPrice          float64 `json:"retailPrice"`
	UnitPrice            float64 `json:"unitPrice"`
	ArmRegionName        string  `json:"armRegionName"`
	Location             string  `json:"location"`
	EffectiveStartDate   string  `json:"effectiveStartDate"`
	MeterID              string  `json:"meterId"`
	MeterName            string  `json:"meterName"`
	ProductID            string  `json:"productId"`
	SkuID                string  `json:"skuId"`
	ProductName          string  `json:"productName"`
	SkuName              string  `json:"skuName"`
	ServiceName          string  `json:"serviceName"`
	ServiceID            string  `json:"serviceId"`
	ServiceFamily        string  `json:"serviceFamily"`
	UnitOfMeasure        string  `json:"unitOfMeasure"`
	Type                 string  `json:"type"`
	IsPrimaryMeterRegion bool    `json:"isPrimaryMeterRegion"`
	ArmSkuName           string  `json:"armSkuName"`
}

type azurePage struct {
	BillingCurrency    string      `json:"BillingCurrency"`
	CustomerEntityID   string      `json:"CustomerEntityId"`
	CustomerEntityType string      `json:"CustomerEntityType"`
	Items              []azureItem `json:"Items"`
	NextPageLink       *string     `json:"NextPageLink"`
	Count              int         `json:"Count"`
}

func (s *Azure) fail(w http.ResponseWriter, status int, code, message string) {
	if status == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", s.opts.retryAfter())
	}
	writeJSON(w, status, "application/json; charset=utf-8", map[string]any{"Error": map[string]string{"Code": code, "Message": message}})
}

// azureFields maps the filterable fields to an item's values.
var azureFields = map[string]func(azureItem) string{
	"serviceName":   func(i azureItem) string { return i.ServiceName },
	"serviceFamily": func(i azureItem) string { return i.ServiceFamily },
	"priceType":     func(i azureItem) string { return i.Type },
	"armRegionName": func(i azureItem) string { return i.ArmRegionName },
	"armSkuName":    func(i azureItem) string { return i.ArmSkuName },
	"skuName":       func(i azureItem) string { return i.SkuName },
	"productName":   func(i azureItem) string { return i.ProductName },
	"meterName":     func(i azureItem) string { return i.MeterName },
	"location":      func(i azureItem) string { return i.Location },
	"currencyCode":  func(i azureItem) string { return i.CurrencyCode },
}

var azureClause = regexp.MustCompile(`^\s*(\w+)\s+eq\s+'([^']*)'\s*$`)
var azureAnd = regexp.MustCompile(`(?i)\s+and\s+`)

type azureCondition struct{ field, value string }

// parseFilter reads the subset of OData the API documents for prices.
// Values compare case-sensitively, as the real API's do.
func parseFilter(filter string) ([]azureCondition, error) {
	if strings.TrimSpace(filter) == "" {
		return nil, nil
	}
	var out []azureCondition
	for _, clause := range azureAnd.Split(filter, -1) {
		m := azureClause.FindStringSubmatch(clause)
		if m == nil {
			return nil, fmt.Errorf("Invalid OData filter clause %q", clause)
		}
		name := ""
		for f := range azureFields {
			if strings.EqualFold(f, m[1]) {
				name = f
			}
		}
		if name == "" {
			return nil, fmt.Errorf("Invalid OData filter: unknown field %q", m[1])
		}
		out = append(out, azureCondition{name, m[2]})
	}
	return out, nil
}

func (s *Azure) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet || r.URL.Path != "/api/retail/prices" {
		s.fail(w, http.StatusNotFound, "NotFound", "The emulator serves GET /api/retail/prices.")
		return
	}
	q := r.URL.Query()
	conditions, err := parseFilter(q.Get("$filter"))
	if err != nil {
		s.fail(w, http.StatusBadRequest, "BadRequest", err.Error())
		return
	}
	region := ""
	for _, c := range conditions {
		if c.field == "armRegionName" {
			region = c.value
		}
	}
	if e := intercept(r.Context(), s.world, sim.Call{Cloud: catalog.Azure, Op: "RetailPrices", Region: region}); e != nil {
		code := cmp.Or(e.Code, "InternalServerError")
		if e.Kind == sim.KindThrottled {
			code = cmp.Or(e.Code, "TooManyRequests")
		}
		s.fail(w, faultStatus(e), code, e.Message)
		return
	}
	skip := 0
	if raw := q.Get("$skip"); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 0 {
			s.fail(w, http.StatusBadRequest, "BadRequest", fmt.Sprintf("Invalid $skip %q", raw))
			return
		}
		skip = n
	}

	var matched []azureItem
	for _, item := range s.items() {
		if slices.ContainsFunc(conditions, func(c azureCondition) bool { return azureFields[c.field](item) != c.value }) {
			continue
		}
		matched = append(matched, item)
	}
	start, end, more := page(len(matched), skip, s.opts.pageSize(azurePageSize))
	out := azurePage{BillingCurrency: "USD", CustomerEntityID: "Default", CustomerEntityType: "Retail", Items: matched[start:end], Count: end - start}
	if out.Items == nil {
		out.Items = []azureItem{}
	}
	if more {
		next := url.Values{}
		for k, v := range q {
			next[k] = v
		}
		next.Set("$skip", strconv.Itoa(end))
		link := (&url.URL{Scheme: scheme(r), Host: r.Host, Path: r.URL.Path, RawQuery: next.Encode()}).String()
		out.NextPageLink = &link
	}
	writeJSON(w, http.StatusOK, "application/json; charset=utf-8", out)
}

func scheme(r *http.Request) string {
	if r.TLS != nil {
		return "https"
	}
	return "http"
}

// items lists the retail price rows the world's catalog implies.
func (s *Azure) items() []azureItem {
	var out []azureItem
	for _, o := range s.world.Catalog().Offers {
		if o.Cloud != catalog.Azure || o.PriceMicros <= 0 {
			continue
		}
		sku := strings.ReplaceAll(strings.TrimPrefix(o.InstanceType, "Standard_"), "_", " ")
		product := "Virtual Machines " + strings.ReplaceAll(sku, " ", "") + " Series"
		price := float64(o.PriceMicros) / 1e6
		row := func(kind, skuName, productName, priceType string, dollars float64) azureItem {
			product := id("BCDFGHJKLMNPQRSTVWXZ0123456789", 12, "product", o.Region, o.InstanceType, kind)
			meter := id("0123456789abcdef", 32, "meter", o.Region, o.InstanceType, kind)
			return azureItem{
				CurrencyCode: "USD", RetailPrice: dollars, UnitPrice: dollars,
				ArmRegionName: o.Region, Location: o.Region, EffectiveStartDate: "2026-11-01T00:00:00Z",
				MeterID:   fmt.Sprintf("%s-%s-%s-%s-%s", meter[:8], meter[8:12], meter[12:16], meter[16:20], meter[20:]),
				MeterName: skuName, ProductID: product, SkuID: product + "/" + id("0123456789ABCDEF", 4, kind),
				ProductName: productName, SkuName: skuName,
				ServiceName: "Virtual Machines", ServiceID: "DZH313Z7MMC8", ServiceFamily: "Compute",
				UnitOfMeasure: "1 Hour", Type: priceType, IsPrimaryMeterRegion: true, ArmSkuName: o.InstanceType,
			}
		}
		if o.Market == catalog.Spot {
			out = append(out, row("spot", sku+" Spot", product, "Consumption", price))
			out = append(out, row("spot-windows", sku+" Spot", product+" Windows", "Consumption", price+float64(o.VCPUs)*0.046))
			continue
		}
		out = append(out,
			row("linux", sku, product, "Consumption", price),
			row("windows", sku, product+" Windows", "Consumption", price+float64(o.VCPUs)*0.046),
			row("low-priority", sku+" Low Priority", product, "Consumption", price/5),
			row("devtest", sku, product, "DevTestConsumption", price),
		)
		reserved := row("reservation", sku, product, "Reservation", price*0.62*8760)
		reserved.ReservationTerm = "1 Year"
		out = append(out, reserved)
	}
	slices.SortStableFunc(out, func(a, b azureItem) int {
		return cmp.Or(cmp.Compare(a.ArmRegionName, b.ArmRegionName), cmp.Compare(a.ArmSkuName, b.ArmSkuName), cmp.Compare(a.MeterID, b.MeterID))
	})
	return out
}
