// SPDX-License-Identifier: Apache-2.0

package prices

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"github.com/hashicorp/go-retryablehttp"

	"github.com/gpufleet/gpufleet/providers/outbound"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// AzureRetailPrices is the Retail Prices API's public base URL.
const AzureRetailPrices = "https://prices.azure.com"

// azureAPIVersion is the Retail Prices API version read; it adds
// Spot-aware fields over the default version without changing the ones
// used here.
const azureAPIVersion = "2023-01-01-preview"

// Azure reads the unauthenticated Azure Retail Prices API, one region at a
// time. The price list says nothing of a size's GPUs, vCPUs or memory, so
// only the sizes the catalog knows are priced; a new GPU size needs its
// spec in the catalog first.
type Azure struct {
	b        *base
	client   *retryablehttp.Client
	endpoint *url.URL
}

var _ Loader = (*Azure)(nil)

// NewAzure builds the Azure loader; it calls nothing yet.
func NewAzure(opts Options) (*Azure, error) {
	b, err := newBase(catalog.Azure, opts)
	if err != nil {
		return nil, err
	}
	endpoint, err := checkEndpoint("azure", opts.Endpoint, AzureRetailPrices, opts.AllowHTTP)
	if err != nil {
		return nil, err
	}
	b.what = "Azure Retail Prices API"
	if b.discover {
		// The Retail Prices API lists no regions, and a listing of every
		// region's rows at once is hundreds of thousands of them: the
		// regions read are those gpufleet knows the country of.
		for _, name := range catalog.RegionNames(catalog.Azure) {
			b.addRegion(name)
		}
	}
	return &Azure{b: b, client: newRetryClient(b, endpoint), endpoint: endpoint}, nil
}

// Cloud is "azure".
func (a *Azure) Cloud() string { return catalog.Azure }

// azurePage is one page of the Retail Prices API.
type azurePage struct {
	BillingCurrency string `json:"BillingCurrency"`
	// Items are decoded one by one, so that one of the wrong shape is a
	// row dropped rather than the page lost.
	Items        []json.RawMessage `json:"Items"`
	NextPageLink string            `json:"NextPageLink"`
	Count        int               `json:"Count"`
}

type azureItem struct {
	CurrencyCode  string   `json:"currencyCode"`
	RetailPrice   *float64 `json:"retailPrice"`
	ArmRegionName string   `json:"armRegionName"`
	MeterID       string   `json:"meterId"`
	MeterName     string   `json:"meterName"`
	ProductName   string   `json:"productName"`
	SkuName       string   `json:"skuName"`
	ServiceName   string   `json:"serviceName"`
	UnitOfMeasure string   `json:"unitOfMeasure"`
	Type          string   `json:"type"`
	ArmSkuName    string   `json:"armSkuName"`
}

// Load reads every region's pay-as-you-go and spot prices.
func (a *Azure) Load(ctx context.Context) (*catalog.Catalog, error) {
	c := a.b.collector()
	for _, r := range a.b.regions {
		if err := a.region(ctx, r.Name, c); err != nil {
			return nil, err
		}
	}
	return c.catalog()
}

func (a *Azure) region(ctx context.Context, region string, c *collector) error {
	first := a.endpoint.JoinPath("/api/retail/prices")
	q := url.Values{}
	q.Set("api-version", azureAPIVersion)
	// The values are case-sensitive; the region's name is ARM's.
	q.Set("$filter", fmt.Sprintf("serviceName eq 'Virtual Machines' and priceType eq 'Consumption' and armRegionName eq '%s'", region))
	first.RawQuery = q.Encode()

	next := first
	seen := map[string]bool{}
	for n := 0; next != nil; n++ {
		if n == maxPages {
			return fmt.Errorf("azure prices in %s, more than %d pages", region, maxPages)
		}
		var page azurePage
		if err := getJSON(ctx, a.client, next, &page); err != nil {
			return fmt.Errorf("listing Azure prices in %s, %w", region, err)
		}
		a.page(region, page, c)
		next = nil
		if page.NextPageLink != "" {
			u, err := a.nextPage(page.NextPageLink)
			if err != nil {
				return fmt.Errorf("listing Azure prices in %s, %w", region, err)
			}
			if seen[u.String()] {
				return fmt.Errorf("listing Azure prices in %s, page link %s comes round again", region, redact(u))
			}
			seen[u.String()] = true
			next = u
		}
	}
	return nil
}

// page collects the offers of one page's rows.
func (a *Azure) page(region string, page azurePage, c *collector) {
	for _, raw := range page.Items {
		var it azureItem
		if err := json.Unmarshal(raw, &it); err != nil {
			a.b.drop(Drop{Region: region, Reason: ReasonMalformed, Detail: err.Error()})
			continue
		}
		a.item(region, it, c)
	}
}

// nextPage checks that a NextPageLink stays on the API's host: the loader
// follows links it is given, and must not be sent elsewhere.
func (a *Azure) nextPage(link string) (*url.URL, error) {
	u, err := url.Parse(link)
	if err != nil {
		return nil, fmt.Errorf("NextPageLink %q is not a URL", link)
	}
	// The API writes "https://prices.azure.com:443/…" in its links.
	if !outbound.SameOrigin(u, a.endpoint) {
		return nil, fmt.Errorf("NextPageLink %s leaves %s", redact(u), redact(a.endpoint))
	}
	return u, nil
}

// item collects one row's offer. Windows products, Low Priority meters
// (the retired predecessor of Spot), other services and sizes the catalog
// does not know are not offers and are passed over without a word; a row
// that is an offer but cannot be trusted is dropped with its reason.
func (a *Azure) item(region string, it azureItem, c *collector) {
	switch {
	case it.ArmRegionName != region,
		it.ServiceName != "" && it.ServiceName != "Virtual Machines",
		it.Type != "" && it.Type != "Consumption",
		strings.HasSuffix(it.ProductName, " Windows"),
		strings.HasSuffix(it.MeterName, " Low Priority"),
		strings.HasSuffix(it.SkuName, " Low Priority"):
		return
	}
	market := catalog.OnDemand
	if strings.HasSuffix(it.SkuName, " Spot") {
		market = catalog.Spot
	}
	drop := Drop{Region: region, InstanceType: it.ArmSkuName, Market: market, Row: cmpOr(it.MeterID, it.SkuName)}
	s, ok := a.b.shapes[it.ArmSkuName]
	if !ok {
		// The price list says nothing of a size's GPUs. Of the N
		// series, Azure's GPU sizes, a size the catalog has no facts of
		// is counted; the thousands of other sizes are no offers.
		if strings.HasPrefix(it.ArmSkuName, "Standard_N") {
			drop.Reason, drop.Detail = ReasonNoSpec, "no GPU facts for the size"
			a.b.drop(drop)
		}
		return
	}
	switch {
	case it.CurrencyCode != "" && it.CurrencyCode != "USD":
		drop.Reason, drop.Value = ReasonCurrency, it.CurrencyCode
		a.b.drop(drop)
		return
	case it.UnitOfMeasure != "1 Hour":
		drop.Reason, drop.Value = ReasonUnit, cmpOr(it.UnitOfMeasure, "no unit")
		a.b.drop(drop)
		return
	}
	if it.RetailPrice == nil {
		drop.Reason = ReasonNoPrice
		a.b.drop(drop)
		return
	}
	c.add(catalog.Offer{
		Region: region, InstanceType: it.ArmSkuName, Market: market,
		GPUModel: s.gpuModel, GPUs: s.gpus, VCPUs: s.vcpus, MemoryGiB: s.memoryGiB,
	}, *it.RetailPrice, drop.Row)
}
