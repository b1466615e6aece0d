// SPDX-License-Identifier: Apache-2.0

package prices

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/hashicorp/go-retryablehttp"

	"github.com/gpufleet/gpufleet/schema/catalog"
)

// GCPBilling is the Cloud Billing Catalog API's public base URL.
const GCPBilling = "https://cloudbilling.googleapis.com"

// GCPAPIKeyEnv names the environment variable the GCP loader reads its
// API key from when GCPOptions.APIKey is empty.
const GCPAPIKeyEnv = "GPUFLEET_GCP_API_KEY"

// gcpComputeService is Compute Engine's service id in the billing catalog.
const gcpComputeService = "6F81-5844-456A"

// GCPOptions tune the GCP loader.
type GCPOptions struct {
	Options
	// APIKey authenticates to the Cloud Billing Catalog API. Empty means
	// the GPUFLEET_GCP_API_KEY environment variable. It travels in the
	// query string, as the API wants, and is never logged or put in an
	// error.
	APIKey string
	// PageSize is how many SKUs a page asks for; zero means 5000, the
	// API's most.
	PageSize int
}

// GCP reads the Cloud Billing Catalog's Compute Engine SKUs and assembles
// each GPU machine type's hourly price from its parts, as GCP bills it:
// vCPUs × the series' core price + GiB × its memory price + GPUs × the
// GPU's price, on-demand and Spot (usage type "Preemptible").
//
// SKUs are matched by their description, less where they run ("… running
// in Americas") and less the Spot wording ("Spot Preemptible …", "…
// attached to Spot Preemptible VMs"), against gcpSeries; the regions a
// SKU prices are its serviceRegions. Of a SKU's pricingInfo the last
// entry is the one in force, and of its tiers the one starting at zero
// usage. Machine specs come from the catalog: SKUs do not carry them.
type GCP struct {
	b        *base
	client   *retryablehttp.Client
	endpoint *url.URL
	key      string
	pageSize int
}

var _ Loader = (*GCP)(nil)

// gcpParts names the SKUs that price a machine series. Where the billing
// catalog has had two names for a part, both are listed, the current one
// first.
type gcpParts struct {
	cores, ram []string
	gpu        string
	// model is the GPU's, where the GPU SKU's name does not read as one.
	model string
}

// gcpSeries holds the GPU machine series gpufleet launches, by the machine
// type's name less its size ("a3-highgpu-8g" is an a3-highgpu).
var gcpSeries = map[string]gcpParts{
	"a3-highgpu":  {cores: []string{"A3 Instance Core"}, ram: []string{"A3 Instance Ram"}, gpu: "Nvidia H100 80GB GPU"},
	"a3-ultragpu": {cores: []string{"A3 Ultra Instance Core"}, ram: []string{"A3 Ultra Instance Ram"}, gpu: "Nvidia H200 141GB GPU"},
	// A3 Mega's H100s have a SKU of their own, not A3's nor the model's.
	"a3-megagpu": {cores: []string{"A3 Mega Instance Core"}, ram: []string{"A3 Mega Instance Ram"}, gpu: "Nvidia H100 80GB Mega GPU", model: "H100"},
	"a2-highgpu": {cores: []string{"A2 Instance Core"}, ram: []string{"A2 Instance Ram"}, gpu: "Nvidia Tesla A100 GPU"},
	// A2 Ultra machines have been billed under A2's core and memory SKUs.
	"a2-ultragpu": {cores: []string{"A2 Ultra Instance Core", "A2 Instance Core"}, ram: []string{"A2 Ultra Instance Ram", "A2 Instance Ram"}, gpu: "Nvidia A100 80GB GPU"},
	"g2-standard": {cores: []string{"G2 Instance Core"}, ram: []string{"G2 Instance Ram"}, gpu: "Nvidia L4 GPU"},
}

// Part kinds, and the usage unit each is priced in.
const (
	partCores = "cores"
	partRAM   = "memory"
	partGPU   = "GPUs"
)

var partUnits = map[string]string{partCores: "h", partRAM: "GiBy.h", partGPU: "h"}

// NewGCP builds the GCP loader; it calls nothing yet, but needs an API
// key.
func NewGCP(opts GCPOptions) (*GCP, error) {
	b, err := newBase(catalog.GCP, opts.Options)
	if err != nil {
		return nil, err
	}
	b.what = "GCP Cloud Billing Catalog"
	key := opts.APIKey
	if key == "" {
		key = os.Getenv(GCPAPIKeyEnv)
	}
	if key == "" {
		return nil, fmt.Errorf("gcp prices need an API key for the Cloud Billing Catalog API: set %s", GCPAPIKeyEnv)
	}
	endpoint, err := checkEndpoint("gcp", opts.Endpoint, GCPBilling, opts.AllowHTTP)
	if err != nil {
		return nil, err
	}
	pageSize := opts.PageSize
	if pageSize <= 0 || pageSize > 5000 {
		pageSize = 5000
	}
	return &GCP{b: b, client: newRetryClient(b, endpoint), endpoint: endpoint, key: key, pageSize: pageSize}, nil
}

// Cloud is "gcp".
func (g *GCP) Cloud() string { return catalog.GCP }

type gcpPage struct {
	// SKUs are decoded one by one, so that one of the wrong shape is a
	// row dropped rather than the page lost.
	SKUs          []json.RawMessage `json:"skus"`
	NextPageToken string            `json:"nextPageToken"`
}

type gcpSKU struct {
	Name        string `json:"name"`
	SkuID       string `json:"skuId"`
	Description string `json:"description"`
	Category    struct {
		ResourceFamily string `json:"resourceFamily"`
		ResourceGroup  string `json:"resourceGroup"`
		UsageType      string `json:"usageType"`
	} `json:"category"`
	ServiceRegions []string `json:"serviceRegions"`
	PricingInfo    []struct {
		PricingExpression struct {
			UsageUnit   string `json:"usageUnit"`
			TieredRates []struct {
				StartUsageAmount float64 `json:"startUsageAmount"`
				UnitPrice        struct {
					CurrencyCode string   `json:"currencyCode"`
					Units        gcpInt64 `json:"units"`
					Nanos        int64    `json:"nanos"`
				} `json:"unitPrice"`
			} `json:"tieredRates"`
		} `json:"pricingExpression"`
	} `json:"pricingInfo"`
}

// gcpInt64 is an int64 in proto3 JSON: a string, or a number from
// lenient writers.
type gcpInt64 int64

func (n *gcpInt64) UnmarshalJSON(b []byte) error {
	v, err := strconv.ParseInt(string(bytes.Trim(b, `"`)), 10, 64)
	if err != nil {
		return fmt.Errorf("units %s is not an integer", b)
	}
	*n = gcpInt64(v)
	return nil
}

// partKey is one part's price in one region on one market.
type partKey struct {
	description string
	region      string
	market      catalog.Market
}

type partPrice struct {
	nanos int64 // US$ × 1e9 per unit
	sku   string
}

// Load reads every Compute Engine SKU and prices the catalog's GPU
// machine types from them.
func (g *GCP) Load(ctx context.Context) (*catalog.Catalog, error) {
	machines := g.machines()
	kinds := partKinds(machines)
	parts := map[partKey]partPrice{}
	seen := map[partKey]bool{}
	token := ""
	tokens := map[string]bool{}
	for n := 0; ; n++ {
		if n == maxPages {
			return nil, fmt.Errorf("gcp prices, more than %d pages of SKUs", maxPages)
		}
		u := g.endpoint.JoinPath("/v1/services", gcpComputeService, "skus")
		q := url.Values{}
		q.Set("key", g.key)
		q.Set("pageSize", strconv.Itoa(g.pageSize))
		q.Set("currencyCode", "USD")
		if token != "" {
			q.Set("pageToken", token)
		}
		u.RawQuery = q.Encode()
		var page gcpPage
		if err := getJSON(ctx, g.client, u, &page); err != nil {
			return nil, fmt.Errorf("listing GCP SKUs, %w", err)
		}
		g.page(page, kinds, parts, seen)
		token = page.NextPageToken
		if token == "" {
			break
		}
		if tokens[token] {
			return nil, errors.New("listing GCP SKUs, the page token comes round again")
		}
		tokens[token] = true
	}

	return g.price(machines, parts, seen).catalog()
}

// partKinds are the SKU descriptions the machines are billed by, each
// with the part it prices.
func partKinds(machines []gcpMachine) map[string]string {
	kinds := map[string]string{}
	for _, m := range machines {
		for _, d := range m.parts.cores {
			kinds[d] = partCores
		}
		for _, d := range m.parts.ram {
			kinds[d] = partRAM
		}
		kinds[m.parts.gpu] = partGPU
	}
	return kinds
}

// page records the part prices of a page's SKUs.
func (g *GCP) page(page gcpPage, kinds map[string]string, parts map[partKey]partPrice, seen map[partKey]bool) {
	for _, raw := range page.SKUs {
		var sku gcpSKU
		if err := json.Unmarshal(raw, &sku); err != nil {
			g.b.drop(Drop{Reason: ReasonMalformed, Detail: err.Error()})
			continue
		}
		g.sku(sku, kinds, parts, seen)
	}
}

// price collects the offers of every machine in every region read, from
// the part prices found.
func (g *GCP) price(machines []gcpMachine, parts map[partKey]partPrice, seen map[partKey]bool) *collector {
	c := g.b.collector()
	for _, m := range machines {
		for _, r := range g.b.regions {
			for _, market := range []catalog.Market{catalog.OnDemand, catalog.Spot} {
				g.machine(m.instanceType, m.shape, m.model, m.parts, r.Name, market, parts, seen, c)
			}
		}
	}
	return c
}

// gcpMachine is a machine type the loader prices, and the SKUs it is
// billed by.
type gcpMachine struct {
	instanceType string
	shape        shape
	model        string
	parts        gcpParts
}

// machines are the GPU machine types the catalog knows, by name, each with
// the SKUs that price it: gcpSeries' where it names the series, else those
// the billing catalog's naming gives (gcpPartsOf).
func (g *GCP) machines() []gcpMachine {
	var out []gcpMachine
	for _, instanceType := range sortedKeys(g.b.shapes) {
		s := g.b.shapes[instanceType]
		cut := strings.LastIndex(instanceType, "-")
		if cut < 0 {
			continue
		}
		series, ok := gcpSeries[instanceType[:cut]]
		if !ok {
			if series, ok = gcpPartsOf(instanceType[:cut], s.gpuModel); !ok {
				continue
			}
		}
		model, ok := catalog.NormalizeGPU(cmp.Or(series.model, strings.TrimSuffix(series.gpu, " GPU")))
		if !ok {
			g.b.drop(Drop{InstanceType: instanceType, Reason: ReasonUnknownGPU, Detail: series.gpu})
			continue
		}
		out = append(out, gcpMachine{instanceType, s, model, series})
	}
	return out
}

// gcpPartsOf names the SKUs of a series gcpSeries does not list as the
// billing catalog names its machine SKUs: the family and the kind less
// "gpu" ("a3-megagpu" is "A3 Mega Instance Core" and "… Ram"; a "high"
// or "standard" kind is the family's own), and the GPU by its model
// ("Nvidia B200 GPU").
func gcpPartsOf(series, gpuModel string) (gcpParts, bool) {
	words := strings.Split(series, "-")
	if len(words) < 2 || gpuModel == "" || words[0] == "" {
		return gcpParts{}, false
	}
	name := strings.ToUpper(words[0])
	switch kind := strings.TrimSuffix(words[1], "gpu"); kind {
	case "", "high", "standard":
	default:
		name += " " + strings.ToUpper(kind[:1]) + kind[1:]
	}
	return gcpParts{cores: []string{name + " Instance Core"}, ram: []string{name + " Instance Ram"}, gpu: "Nvidia " + gpuModel + " GPU"}, true
}

// sku records the part prices one SKU gives, for the regions read, and
// in seen the parts it names, priced or not.
func (g *GCP) sku(sku gcpSKU, kinds map[string]string, parts map[partKey]partPrice, seen map[partKey]bool) {
	var market catalog.Market
	switch sku.Category.UsageType {
	case "OnDemand":
		market = catalog.OnDemand
	case "Preemptible":
		market = catalog.Spot
	default:
		return // commitments and the like
	}
	description := partDescription(sku.Description)
	kind, ok := kinds[description]
	if !ok {
		return
	}
	// The regions a part is sold in are the regions GCP has GPUs in:
	// each is read, whether the catalog lists it or not.
	var in []string
	for _, r := range sku.ServiceRegions {
		if g.b.addRegion(r) && !slices.Contains(in, r) {
			in = append(in, r)
		}
	}
	if len(in) == 0 {
		return
	}
	slices.Sort(in)
	for _, r := range in {
		seen[partKey{description, r, market}] = true
	}
	dropAs := func(reason, value, detail string) {
		for _, r := range in {
			g.b.drop(Drop{Region: r, Market: market, Row: sku.SkuID, Reason: reason, Value: value, Detail: strings.Trim(sku.Description+"; "+detail, "; ")})
		}
	}
	drop := func(reason, detail string) { dropAs(reason, "", detail) }

	if len(sku.PricingInfo) == 0 {
		drop(ReasonNoPrice, "no pricingInfo")
		return
	}
	expr := sku.PricingInfo[len(sku.PricingInfo)-1].PricingExpression
	if len(expr.TieredRates) == 0 {
		drop(ReasonNoPrice, "no tieredRates")
		return
	}
	rate := expr.TieredRates[0]
	for _, t := range expr.TieredRates {
		if t.StartUsageAmount == 0 {
			rate = t
			break
		}
	}
	switch {
	case rate.UnitPrice.CurrencyCode != "" && rate.UnitPrice.CurrencyCode != "USD":
		dropAs(ReasonCurrency, rate.UnitPrice.CurrencyCode, "")
		return
	case expr.UsageUnit != partUnits[kind]:
		dropAs(ReasonUnit, cmpOr(expr.UsageUnit, "no unit"), "")
		return
	}
	// A unit price past a million dollars is no part price, and would
	// overflow in nanos.
	if units := int64(rate.UnitPrice.Units); units > 1_000_000 || units < -1_000_000 || rate.UnitPrice.Nanos >= 1_000_000_000 || rate.UnitPrice.Nanos <= -1_000_000_000 {
		drop(ReasonMalformed, fmt.Sprintf("unit price %d units %d nanos", units, rate.UnitPrice.Nanos))
		return
	}
	nanos := int64(rate.UnitPrice.Units)*1_000_000_000 + rate.UnitPrice.Nanos
	if nanos <= 0 {
		drop(ReasonPlaceholder, fmt.Sprintf("$%g per %s", float64(nanos)/1e9, expr.UsageUnit))
		return
	}
	for _, r := range in {
		k := partKey{description, r, market}
		held, dup := parts[k]
		if !dup {
			parts[k] = partPrice{nanos, sku.SkuID}
			continue
		}
		// The rule offers follow: the dearer, then the first SKU by id.
		keep, lose := held, partPrice{nanos, sku.SkuID}
		if nanos > held.nanos || nanos == held.nanos && sku.SkuID < held.sku {
			keep, lose = lose, held
		}
		parts[k] = keep
		g.b.drop(Drop{Region: r, Market: market, Row: lose.sku, Reason: ReasonDuplicate,
			Detail: fmt.Sprintf("%s; $%g kept over $%g", description, float64(keep.nanos)/1e9, float64(lose.nanos)/1e9)})
	}
}

// partDescription strips what varies between a part's SKUs: where it runs
// and the Spot wording.
func partDescription(d string) string {
	d, _, _ = strings.Cut(d, " running in ")
	d = strings.TrimPrefix(d, "Spot Preemptible ")
	d = strings.TrimPrefix(d, "Preemptible ")
	d = strings.TrimSuffix(d, " attached to Spot Preemptible VMs")
	d = strings.TrimSuffix(d, " attached to Preemptible VMs")
	return strings.TrimSpace(d)
}

// machine collects one machine type's offer in a region, when all its
// parts are priced there. A machine some of whose parts are missing is
// reported only where a SKU of its own names it — its GPU, or its series'
// current core or memory SKU — priced or not: an older shared SKU (A2
// cores for A2 Ultra) is sold in regions the series is not.
func (g *GCP) machine(instanceType string, s shape, model string, series gcpParts, region string, market catalog.Market, parts map[partKey]partPrice, seen map[partKey]bool, c *collector) {
	find := func(descriptions []string) (partPrice, bool) {
		for _, d := range descriptions {
			if p, ok := parts[partKey{d, region, market}]; ok {
				return p, true
			}
		}
		return partPrice{}, false
	}
	cores, hasCores := find(series.cores)
	ram, hasRAM := find(series.ram)
	gpu, hasGPU := find([]string{series.gpu})
	own := seen[partKey{series.gpu, region, market}] || seen[partKey{series.cores[0], region, market}] || seen[partKey{series.ram[0], region, market}]
	if !own {
		return // the series is not sold here
	}
	var missing []string
	for _, p := range []struct {
		name string
		ok   bool
	}{{partCores, hasCores}, {partRAM, hasRAM}, {partGPU, hasGPU}} {
		if !p.ok {
			missing = append(missing, p.name)
		}
	}
	if len(missing) > 0 {
		g.b.drop(Drop{Region: region, InstanceType: instanceType, Market: market, Reason: ReasonIncomplete,
			Detail: "no price for its " + strings.Join(missing, " or ")})
		return
	}
	nanos := float64(s.vcpus)*float64(cores.nanos) + s.memoryGiB*float64(ram.nanos) + float64(s.gpus)*float64(gpu.nanos)
	c.add(catalog.Offer{
		Region: region, InstanceType: instanceType, Market: market,
		GPUModel: model, GPUs: s.gpus, VCPUs: s.vcpus, MemoryGiB: s.memoryGiB,
	}, nanos/1e9, cores.sku+"+"+ram.sku+"+"+gpu.sku)
}
