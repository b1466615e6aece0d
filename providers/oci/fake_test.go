// SPDX-License-Identifier: Apache-2.0

package oci

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oracle/oci-go-sdk/v65/common"
	"github.com/oracle/oci-go-sdk/v65/core"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/schema"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// The unit tests' OCI: two regions of the catalog's form, a tenancy prefix
// on their availability domains' names as real OCI puts one.
const (
	testCompartment = "ocid1.compartment.oc1..testcompartment"
	ashburn         = "us-ashburn-1"
	frankfurt       = "eu-frankfurt-1"
	a10             = "VM.GPU.A10.1"
	a10x2           = "VM.GPU.A10.2"
	v100            = "VM.GPU3.1"
	tenancyPrefix   = "Uocm:"
)

var testOffer = planner.OfferKey{Cloud: Name, Region: ashburn, Zone: "US-ASHBURN-AD-1", InstanceType: a10, Market: catalog.OnDemand}

func testCatalog() *catalog.Catalog {
	offer := func(region, zone, shape, gpu string, gpus int, micros int64) catalog.Offer {
		return catalog.Offer{Cloud: Name, Region: region, Zone: zone, InstanceType: shape, Market: catalog.OnDemand, GPUModel: gpu, GPUs: gpus, VCPUs: 15 * gpus, MemoryGiB: 240 * float64(gpus), PriceMicros: micros}
	}
	return &catalog.Catalog{
		Source: "test",
		Regions: []catalog.Region{
			{Cloud: Name, Name: ashburn, Geo: "us", Country: "US", Zones: []string{"US-ASHBURN-AD-1", "US-ASHBURN-AD-2", "US-ASHBURN-AD-3"}},
			{Cloud: Name, Name: frankfurt, Geo: "eu", Country: "DE", Zones: []string{"EU-FRANKFURT-1-AD-1"}},
		},
		Offers: []catalog.Offer{
			offer(ashburn, "US-ASHBURN-AD-1", a10, "A10", 1, 2000000),
			offer(ashburn, "US-ASHBURN-AD-1", a10x2, "A10", 2, 4000000),
			offer(ashburn, "US-ASHBURN-AD-2", a10, "A10", 1, 2000000),
			offer(ashburn, "US-ASHBURN-AD-3", v100, "V100", 1, 2950000),
			offer(frankfurt, "EU-FRANKFURT-1-AD-1", a10, "A10", 1, 2000000),
		},
	}
}

func testConfig() *schema.OCI {
	cfg := &schema.OCI{Enabled: true, Compartment: testCompartment, Regions: []string{ashburn, frankfurt}}
	cfg.Launch.ImageByRegion = map[string]string{ashburn: "ocid1.image.oc1.iad.testimage", frankfurt: "ocid1.image.oc1.eu-frankfurt-1.testimage"}
	cfg.Launch.SubnetByRegion = map[string]string{ashburn: "ocid1.subnet.oc1.iad.testsubnet", frankfurt: "ocid1.subnet.oc1.eu-frankfurt-1.testsubnet"}
	return cfg
}

// ashburnOnly is testConfig of one region.
func ashburnOnly() *schema.OCI {
	cfg := testConfig()
	cfg.Regions = []string{ashburn}
	return cfg
}

func request(fleet string, slot int) providers.CreateRequest {
	return providers.CreateRequest{Token: planner.Token(fleet, "w", testOffer, "rev", slot), Offer: testOffer, Fleet: fleet, Workload: "w"}
}

// fakeOCI answers the six operations the provider calls, as OCI's wire
// format has them, routed by Host as the emulator routes them. It records
// every request and answers the errors queued for an operation first.
type fakeOCI struct {
	mu        sync.Mutex
	ads       map[string][]string // region → availability domain names
	shapes    map[string][]string // availability domain → shapes
	instances []core.Instance
	tokens    map[string]string // region and retry token → instance id
	bodies    map[string]string // region and retry token → the launch's body
	pageSize  int
	faults    map[string][]fakeFault
	requests  []fakeRequest
}

type fakeFault struct {
	status        int
	code, message string
	retryAfter    string
}

type fakeRequest struct {
	op, host, method, path string
	query                  map[string]string
	header                 http.Header
	body                   []byte
}

func newFakeOCI() *fakeOCI {
	return &fakeOCI{
		ads: map[string][]string{
			ashburn:   {tenancyPrefix + "US-ASHBURN-AD-1", tenancyPrefix + "US-ASHBURN-AD-2", tenancyPrefix + "US-ASHBURN-AD-3"},
			frankfurt: {tenancyPrefix + "EU-FRANKFURT-1-AD-1"},
		},
		shapes: map[string][]string{
			tenancyPrefix + "US-ASHBURN-AD-1":     {"VM.Standard.E4.Flex", a10, a10x2},
			tenancyPrefix + "US-ASHBURN-AD-2":     {a10},
			tenancyPrefix + "US-ASHBURN-AD-3":     {"VM.Standard.E4.Flex"},
			tenancyPrefix + "EU-FRANKFURT-1-AD-1": {a10},
		},
		tokens:   map[string]string{},
		bodies:   map[string]string{},
		pageSize: 3,
		faults:   map[string][]fakeFault{},
	}
}

// fail queues n answers of a fault for op.
func (f *fakeOCI) fail(op string, n int, fault fakeFault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for range n {
		f.faults[op] = append(f.faults[op], fault)
	}
}

// calls counts the requests made of op.
func (f *fakeOCI) calls(op string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, r := range f.requests {
		if r.op == op {
			n++
		}
	}
	return n
}

func (f *fakeOCI) recorded(op string) []fakeRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []fakeRequest
	for _, r := range f.requests {
		if r.op == op {
			out = append(out, r)
		}
	}
	return out
}

// put adds an instance as OCI would list it.
func (f *fakeOCI) put(region, ad, shape string, state core.InstanceLifecycleStateEnum, tags map[string]string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := fmt.Sprintf("ocid1.instance.oc1.%s.fake%04d", region, len(f.instances))
	f.instances = append(f.instances, core.Instance{
		Id: common.String(id), AvailabilityDomain: common.String(tenancyPrefix + ad), CompartmentId: common.String(testCompartment),
		Region: common.String(region), Shape: common.String(shape), LifecycleState: state, FreeformTags: tags,
		DisplayName: common.String("put-" + id), TimeCreated: &common.SDKTime{Time: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)},
	})
	return id
}

// setState changes an instance's lifecycle state.
func (f *fakeOCI) setState(id string, state core.InstanceLifecycleStateEnum) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.instances {
		if *f.instances[i].Id == id {
			f.instances[i].LifecycleState = state
		}
	}
}

// forgetTokens is the retry tokens' day passing.
func (f *fakeOCI) forgetTokens() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tokens, f.bodies = map[string]string{}, map[string]string{}
}

func (f *fakeOCI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	host := r.Host
	if h, _, ok := strings.Cut(host, ":"); ok {
		host = h
	}
	// The SDK names the identity endpoint with an "oci." before the
	// domain.
	service, rest, _ := strings.Cut(host, ".")
	region, domain, _ := strings.Cut(rest, ".")
	domain = strings.TrimPrefix(domain, "oci.")
	body, _ := io.ReadAll(r.Body)
	path := strings.TrimPrefix(r.URL.Path, "/20160918")
	op := ""
	switch {
	case domain != "oraclecloud.com" || f.ads[region] == nil:
	case service == "identity" && r.Method == http.MethodGet && path == "/availabilityDomains":
		op = "ListAvailabilityDomains"
	case service == "iaas" && r.Method == http.MethodGet && path == "/instances":
		op = "ListInstances"
	case service == "iaas" && r.Method == http.MethodPost && path == "/instances":
		op = "LaunchInstance"
	case service == "iaas" && r.Method == http.MethodGet && strings.HasPrefix(path, "/instances/"):
		op = "GetInstance"
	case service == "iaas" && r.Method == http.MethodDelete && strings.HasPrefix(path, "/instances/"):
		op = "TerminateInstance"
	case service == "iaas" && r.Method == http.MethodGet && path == "/shapes":
		op = "ListShapes"
	}
	query := map[string]string{}
	for k := range r.URL.Query() {
		query[k] = r.URL.Query().Get(k)
	}
	f.mu.Lock()
	f.requests = append(f.requests, fakeRequest{op: op, host: r.Host, method: r.Method, path: r.URL.Path, query: query, header: r.Header.Clone(), body: body})
	var fault *fakeFault
	if q := f.faults[op]; len(q) > 0 {
		fault, f.faults[op] = &q[0], q[1:]
	}
	f.mu.Unlock()
	w.Header().Set("opc-request-id", "fake-request-1")
	switch {
	case op == "":
		writeFakeError(w, fakeFault{status: http.StatusNotFound, code: "NotAuthorizedOrNotFound", message: "no such host or operation: " + r.Host + " " + r.Method + " " + r.URL.Path})
		return
	case fault != nil:
		writeFakeError(w, *fault)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch op {
	case "ListAvailabilityDomains":
		var out []map[string]string
		for _, name := range f.ads[region] {
			out = append(out, map[string]string{"name": name, "id": "ocid1.availabilitydomain.oc1..fake", "compartmentId": query["compartmentId"]})
		}
		writeFakeJSON(w, out)
	case "ListInstances":
		var match []core.Instance
		for _, in := range f.instances {
			if *in.Region == region && (query["availabilityDomain"] == "" || *in.AvailabilityDomain == query["availabilityDomain"]) &&
				(query["displayName"] == "" || *in.DisplayName == query["displayName"]) {
				match = append(match, in)
			}
		}
		f.page(w, query["page"], match)
	case "ListShapes":
		var out []map[string]any
		for _, s := range f.shapes[query["availabilityDomain"]] {
			out = append(out, map[string]any{"shape": s})
		}
		f.page(w, query["page"], out)
	case "LaunchInstance":
		f.launch(w, r, region, body)
	case "GetInstance", "TerminateInstance":
		id := strings.TrimPrefix(path, "/instances/")
		i := slices.IndexFunc(f.instances, func(in core.Instance) bool { return *in.Id == id })
		if i < 0 {
			writeFakeError(w, fakeFault{status: http.StatusNotFound, code: "NotAuthorizedOrNotFound", message: "Authorization failed or requested resource not found."})
			return
		}
		if op == "TerminateInstance" {
			f.instances[i].LifecycleState = core.InstanceLifecycleStateTerminating
			w.WriteHeader(http.StatusNoContent)
			return
		}
		writeFakeJSON(w, f.instances[i])
	}
}

func (f *fakeOCI) page(w http.ResponseWriter, page string, items any) {
	all, _ := json.Marshal(items)
	// An empty list is [], never null, which the SDK cannot decode.
	list := []json.RawMessage{}
	_ = json.Unmarshal(all, &list)
	if list == nil {
		list = []json.RawMessage{}
	}
	start, _ := strconv.Atoi(page)
	end := min(start+f.pageSize, len(list))
	if end < len(list) {
		w.Header().Set("opc-next-page", strconv.Itoa(end))
	}
	writeFakeJSON(w, list[min(start, len(list)):end])
}

func (f *fakeOCI) launch(w http.ResponseWriter, r *http.Request, region string, body []byte) {
	var details struct {
		AvailabilityDomain string            `json:"availabilityDomain"`
		CompartmentID      string            `json:"compartmentId"`
		Shape              string            `json:"shape"`
		DisplayName        string            `json:"displayName"`
		FreeformTags       map[string]string `json:"freeformTags"`
		Metadata           map[string]string `json:"metadata"`
	}
	if err := json.Unmarshal(body, &details); err != nil {
		writeFakeError(w, fakeFault{status: http.StatusBadRequest, code: "CannotParseRequest", message: err.Error()})
		return
	}
	token := region + "/" + r.Header.Get("opc-retry-token")
	if id, ok := f.tokens[token]; ok {
		if f.bodies[token] != string(body) {
			writeFakeError(w, fakeFault{status: http.StatusConflict, code: "Conflict", message: "The retry token was used for a different request."})
			return
		}
		i := slices.IndexFunc(f.instances, func(in core.Instance) bool { return *in.Id == id })
		writeFakeJSON(w, f.instances[i])
		return
	}
	id := fmt.Sprintf("ocid1.instance.oc1.%s.fake%04d", region, len(f.instances))
	in := core.Instance{
		Id: common.String(id), AvailabilityDomain: common.String(details.AvailabilityDomain), CompartmentId: common.String(details.CompartmentID),
		Region: common.String(region), Shape: common.String(details.Shape), DisplayName: common.String(details.DisplayName),
		LifecycleState: core.InstanceLifecycleStateProvisioning, FreeformTags: details.FreeformTags,
		TimeCreated: &common.SDKTime{Time: time.Now().UTC()},
	}
	f.instances = append(f.instances, in)
	f.tokens[token], f.bodies[token] = id, string(body)
	writeFakeJSON(w, in)
}

func writeFakeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func writeFakeError(w http.ResponseWriter, f fakeFault) {
	w.Header().Set("Content-Type", "application/json")
	if f.retryAfter != "" {
		w.Header().Set("Retry-After", f.retryAfter)
	}
	w.WriteHeader(f.status)
	_ = json.NewEncoder(w).Encode(map[string]string{"code": f.code, "message": f.message})
}

// fakeBackend is a provider over a fakeOCI on loopback, whose retries
// wait a millisecond.
type fakeBackend struct {
	provider *Provider
	oci      *fakeOCI
	url      string
}

func newFakeBackend(t *testing.T) fakeBackend {
	t.Helper()
	return newFakeBackendWith(t, testConfig())
}

func newFakeBackendWith(t *testing.T, cfg *schema.OCI) fakeBackend {
	t.Helper()
	f := newFakeOCI()
	ts := httptest.NewServer(f)
	t.Cleanup(ts.Close)
	return fakeBackend{provider: newTestProvider(t, cfg, ts.URL), oci: f, url: ts.URL}
}

// testKeys is one emulator key for the whole test binary: making an
// RSA-2048 key takes a while.
var testKeys = sync.OnceValues(EmulatorConfigProvider)

func newTestProvider(t *testing.T, cfg *schema.OCI, endpoint string) *Provider {
	t.Helper()
	keys, err := testKeys()
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(context.Background(), cfg, testCatalog(), Options{
		Endpoint: endpoint, ConfigurationProvider: keys, RetryMax: 3, RetryWaitMin: time.Millisecond, RetryWaitMax: 2 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}
