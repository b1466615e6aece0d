// SPDX-License-Identifier: Apache-2.0

package gcp

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/api/option"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/providers/sim/gcesim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// catalogQuotas is how many quotas the catalog names for GCE per region,
// and the one project-wide.
var catalogQuotas = func() int {
	n := 0
	for _, q := range catalog.Default().Quotas {
		if q.Cloud == Name && q.Scope == catalog.RegionScope {
			n++
		}
	}
	return n
}()

var (
	usCentral1Zones  = zonesIn("us-central1")
	europeWest4Zones = zonesIn("europe-west4")
)

// zonesIn is the catalog's zones of a GCP region.
func zonesIn(region string) []string {
	r, _ := catalog.Default().Region(Name, region)
	return r.Zones
}

// soldIn is the machine types the catalog sells in a zone, on either
// market, sorted: its zone's offers and its region's.
func soldIn(t *testing.T, zone string) []string {
	t.Helper()
	cat := catalog.Default()
	var out []string
	for _, o := range cat.Offers {
		if o.Cloud != Name || slices.Contains(out, o.InstanceType) {
			continue
		}
		r, _ := cat.Region(Name, o.Region)
		if o.Zone == zone || o.Zone == "" && slices.Contains(r.Zones, zone) {
			out = append(out, o.InstanceType)
		}
	}
	slices.Sort(out)
	if len(out) == 0 {
		t.Fatalf("the catalog sells nothing in %s", zone)
	}
	return out
}

func quotaOf(c providers.Capacity, region, name string) (planner.Quota, bool) {
	for _, q := range c.Quotas {
		if q.Region == region && q.Name == name {
			return q, true
		}
	}
	return planner.Quota{}, false
}

func offeringOf(c providers.Capacity, zone string) ([]string, bool) {
	for _, o := range c.Offerings {
		if o.Zone == zone {
			return o.Types, true
		}
	}
	return nil, false
}

func regionsOf(c providers.Capacity) map[string]int {
	out := map[string]int{}
	for _, q := range c.Quotas {
		out[q.Region]++
	}
	return out
}

func zonesOf(c providers.Capacity) []string {
	var out []string
	for _, o := range c.Offerings {
		out = append(out, o.Zone)
	}
	return out
}

func TestCapacity(t *testing.T) {
	b := newBackend(t, sim.Config{}, nil)
	b.world.SetQuota(Name, "us-central1", "NVIDIA_L4_GPUS", 8)
	b.world.SetQuota(Name, "", catalog.GCPGPUsAllRegions, 32)
	if !slices.Contains(soldIn(t, "us-central1-a"), "a3-highgpu-8g") {
		t.Fatal("the catalog sells no a3-highgpu-8g in us-central1-a, which the test unoffers")
	}
	b.world.SetOffered(Name, "us-central1-a", "a3-highgpu-8g", false)
	ctx := testCtx(t)
	if _, err := b.provider.Create(ctx, testRequest(onDemand, "cap", 0)); err != nil {
		t.Fatal(err)
	}
	if _, err := b.provider.Create(ctx, testRequest(spot, "cap", 1)); err != nil {
		t.Fatal(err)
	}

	got, err := b.provider.Capacity(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Warnings) != 0 {
		t.Errorf("warnings: %q", got.Warnings)
	}

	quotas := []struct {
		name  string
		want  planner.Quota
		found bool
	}{
		{"a region's limit, set", planner.Quota{Cloud: Name, Region: "us-central1", Name: "NVIDIA_L4_GPUS", Description: "NVIDIA L4 GPUs", Unit: catalog.GPUs, Limit: 8, Used: 1}, true},
		{"a region's preemptible one", planner.Quota{Cloud: Name, Region: "us-central1", Name: "PREEMPTIBLE_NVIDIA_L4_GPUS", Description: "Preemptible NVIDIA L4 GPUs", Unit: catalog.GPUs, Limit: 100000, Used: 1}, true},
		{"another region's", planner.Quota{Cloud: Name, Region: "europe-west4", Name: "NVIDIA_L4_GPUS", Description: "NVIDIA L4 GPUs", Unit: catalog.GPUs, Limit: 100000, Used: 0}, true},
		{"the project's", planner.Quota{Cloud: Name, Name: catalog.GCPGPUsAllRegions, Description: "GPUs (all regions)", Unit: catalog.GPUs, Limit: 32, Used: 2}, true},
		{"a region not configured", planner.Quota{Cloud: Name, Region: "us-east1", Name: "NVIDIA_L4_GPUS"}, false},
		{"the project's, as a region's", planner.Quota{Cloud: Name, Region: "us-central1", Name: catalog.GCPGPUsAllRegions}, false},
	}
	for _, tt := range quotas {
		t.Run(tt.name, func(t *testing.T) {
			q, found := quotaOf(got, tt.want.Region, tt.want.Name)
			if found != tt.found {
				t.Fatalf("found %v, want %v", found, tt.found)
			}
			if found && q != tt.want {
				t.Errorf("got %+v\nwant %+v", q, tt.want)
			}
		})
	}
	if n := regionsOf(got); n[""] != 1 || n["us-central1"] != catalogQuotas || n["europe-west4"] != catalogQuotas || len(n) != 3 {
		t.Errorf("quotas per region %v", n)
	}
	if !slices.IsSortedFunc(got.Quotas, func(a, b planner.Quota) int {
		return strings.Compare(a.Region+"\x00"+a.Name, b.Region+"\x00"+b.Name)
	}) {
		t.Errorf("quotas not sorted by region and name")
	}

	offerings := []struct {
		zone string
		want []string
	}{
		{"us-central1-a", slices.DeleteFunc(soldIn(t, "us-central1-a"), func(n string) bool { return n == "a3-highgpu-8g" })},
		{"us-central1-b", soldIn(t, "us-central1-b")},
		{"us-central1-f", soldIn(t, "us-central1-f")},
		{"europe-west4-c", soldIn(t, "europe-west4-c")},
	}
	for _, tt := range offerings {
		t.Run("offering of "+tt.zone, func(t *testing.T) {
			types, ok := offeringOf(got, tt.zone)
			if !ok || !slices.Equal(types, tt.want) {
				t.Errorf("got %v (listed %v), want %v", types, ok, tt.want)
			}
		})
	}
	if zones := zonesOf(got); !slices.Equal(zones, slices.Concat(europeWest4Zones, usCentral1Zones)) {
		t.Errorf("offerings of %v, want the configured regions' zones, sorted", zones)
	}
}

// TestCapacityWhenReadsFail: a read that is denied, throttled past its
// retries or failing leaves out only what it would have read, and says so.
func TestCapacityWhenReadsFail(t *testing.T) {
	every := len(usCentral1Zones) + len(europeWest4Zones)
	tests := []struct {
		name    string
		faults  []sim.Fault
		regions map[string]int // quotas read per region, "" for the project
		zones   int            // zones whose offerings were read
		warning []string       // what the one warning says, if any
	}{
		{
			name:    "nothing fails",
			regions: map[string]int{"": 1, "us-central1": catalogQuotas, "europe-west4": catalogQuotas},
			zones:   every,
		},
		{
			name:    "regions.get denied in one region",
			faults:  []sim.Fault{{Op: gcesim.OpRegionGet, Region: "us-central1", Kind: sim.FaultServerError, Code: "forbidden", Rate: 1}},
			regions: map[string]int{"": 1, "europe-west4": catalogQuotas},
			zones:   every,
			warning: []string{"region quotas not read for us-central1", "permission compute.regions.get denied", "Required 'compute.regions.get' permission for 'projects/gpufleet-test/regions/us-central1'"},
		},
		{
			name:    "regions.get denied everywhere",
			faults:  []sim.Fault{{Op: gcesim.OpRegionGet, Kind: sim.FaultServerError, Code: "forbidden", Rate: 1}},
			regions: map[string]int{"": 1},
			zones:   every,
			warning: []string{"region quotas not read for europe-west4, us-central1", "compute.regions.get"},
		},
		{
			name:    "projects.get denied",
			faults:  []sim.Fault{{Op: gcesim.OpProjectGet, Kind: sim.FaultServerError, Code: "forbidden", Rate: 1}},
			regions: map[string]int{"us-central1": catalogQuotas, "europe-west4": catalogQuotas},
			zones:   every,
			warning: []string{"project quotas not read for gpufleet-test", "permission compute.projects.get denied"},
		},
		{
			name:    "machineTypes.list denied",
			faults:  []sim.Fault{{Op: gcesim.OpMachineTypesList, Kind: sim.FaultServerError, Code: "forbidden", Rate: 1}},
			regions: map[string]int{"": 1, "us-central1": catalogQuotas, "europe-west4": catalogQuotas},
			warning: []string{"machine types not read for " + strings.Join(slices.Concat(europeWest4Zones, usCentral1Zones), ", "), "permission compute.machineTypes.list denied"},
		},
		{
			name:    "a token without the scope",
			faults:  []sim.Fault{{Op: gcesim.OpProjectGet, Kind: sim.FaultServerError, Code: "insufficientPermissions", Rate: 1}},
			regions: map[string]int{"us-central1": catalogQuotas, "europe-west4": catalogQuotas},
			zones:   every,
			warning: []string{"project quotas not read", "compute.projects.get", "insufficient authentication scopes"},
		},
		{
			name:    "throttled, then answered",
			faults:  []sim.Fault{{Op: gcesim.OpRegionGet, Kind: sim.FaultThrottle, Times: 2}, {Op: gcesim.OpMachineTypesList, Kind: sim.FaultThrottle, Times: 3}},
			regions: map[string]int{"": 1, "us-central1": catalogQuotas, "europe-west4": catalogQuotas},
			zones:   every,
		},
		{
			name:    "one zone throttled past its retries",
			faults:  []sim.Fault{{Op: gcesim.OpMachineTypesList, Zone: "us-central1-b", Kind: sim.FaultThrottle, Rate: 1}},
			regions: map[string]int{"": 1, "us-central1": catalogQuotas, "europe-west4": catalogQuotas},
			zones:   every - 1,
			warning: []string{"machine types not read for us-central1-b", "throttled", "rateLimitExceeded"},
		},
		{
			name:    "the project failing",
			faults:  []sim.Fault{{Op: gcesim.OpProjectGet, Kind: sim.FaultServerError, Rate: 1}},
			regions: map[string]int{"us-central1": catalogQuotas, "europe-west4": catalogQuotas},
			zones:   every,
			warning: []string{"project quotas not read for gpufleet-test", "unavailable", "backendError"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBackend(t, sim.Config{}, nil)
			for _, f := range tt.faults {
				f.Cloud = Name
				if err := b.world.AddFaults(&f); err != nil {
					t.Fatal(err)
				}
			}
			got, err := b.provider.Capacity(testCtx(t))
			if err != nil {
				t.Fatalf("a failed read failed the call: %v", err)
			}
			if n := regionsOf(got); !mapsEqual(n, tt.regions) {
				t.Errorf("quotas per region %v, want %v", n, tt.regions)
			}
			if n := len(got.Offerings); n != tt.zones {
				t.Errorf("offerings of %d zones, want %d", n, tt.zones)
			}
			if tt.warning == nil {
				if len(got.Warnings) != 0 {
					t.Errorf("warnings: %q", got.Warnings)
				}
				return
			}
			if len(got.Warnings) != 1 {
				t.Fatalf("warnings %q, want one", got.Warnings)
			}
			for _, part := range tt.warning {
				if !strings.Contains(got.Warnings[0], part) {
					t.Errorf("warning %q does not say %q", got.Warnings[0], part)
				}
			}
		})
	}
}

func mapsEqual(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestCapacityCancelled(t *testing.T) {
	tests := []struct {
		name  string
		ctx   func(t *testing.T) context.Context
		fault *sim.Fault
		want  error
	}{
		{"cancelled before", func(t *testing.T) context.Context {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx
		}, nil, context.Canceled},
		{"past its deadline while waiting", func(t *testing.T) context.Context {
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			t.Cleanup(cancel)
			return ctx
		}, &sim.Fault{Cloud: Name, Op: gcesim.OpProjectGet, Kind: sim.FaultLatency, Latency: sim.Duration(5 * time.Second), Times: 1}, context.DeadlineExceeded},
		// The SDK sends list pages without the context: the provider must
		// not wait for a page that hangs.
		{"past its deadline while a zone's list hangs", func(t *testing.T) context.Context {
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			t.Cleanup(cancel)
			return ctx
		}, &sim.Fault{Cloud: Name, Op: gcesim.OpMachineTypesList, Kind: sim.FaultLatency, Latency: sim.Duration(time.Second), Times: 1}, context.DeadlineExceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBackend(t, sim.Config{}, nil)
			if tt.fault != nil {
				if err := b.world.AddFaults(tt.fault); err != nil {
					t.Fatal(err)
				}
			}
			start := time.Now()
			got, err := b.provider.Capacity(tt.ctx(t))
			if !errors.Is(err, tt.want) {
				t.Errorf("got %v, want %v", err, tt.want)
			}
			if took := time.Since(start); took > 500*time.Millisecond {
				t.Errorf("took %s to give up", took)
			}
			if len(got.Quotas) != 0 || len(got.Offerings) != 0 {
				t.Errorf("a failed call answered %+v", got)
			}
		})
	}
}

// TestCapacityBadInput feeds the provider what GCE should never say, and
// checks that each oddity is left out with its reason, that nothing is
// guessed and that nothing panics.
func TestCapacityBadInput(t *testing.T) {
	const base = "/compute/v1/projects/gpufleet-test"
	answers := map[string]string{
		base + "/regions/us-central1": `{"name": "us-central1",
		"quotaStatusWarning": {"code": "QUOTA_INFO_UNAVAILABLE", "message": "Quota information is not available."},
		"quotas": [
			{"metric": "NVIDIA_L4_GPUS", "limit": -1, "usage": 0},
			{"metric": "NVIDIA_H100_GPUS", "limit": 2.5, "usage": 0},
			{"metric": "NVIDIA_A100_GPUS", "limit": "NaN", "usage": 0},
			{"metric": "NVIDIA_H200_GPUS", "limit": 1e300, "usage": 0},
			{"metric": "PREEMPTIBLE_NVIDIA_L4_GPUS", "limit": 8, "usage": -3},
			{"metric": "PREEMPTIBLE_NVIDIA_A100_GPUS", "limit": 8, "usage": 0.5},
			{"metric": "NVIDIA_A100_80GB_GPUS", "limit": 8, "usage": 0},
			{"metric": "NVIDIA_A100_80GB_GPUS", "limit": 16, "usage": 0},
			{"metric": "PREEMPTIBLE_NVIDIA_A100_80GB_GPUS", "usage": 0},
			{"metric": "PREEMPTIBLE_NVIDIA_H100_GPUS", "limit": 16},
			{"metric": "PREEMPTIBLE_NVIDIA_H200_GPUS", "limit": 4, "usage": 1},
			{"metric": "GPUS_ALL_REGIONS", "limit": 99, "usage": 0},
			{"metric": "CPUS", "limit": 24, "usage": 3},
			{"limit": 5, "usage": 0},
			{"metric": "NVIDIA_T4_GPUS", "limit": 4, "usage": 0}
		]}`,
		base + "/regions/europe-west4": `{"name": "europe-west4", "quotas": [`,
		base:                           `{"name": "gpufleet-test", "quotas": [{"metric": "GPUS_ALL_REGIONS", "limit": "Infinity", "usage": 0}, {"metric": "NVIDIA_L4_GPUS", "limit": 4, "usage": 0}]}`,
		base + "/zones/us-central1-a/machineTypes": `{"items": [
			{"name": "g2-standard-4", "zone": "us-central1-a"},
			{"name": "g2-standard-4", "zone": "us-central1-a"},
			{"name": "a2-highgpu-1g", "zone": "https://www.googleapis.com/compute/v1/projects/gpufleet-test/zones/us-central1-a"},
			{"name": "a3-highgpu-8g", "zone": "mars-central1-a"},
			{"name": "n1-standard-1", "zone": "us-central1-a"},
			{"zone": "us-central1-a"},
			{"name": "g2-standard-48"}
		]}`,
		base + "/zones/us-central1-b/machineTypes": `{}`,
		base + "/zones/us-central1-c/machineTypes": `{"items": {"name": "not a list"}}`,
	}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		body, ok := answers[r.URL.Path]
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			body = `{"error": {"code": 404, "message": "The resource was not found", "errors": [{"reason": "notFound", "domain": "global", "message": "The resource was not found"}]}}`
		}
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(ts.Close)
	p, err := New(context.Background(), testConfig(), catalog.Default(), Options{
		Endpoint:      ts.URL,
		ClientOptions: []option.ClientOption{option.WithoutAuthentication()},
		RetryBase:     time.Millisecond,
		RetryMax:      2 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })

	got, err := p.Capacity(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}

	// The only quotas that could be read whole.
	want := []planner.Quota{
		{Cloud: Name, Region: "us-central1", Name: "PREEMPTIBLE_NVIDIA_H100_GPUS", Description: "Preemptible NVIDIA H100 GPUs", Unit: catalog.GPUs, Limit: 16, Used: planner.UsedUnknown},
		{Cloud: Name, Region: "us-central1", Name: "PREEMPTIBLE_NVIDIA_H200_GPUS", Description: "Preemptible NVIDIA H200 GPUs", Unit: catalog.GPUs, Limit: 4, Used: 1},
	}
	if !slices.Equal(got.Quotas, want) {
		t.Errorf("quotas\n got %+v\nwant %+v", got.Quotas, want)
	}
	if types, _ := offeringOf(got, "us-central1-a"); !slices.Equal(types, []string{"a2-highgpu-1g", "g2-standard-4", "g2-standard-48"}) {
		t.Errorf("us-central1-a offers %v", types)
	}
	if types, ok := offeringOf(got, "us-central1-b"); !ok || types == nil || len(types) != 0 {
		t.Errorf("us-central1-b, which lists no type, offers %v (listed %v), want none", types, ok)
	}
	if zones := zonesOf(got); !slices.Equal(zones, []string{"us-central1-a", "us-central1-b"}) {
		t.Errorf("offerings of %v, want only the zones that answered", zones)
	}

	warnings := []string{
		"quota NVIDIA_L4_GPUS of region us-central1 left out: limit -1 is negative",
		"quota NVIDIA_H100_GPUS of region us-central1 left out: limit 2.5 is not a whole number",
		"quota NVIDIA_A100_GPUS of region us-central1 left out: limit NaN is not a number",
		"quota NVIDIA_H200_GPUS of region us-central1 left out: limit 1e+300 is too large to be a count",
		"quota PREEMPTIBLE_NVIDIA_L4_GPUS of region us-central1 left out: usage -3 is negative",
		"quota PREEMPTIBLE_NVIDIA_A100_GPUS of region us-central1 left out: usage 0.5 is not a whole number",
		"quota NVIDIA_A100_80GB_GPUS of region us-central1 left out: listed 2 times",
		"quota PREEMPTIBLE_NVIDIA_A100_80GB_GPUS of region us-central1 left out: no limit given",
		"quota GPUS_ALL_REGIONS of project gpufleet-test left out: limit +Inf is too large to be a count",
		"region quotas of us-central1 may be incomplete: QUOTA_INFO_UNAVAILABLE: Quota information is not available.",
		"region quotas not read for europe-west4",
		"machine type a3-highgpu-8g left out of us-central1-a: GCE listed it for zone mars-central1-a",
		"machine types not read for us-central1-c",
		"machine types not read for us-central1-f",
	}
	for _, w := range warnings {
		if !slices.ContainsFunc(got.Warnings, func(g string) bool { return strings.Contains(g, w) }) {
			t.Errorf("no warning says %q", w)
		}
	}
	if len(got.Warnings) != len(warnings)+len(europeWest4Zones) {
		t.Errorf("%d warnings, want %d:\n%s", len(got.Warnings), len(warnings)+len(europeWest4Zones), strings.Join(got.Warnings, "\n"))
	}
	for _, w := range got.Warnings {
		if strings.Contains(w, "CPUS ") || strings.Contains(w, "NVIDIA_T4_GPUS") || strings.Contains(w, "n1-standard-1") {
			t.Errorf("a warning about what gpufleet does not need: %q", w)
		}
	}
}
