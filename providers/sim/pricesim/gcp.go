// SPDX-License-Identifier: Apache-2.0

package pricesim

import (
	"cmp"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// GCP serves the Cloud Billing Catalog's SKU listing (GET
// /v1/services/{service}/skus), paged by pageSize and pageToken, for
// Compute Engine's service 6F81-5844-456A. GCP bills a GPU machine as
// cores, memory and GPUs, so each machine series of the world's catalog
// is split into a core, a RAM and a GPU SKU per region and market, priced
// so that vCPUs × core + GiB × RAM + GPUs × GPU gives back the catalog's
// price for every machine type of the series; regions whose parts cost
// the same share one SKU, listing them all in serviceRegions.
type GCP struct {
	world *sim.World
	opts  Options
}

var _ http.Handler = (*GCP)(nil)

// NewGCP returns the billing catalog front of a world.
func NewGCP(world *sim.World, opts Options) *GCP { return &GCP{world: world, opts: opts} }

const (
	gcpComputeService = "6F81-5844-456A"
	gcpPageSize       = 5000
)

// gcpSeries names the SKUs of each machine series, as the billing catalog
// describes them less " running in …".
var gcpSeries = map[string]struct{ core, ram, gpu string }{
	"a3-highgpu":  {"A3 Instance Core", "A3 Instance Ram", "Nvidia H100 80GB GPU"},
	"a3-ultragpu": {"A3 Ultra Instance Core", "A3 Ultra Instance Ram", "Nvidia H200 141GB GPU"},
	"a3-megagpu":  {"A3 Mega Instance Core", "A3 Mega Instance Ram", "Nvidia H100 80GB Mega GPU"},
	"a2-highgpu":  {"A2 Instance Core", "A2 Instance Ram", "Nvidia Tesla A100 GPU"},
	"a2-ultragpu": {"A2 Ultra Instance Core", "A2 Ultra Instance Ram", "Nvidia A100 80GB GPU"},
	"g2-standard": {"G2 Instance Core", "G2 Instance Ram", "Nvidia L4 GPU"},
}

// seriesNames are the SKU descriptions of a series: gcpSeries' names, or
// for another series those the billing catalog gives its kind — the
// family and the kind less "gpu" ("a3-megagpu": "A3 Mega Instance
// Core"; "high" and "standard" are the family's own) and the GPU by its
// model ("Nvidia B200 GPU").
func seriesNames(series, gpuModel string) (struct{ core, ram, gpu string }, bool) {
	if names, ok := gcpSeries[series]; ok {
		return names, true
	}
	words := strings.Split(series, "-")
	if len(words) < 2 || words[0] == "" || gpuModel == "" {
		return struct{ core, ram, gpu string }{}, false
	}
	name := strings.ToUpper(words[0])
	if kind := strings.TrimSuffix(words[1], "gpu"); kind != "" && kind != "high" && kind != "standard" {
		name += " " + strings.ToUpper(kind[:1]) + kind[1:]
	}
	return struct{ core, ram, gpu string }{name + " Instance Core", name + " Instance Ram", "Nvidia " + gpuModel + " GPU"}, true
}

// The split of a machine's price, when its series' sizes cannot tell it:
// memory costs ramPerCore of a core per GiB (GCP's usual ratio), and the
// GPUs take gpuShare of the whole (what the quotes in the catalog show).
const (
	ramPerCore = 0.134
	gpuShare   = 0.8
)

type gcpMoney struct {
	CurrencyCode string `json:"currencyCode"`
	Units        string `json:"units"`
	Nanos        int64  `json:"nanos"`
}

type gcpSKU struct {
	Name        string `json:"name"`
	SkuID       string `json:"skuId"`
	Description string `json:"description"`
	Category    struct {
		ServiceDisplayName string `json:"serviceDisplayName"`
		ResourceFamily     string `json:"resourceFamily"`
		ResourceGroup      string `json:"resourceGroup"`
		UsageType          string `json:"usageType"`
	} `json:"category"`
	ServiceRegions      []string         `json:"serviceRegions"`
	PricingInfo         []gcpPricingInfo `json:"pricingInfo"`
	ServiceProviderName string           `json:"serviceProviderName"`
}

type gcpPricingInfo struct {
	Summary           string `json:"summary"`
	PricingExpression struct {
		UsageUnit                string  `json:"usageUnit"`
		UsageUnitDescription     string  `json:"usageUnitDescription"`
		BaseUnit                 string  `json:"baseUnit"`
		BaseUnitDescription      string  `json:"baseUnitDescription"`
		BaseUnitConversionFactor float64 `json:"baseUnitConversionFactor"`
		DisplayQuantity          float64 `json:"displayQuantity"`
		TieredRates              []struct {
			StartUsageAmount float64  `json:"startUsageAmount"`
			UnitPrice        gcpMoney `json:"unitPrice"`
		} `json:"tieredRates"`
	} `json:"pricingExpression"`
	CurrencyConversionRate float64 `json:"currencyConversionRate"`
	EffectiveTime          string  `json:"effectiveTime"`
}

func (s *GCP) fail(w http.ResponseWriter, status int, gstatus, message string) {
	if status == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", s.opts.retryAfter())
	}
	writeJSON(w, status, "application/json; charset=UTF-8", map[string]any{"error": map[string]any{"code": status, "message": message, "status": gstatus}})
}

func (s *GCP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	service, ok := strings.CutPrefix(r.URL.Path, "/v1/services/")
	service, ok2 := strings.CutSuffix(service, "/skus")
	if r.Method != http.MethodGet || !ok || !ok2 || strings.Contains(service, "/") {
		s.fail(w, http.StatusNotFound, "NOT_FOUND", "The emulator serves GET /v1/services/{service}/skus.")
		return
	}
	q := r.URL.Query()
	switch key := q.Get("key"); {
	case key == "":
		s.fail(w, http.StatusForbidden, "PERMISSION_DENIED", "The request is missing a valid API key.")
		return
	case s.opts.APIKey != "" && key != s.opts.APIKey:
		s.fail(w, http.StatusBadRequest, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key.")
		return
	}
	if e := intercept(r.Context(), s.world, sim.Call{Cloud: catalog.GCP, Op: "ListSkus"}); e != nil {
		status := faultStatus(e)
		gstatus := cmp.Or(e.Code, "INTERNAL")
		if status == http.StatusTooManyRequests {
			gstatus = cmp.Or(e.Code, "RESOURCE_EXHAUSTED")
		}
		s.fail(w, status, gstatus, e.Message)
		return
	}
	if service != gcpComputeService {
		s.fail(w, http.StatusNotFound, "NOT_FOUND", fmt.Sprintf("Service %s is not known to the emulator.", service))
		return
	}
	size := gcpPageSize
	if raw := q.Get("pageSize"); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 0 {
			s.fail(w, http.StatusBadRequest, "INVALID_ARGUMENT", fmt.Sprintf("Invalid pageSize %q.", raw))
			return
		}
		if n > 0 {
			size = min(n, gcpPageSize)
		}
	}
	size = s.opts.pageSize(size)
	query := service + "\x00" + q.Get("currencyCode")
	offset := 0
	if token := q.Get("pageToken"); token != "" {
		n, ok := decodeToken(token, "skus", query)
		if !ok {
			s.fail(w, http.StatusBadRequest, "INVALID_ARGUMENT", "Invalid page token.")
			return
		}
		offset = n
	}
	skus := s.skus()
	start, end, more := page(len(skus), offset, size)
	out := struct {
		SKUs          []gcpSKU `json:"skus"`
		NextPageToken string   `json:"nextPageToken"`
	}{SKUs: skus[start:end]}
	if more {
		out.NextPageToken = encodeToken("skus", end, query)
	}
	writeJSON(w, http.StatusOK, "application/json; charset=UTF-8", out)
}

// part is one priced part of a series in a region on a market.
type part struct {
	description   string // without the Spot wording and place
	resourceGroup string
	unit          string
	market        catalog.Market
	nanos         int64
}

// skus lists the SKUs the world's catalog implies, and two that every
// real listing has and a client must pass over: an N1 core and a
// commitment.
func (s *GCP) skus() []gcpSKU {
	cat := s.world.Catalog()
	// Machines are grouped by the SKUs that bill them, not by their
	// series' names: "a3-edgegpu-8g-nolssd" is billed as "a3-edgegpu-8g"
	// is, and a real listing has one SKU per part and region.
	type groupKey struct {
		names  struct{ core, ram, gpu string }
		region string
		market catalog.Market
	}
	groups := map[groupKey][]catalog.Offer{}
	for _, o := range append(regional(cat, catalog.GCP, catalog.OnDemand), regional(cat, catalog.GCP, catalog.Spot)...) {
		cut := strings.LastIndex(o.InstanceType, "-")
		if cut < 0 {
			continue
		}
		names, ok := seriesNames(o.InstanceType[:cut], o.GPUModel)
		if !ok {
			continue
		}
		k := groupKey{names, o.Region, o.Market}
		groups[k] = append(groups[k], o)
	}

	type skuKey struct {
		part
		place string
	}
	regionsOf := map[skuKey][]string{}
	for k, offers := range groups {
		core, gpu := split(offers)
		names := k.names
		geo := "Americas"
		if r, ok := cat.Region(catalog.GCP, k.region); ok {
			geo = map[string]string{"eu": "EMEA", "ap": "APAC"}[r.Geo]
			geo = cmp.Or(geo, "Americas")
		}
		for _, p := range []part{
			{names.core, "CPU", "h", k.market, nanos(core)},
			{names.ram, "RAM", "GiBy.h", k.market, nanos(core * ramPerCore)},
			{names.gpu, "GPU", "h", k.market, nanos(gpu)},
		} {
			sk := skuKey{p, geo}
			regionsOf[sk] = append(regionsOf[sk], k.region)
		}
	}
	var out []gcpSKU
	for k, regions := range regionsOf {
		slices.Sort(regions)
		out = append(out, s.sku(k.part, k.place, regions))
	}
	out = append(out,
		s.sku(part{"N1 Predefined Instance Core", "N1Standard", "h", catalog.OnDemand, 31_611_000}, "Americas", []string{"us-central1", "us-east1"}),
	)
	commitment := s.sku(part{"Commitment v1: A2 Cpu in Americas for 1 Year", "CPU", "h", catalog.OnDemand, 19_915_000}, "", []string{"us-central1"})
	commitment.Category.UsageType = "Commit1Yr"
	out = append(out, commitment)
	slices.SortFunc(out, func(a, b gcpSKU) int {
		return cmp.Or(cmp.Compare(a.Description, b.Description), cmp.Compare(strings.Join(a.ServiceRegions, ","), strings.Join(b.ServiceRegions, ",")), cmp.Compare(a.SkuID, b.SkuID))
	})
	return out
}

// split finds the core and GPU prices, in dollars per unit, that give back
// every offer's price: exactly, from two sizes whose GPUs and machine
// differ in proportion; else by the usual shares.
func split(offers []catalog.Offer) (core, gpu float64) {
	units := func(o catalog.Offer) float64 { return float64(o.VCPUs) + ramPerCore*o.MemoryGiB }
	dollars := func(o catalog.Offer) float64 { return float64(o.PriceMicros) / 1e6 }
	slices.SortFunc(offers, func(a, b catalog.Offer) int { return cmp.Compare(a.InstanceType, b.InstanceType) })
	for i, a := range offers {
		for _, b := range offers[i+1:] {
			det := units(a)*float64(b.GPUs) - units(b)*float64(a.GPUs)
			if math.Abs(det) < 1e-9 {
				continue
			}
			c := (dollars(a)*float64(b.GPUs) - dollars(b)*float64(a.GPUs)) / det
			g := (units(a)*dollars(b) - units(b)*dollars(a)) / det
			if c > 0 && g > 0 {
				return c, g
			}
		}
	}
	a := offers[0]
	return dollars(a) * (1 - gpuShare) / units(a), dollars(a) * gpuShare / float64(max(a.GPUs, 1))
}

func nanos(dollars float64) int64 { return int64(math.Round(dollars * 1e9)) }

// sku writes a part as the billing catalog does.
func (s *GCP) sku(p part, place string, regions []string) gcpSKU {
	description := p.description
	usage := "OnDemand"
	if p.market == catalog.Spot {
		usage = "Preemptible"
		if p.resourceGroup == "GPU" {
			description += " attached to Spot Preemptible VMs"
		} else {
			description = "Spot Preemptible " + description
		}
	}
	if place != "" {
		description += " running in " + place
	}
	skuID := id("0123456789ABCDEF", 12, description, strings.Join(regions, ","), strconv.FormatInt(p.nanos, 10))
	skuID = skuID[:4] + "-" + skuID[4:8] + "-" + skuID[8:]
	out := gcpSKU{
		Name:                "services/" + gcpComputeService + "/skus/" + skuID,
		SkuID:               skuID,
		Description:         description,
		ServiceRegions:      regions,
		ServiceProviderName: "Google",
	}
	out.Category.ServiceDisplayName = "Compute Engine"
	out.Category.ResourceFamily = "Compute"
	out.Category.ResourceGroup = p.resourceGroup
	out.Category.UsageType = usage
	var info gcpPricingInfo
	info.PricingExpression.UsageUnit = p.unit
	info.PricingExpression.DisplayQuantity = 1
	if p.unit == "h" {
		info.PricingExpression.UsageUnitDescription, info.PricingExpression.BaseUnit, info.PricingExpression.BaseUnitDescription = "hour", "s", "second"
		info.PricingExpression.BaseUnitConversionFactor = 3600
	} else {
		info.PricingExpression.UsageUnitDescription, info.PricingExpression.BaseUnit, info.PricingExpression.BaseUnitDescription = "gibibyte hour", "By.s", "byte second"
		info.PricingExpression.BaseUnitConversionFactor = 3865470566400
	}
	info.PricingExpression.TieredRates = append(info.PricingExpression.TieredRates, struct {
		StartUsageAmount float64  `json:"startUsageAmount"`
		UnitPrice        gcpMoney `json:"unitPrice"`
	}{0, gcpMoney{"USD", strconv.FormatInt(p.nanos/1_000_000_000, 10), p.nanos % 1_000_000_000}})
	info.CurrencyConversionRate = 1
	info.EffectiveTime = "2026-11-01T00:00:00Z"
	out.PricingInfo = []gcpPricingInfo{info}
	return out
}
