// SPDX-License-Identifier: Apache-2.0

package prices

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/schema/catalog"
)

// fixtureNow is when the fixtures were "recorded".
var fixtureNow = time.Date(2026, 11, 4, 15, 30, 0, 0, time.UTC)

func fixtureDir(cloud string) string {
	return filepath.Join("..", "..", "testdata", "prices", cloud)
}

// replay holds recorded pages in order; it serves the first to a request
// without a page token, and the page after page i to the token page i
// ends with.
type replay struct {
	pages  []string
	byNext map[string]int
}

func loadReplay(t *testing.T, cloud string, names []string, nextToken func(page string) string) *replay {
	t.Helper()
	r := &replay{byNext: map[string]int{}}
	for i, name := range names {
		b, err := os.ReadFile(filepath.Join(fixtureDir(cloud), name))
		if err != nil {
			t.Fatal(err)
		}
		r.pages = append(r.pages, string(b))
		if i+1 < len(names) {
			token := nextToken(string(b))
			if token == "" {
				t.Fatalf("%s has no next-page token, but %s follows it", name, names[i+1])
			}
			r.byNext[token] = i + 1
		}
	}
	return r
}

// page returns the page a token asks for.
func (r *replay) page(token string) (string, bool) {
	if token == "" {
		return r.pages[0], true
	}
	i, ok := r.byNext[token]
	if !ok {
		return "", false
	}
	return r.pages[i], true
}

func jsonField(field string) func(string) string {
	return func(page string) string {
		var m map[string]any
		if err := json.Unmarshal([]byte(page), &m); err != nil {
			return ""
		}
		s, _ := m[field].(string)
		return s
	}
}

var xmlNextToken = regexp.MustCompile(`<nextToken>([^<]*)</nextToken>`)

func xmlToken(page string) string {
	if m := xmlNextToken.FindStringSubmatch(page); m != nil {
		return m[1]
	}
	return ""
}

// requestLog records what a fixture server was asked, for assertions on
// the requests themselves.
type requestLog struct {
	mu       sync.Mutex
	requests []string
}

func (l *requestLog) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.requests = append(l.requests, s)
}

func (l *requestLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.requests)
}

// awsFixtureServer replays the Price List and spot price history pages of
// us-east-1. It refuses a GetProducts without the filters the loader must
// send.
func awsFixtureServer(t *testing.T) (*httptest.Server, *requestLog) {
	products := loadReplay(t, "aws", []string{"getproducts-us-east-1-page1.json", "getproducts-us-east-1-page2.json"}, jsonField("NextToken"))
	spot := loadReplay(t, "aws", []string{"spotpricehistory-us-east-1-page1.xml", "spotpricehistory-us-east-1-page2.xml"}, xmlToken)
	log := &requestLog{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if target := r.Header.Get("X-Amz-Target"); target != "" {
			body, _ := io.ReadAll(r.Body)
			var in struct {
				ServiceCode string
				Filters     []struct{ Field, Type, Value string }
				NextToken   string
			}
			if target != "AWSPriceListService.GetProducts" || json.Unmarshal(body, &in) != nil {
				http.Error(w, `{"__type":"InvalidParameterException","Message":"unexpected request"}`, http.StatusBadRequest)
				return
			}
			var filters []string
			for _, f := range in.Filters {
				filters = append(filters, f.Type+" "+f.Field+"="+f.Value)
			}
			slices.Sort(filters)
			log.add("GetProducts " + in.ServiceCode + " " + strings.Join(filters, ", "))
			page, ok := products.page(in.NextToken)
			if !ok {
				w.Header().Set("Content-Type", "application/x-amz-json-1.1")
				w.WriteHeader(http.StatusBadRequest)
				io.WriteString(w, `{"__type":"InvalidNextTokenException","Message":"Invalid NextToken"}`)
				return
			}
			w.Header().Set("Content-Type", "application/x-amz-json-1.1")
			io.WriteString(w, page)
			return
		}
		if err := r.ParseForm(); err != nil || r.Form.Get("Action") != "DescribeSpotPriceHistory" {
			http.Error(w, "unexpected request", http.StatusBadRequest)
			return
		}
		log.add(fmt.Sprintf("DescribeSpotPriceHistory %s start=%t", r.Form.Get("ProductDescription.1"), r.Form.Get("StartTime") != ""))
		page, ok := spot.page(r.Form.Get("NextToken"))
		if !ok {
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `<Response><Errors><Error><Code>InvalidPaginationToken</Code><Message>bad token</Message></Error></Errors><RequestID>x</RequestID></Response>`)
			return
		}
		w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
		io.WriteString(w, page)
	}))
	t.Cleanup(srv.Close)
	return srv, log
}

// azureFixtureServer replays the retail prices of eastus. The recorded
// NextPageLink points at prices.azure.com; it is pointed at the server,
// as the real API points it at itself.
func azureFixtureServer(t *testing.T) (*httptest.Server, *requestLog) {
	pages := loadReplay(t, "azure", []string{"retailprices-eastus-page1.json", "retailprices-eastus-page2.json"}, jsonField("NextPageLink"))
	log := &requestLog{}
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		log.add(r.URL.Path + " " + q.Get("api-version") + " " + q.Get("$filter"))
		if r.URL.Path != "/api/retail/prices" {
			http.NotFound(w, r)
			return
		}
		token := ""
		if skip := q.Get("$skip"); skip != "" {
			token = "https://prices.azure.com:443" + r.URL.RequestURI()
		}
		page, ok := pages.page(canonicalLink(token))
		if !ok {
			http.Error(w, `{"Error":{"Code":"BadRequest","Message":"Invalid skip"}}`, http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		io.WriteString(w, strings.ReplaceAll(page, "https://prices.azure.com:443", srv.URL))
	}))
	// Tokens are the links as recorded, in canonical form.
	for link, i := range pages.byNext {
		delete(pages.byNext, link)
		pages.byNext[canonicalLink(link)] = i
	}
	t.Cleanup(srv.Close)
	return srv, log
}

// canonicalLink undoes the differences in escaping between a recorded
// link and the one the client sends back.
func canonicalLink(link string) string {
	if link == "" {
		return ""
	}
	base, query, _ := strings.Cut(link, "?")
	values, err := url.ParseQuery(query)
	if err != nil {
		return link
	}
	return base + "?" + values.Encode()
}

// gcpFixtureServer replays the billing catalog's SKU pages; it wants the
// API key the test gives.
func gcpFixtureServer(t *testing.T, key string) (*httptest.Server, *requestLog) {
	pages := loadReplay(t, "gcp", []string{"skus-page1.json", "skus-page2.json"}, jsonField("nextPageToken"))
	log := &requestLog{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		log.add(fmt.Sprintf("%s pageSize=%s key=%t", r.URL.Path, q.Get("pageSize"), q.Get("key") == key))
		w.Header().Set("Content-Type", "application/json; charset=UTF-8")
		if q.Get("key") != key {
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT"}}`)
			return
		}
		if r.URL.Path != "/v1/services/6F81-5844-456A/skus" {
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"error":{"code":404,"message":"Service not found.","status":"NOT_FOUND"}}`)
			return
		}
		page, ok := pages.page(q.Get("pageToken"))
		if !ok {
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"error":{"code":400,"message":"Invalid page token.","status":"INVALID_ARGUMENT"}}`)
			return
		}
		io.WriteString(w, page)
	}))
	t.Cleanup(srv.Close)
	return srv, log
}

// drops collects what a loader dropped.
type drops struct {
	mu  sync.Mutex
	all []Drop
}

func (d *drops) add(x Drop) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.all = append(d.all, x)
}

// keys lists the drops as "region zone type market: reason", sorted.
func (d *drops) keys() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for _, x := range d.all {
		out = append(out, dropKey(x))
	}
	slices.Sort(out)
	return out
}

func dropKey(x Drop) string {
	return fmt.Sprintf("%s %s %s %s: %s", x.Region, orDash(x.Zone), orDash(x.InstanceType), orDash(string(x.Market)), x.Reason)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// offer builds an expected offer.
func offer(cloud, region, zone, instanceType string, market catalog.Market, model string, gpus, vcpus int, mem float64, micros int64) catalog.Offer {
	return catalog.Offer{Cloud: cloud, Region: region, Zone: zone, InstanceType: instanceType, Market: market,
		GPUModel: model, GPUs: gpus, VCPUs: vcpus, MemoryGiB: mem, PriceMicros: micros}
}

// diffOffers reports the offers missing from got and those it has over.
func diffOffers(t *testing.T, got, want []catalog.Offer) {
	t.Helper()
	// Where a price was read is checked apart (TestOffersNameTheirSource);
	// here, what it is.
	unsourced := func(offers []catalog.Offer) []catalog.Offer {
		out := slices.Clone(offers)
		for i := range out {
			out[i].Source, out[i].Derived = "", false
		}
		return out
	}
	got, want = unsourced(got), unsourced(want)
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("missing offer %+v", w)
		}
	}
	for _, g := range got {
		if !slices.Contains(want, g) {
			t.Errorf("unexpected offer %+v", g)
		}
	}
	if !t.Failed() && !slices.Equal(got, want) {
		t.Errorf("offers out of order:\n got %+v\nwant %+v", got, want)
	}
}

// diffStrings reports what got lacks of want and has over it; on lists of
// thousands, the difference is what can be read.
func diffStrings(t *testing.T, what string, got, want []string) {
	t.Helper()
	if slices.Equal(got, want) {
		return
	}
	var missing, extra []string
	for _, w := range want {
		if !slices.Contains(got, w) {
			missing = append(missing, w)
		}
	}
	for _, g := range got {
		if !slices.Contains(want, g) {
			extra = append(extra, g)
		}
	}
	if len(missing)+len(extra) == 0 {
		t.Errorf("%s: the same %d lines, but out of order or repeated:\n got %s\nwant %s", what, len(want), strings.Join(got, "\n     "), strings.Join(want, "\n     "))
		return
	}
	t.Errorf("%s: %d lines, want %d\nmissing %s\n  extra %s", what, len(got), len(want), strings.Join(missing, "\n        "), strings.Join(extra, "\n        "))
}
