// SPDX-License-Identifier: Apache-2.0

package pricesim

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/gpufleet/gpufleet/providers/sim"
)

func newWorld(t *testing.T) *sim.World {
	t.Helper()
	w, err := sim.New(sim.Config{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// do sends a request and decodes a JSON answer into out.
func do(t *testing.T, req *http.Request, out any) *http.Response {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if out != nil {
		if err := json.Unmarshal(body, out); err != nil {
			t.Fatalf("decoding %s: %v", body, err)
		}
	}
	return resp
}

func getProducts(t *testing.T, srv *httptest.Server, target, body string, out any) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/", strings.NewReader(body))
	req.Header.Set("Content-Type", awsContentType)
	req.Header.Set("X-Amz-Target", target)
	return do(t, req, out)
}

func TestAWSGetProducts(t *testing.T) {
	srv := httptest.NewServer(NewAWS(newWorld(t), Options{}))
	defer srv.Close()

	linux := `{"Field":"operatingSystem","Type":"TERM_MATCH","Value":"Linux"},{"Field":"capacitystatus","Type":"TERM_MATCH","Value":"Used"},{"Field":"tenancy","Type":"TERM_MATCH","Value":"Shared"}`
	region := `{"Field":"regionCode","Type":"TERM_MATCH","Value":"us-east-1"}`
	// pages reads every product the filters keep, pageSize at a time.
	pages := func(filters string, pageSize int) []string {
		t.Helper()
		var out []string
		token := ""
		for {
			var page getProductsOutput
			body := fmt.Sprintf(`{"ServiceCode":"AmazonEC2","Filters":[%s],"MaxResults":%d,"NextToken":"%s"}`, filters, pageSize, token)
			if resp := getProducts(t, srv, "AWSPriceListService.GetProducts", body, &page); resp.StatusCode != 200 {
				t.Fatalf("status %d", resp.StatusCode)
			}
			out = append(out, page.PriceList...)
			if token = page.NextToken; token == "" {
				return out
			}
		}
	}
	filtered, all := pages(region+`,`+linux, 100), pages(region, 100)
	if len(filtered) == 0 || len(all) != 4*len(filtered) {
		t.Errorf("%d products, %d with the filters: want the filters to keep one in four", len(all), len(filtered))
	}
	var doc struct {
		Product struct{ Attributes map[string]string }
	}
	if err := json.Unmarshal([]byte(filtered[0]), &doc); err != nil || doc.Product.Attributes["operatingSystem"] != "Linux" || doc.Product.Attributes["gpu"] == "" {
		t.Errorf("product %s (%v)", filtered[0], err)
	}

	// Paging: two at a time, to the end, and a foreign token refused.
	if seen := len(pages(region+`,`+linux, 2)); seen != len(filtered) {
		t.Errorf("paged through %d products, want %d", seen, len(filtered))
	}
	tests := []struct {
		name, target, body, code string
	}{
		{"no service code", "AWSPriceListService.GetProducts", `{}`, "InvalidParameterException"},
		{"bad token", "AWSPriceListService.GetProducts", `{"ServiceCode":"AmazonEC2","NextToken":"bm9wZQ"}`, "InvalidNextTokenException"},
		{"other operation", "AWSPriceListService.DescribeServices", `{}`, "UnknownOperationException"},
		{"too many results", "AWSPriceListService.GetProducts", `{"ServiceCode":"AmazonEC2","MaxResults":1000}`, "InvalidParameterException"},
	}
	for _, tt := range tests {
		var e map[string]string
		if resp := getProducts(t, srv, tt.target, tt.body, &e); resp.StatusCode != 400 || e["__type"] != tt.code {
			t.Errorf("%s: %d %v, want 400 %s", tt.name, resp.StatusCode, e, tt.code)
		}
	}
}

func TestAzureRetailPrices(t *testing.T) {
	world := newWorld(t)
	srv := httptest.NewServer(NewAzure(world, Options{PageSize: 5, RetryAfter: 3}))
	defer srv.Close()
	get := func(query string, out any) *http.Response {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/api/retail/prices?"+query, nil)
		return do(t, req, out)
	}
	filter := url.Values{"$filter": {"serviceName eq 'Virtual Machines' and priceType eq 'Consumption' and armRegionName eq 'westus'"}}.Encode()

	var items []azureItem
	link := srv.URL + "/api/retail/prices?" + filter
	for pages := 0; link != ""; pages++ {
		var page azurePage
		req, _ := http.NewRequest(http.MethodGet, link, nil)
		do(t, req, &page)
		items = append(items, page.Items...)
		link = ""
		if page.NextPageLink != nil {
			link = *page.NextPageLink
		}
		if pages > 100 {
			t.Fatal("the pages do not end")
		}
	}
	kinds := map[string]int{}
	for _, it := range items {
		if it.ArmRegionName != "westus" || it.Type != "Consumption" {
			t.Errorf("item outside the filter: %+v", it)
		}
		switch {
		case strings.HasSuffix(it.ProductName, " Windows"):
			kinds["windows"]++
		case strings.HasSuffix(it.SkuName, " Low Priority"):
			kinds["low priority"]++
		case strings.HasSuffix(it.SkuName, " Spot"):
			kinds["spot"]++
		default:
			kinds["linux"]++
		}
	}
	if kinds["linux"] == 0 || kinds["spot"] == 0 || kinds["windows"] == 0 || kinds["low priority"] == 0 {
		t.Errorf("rows by kind %v, want every kind", kinds)
	}

	// Values are case-sensitive.
	var none azurePage
	get(url.Values{"$filter": {"armRegionName eq 'WestUS'"}}.Encode(), &none)
	if len(none.Items) != 0 {
		t.Errorf("%d items for 'WestUS'", len(none.Items))
	}
	if resp := get(url.Values{"$filter": {"armRegionName = 'westus'"}}.Encode(), nil); resp.StatusCode != 400 {
		t.Errorf("a bad filter gave %d", resp.StatusCode)
	}

	// A throttled call says when to come back.
	world.AddFaults(&sim.Fault{Cloud: "azure", Op: "RetailPrices", Kind: sim.FaultThrottle, Times: 1})
	if resp := get(filter, nil); resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "3" {
		t.Errorf("throttled: %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
}

func TestGCPSkus(t *testing.T) {
	world := newWorld(t)
	srv := httptest.NewServer(NewGCP(world, Options{APIKey: "k"}))
	defer srv.Close()
	get := func(path string, q url.Values, out any) *http.Response {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path+"?"+q.Encode(), nil)
		return do(t, req, out)
	}
	const skus = "/v1/services/6F81-5844-456A/skus"
	if resp := get(skus, nil, nil); resp.StatusCode != 403 {
		t.Errorf("no key: %d, want 403", resp.StatusCode)
	}
	if resp := get(skus, url.Values{"key": {"other"}}, nil); resp.StatusCode != 400 {
		t.Errorf("wrong key: %d, want 400", resp.StatusCode)
	}
	if resp := get("/v1/services/0000-0000-0000/skus", url.Values{"key": {"k"}}, nil); resp.StatusCode != 404 {
		t.Errorf("unknown service: %d, want 404", resp.StatusCode)
	}

	var all struct {
		SKUs          []gcpSKU `json:"skus"`
		NextPageToken string   `json:"nextPageToken"`
	}
	get(skus, url.Values{"key": {"k"}}, &all)
	if all.NextPageToken != "" || len(all.SKUs) < 10 {
		t.Fatalf("%d SKUs, next %q", len(all.SKUs), all.NextPageToken)
	}
	n, token := 0, ""
	for {
		var page struct {
			SKUs          []gcpSKU `json:"skus"`
			NextPageToken string   `json:"nextPageToken"`
		}
		q := url.Values{"key": {"k"}, "pageSize": {"4"}}
		if token != "" {
			q.Set("pageToken", token)
		}
		if resp := get(skus, q, &page); resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
		n += len(page.SKUs)
		if token = page.NextPageToken; token == "" {
			break
		}
	}
	if n != len(all.SKUs) {
		t.Errorf("paged through %d SKUs, want %d", n, len(all.SKUs))
	}
	found := false
	for _, s := range all.SKUs {
		if s.Description == "Nvidia H100 80GB GPU attached to Spot Preemptible VMs running in Americas" && s.Category.UsageType == "Preemptible" {
			found = true
		}
	}
	if !found {
		t.Error("no Spot H100 SKU in the Americas")
	}

	world.AddFaults(&sim.Fault{Cloud: "gcp", Op: "ListSkus", Kind: sim.FaultServerError, Times: 1})
	var e struct{ Error struct{ Code int } }
	if resp := get(skus, url.Values{"key": {"k"}}, &e); resp.StatusCode != 500 || e.Error.Code != 500 {
		t.Errorf("server error: %d %+v", resp.StatusCode, e)
	}
}
