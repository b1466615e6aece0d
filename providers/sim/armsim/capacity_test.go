// SPDX-License-Identifier: Apache-2.0

package armsim

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	azfake "github.com/Azure/azure-sdk-for-go/sdk/azcore/fake"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// usagesIn reads a location's usages through the SDK's pager, by name, and
// how many pages they took.
func (f *front) usagesIn(t *testing.T, location string) (map[string]*armcompute.Usage, int, error) {
	t.Helper()
	client, err := armcompute.NewUsageClient(testSub, &azfake.TokenCredential{}, clientOptions(f.url, f.retry))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*armcompute.Usage{}
	pages := 0
	for pager := client.NewListPager(location, nil); pager.More(); pages++ {
		page, err := pager.NextPage(context.Background())
		if err != nil {
			return nil, pages, err
		}
		for _, u := range page.Value {
			name := deref(u.Name.Value)
			if _, dup := out[name]; dup {
				t.Fatalf("usage %s listed twice", name)
			}
			out[name] = u
		}
	}
	return out, pages, nil
}

// skusIn lists SKUs through the SDK's pager, with a filter when one is
// given, and how many pages they took.
func (f *front) skusIn(t *testing.T, filter string) ([]*armcompute.ResourceSKU, int, error) {
	t.Helper()
	client, err := armcompute.NewResourceSKUsClient(testSub, &azfake.TokenCredential{}, clientOptions(f.url, f.retry))
	if err != nil {
		t.Fatal(err)
	}
	opts := &armcompute.ResourceSKUsClientListOptions{IncludeExtendedLocations: to.Ptr("false")}
	if filter != "" {
		opts.Filter = to.Ptr(filter)
	}
	var out []*armcompute.ResourceSKU
	pages := 0
	for pager := client.NewListPager(opts); pager.More(); pages++ {
		page, err := pager.NextPage(context.Background())
		if err != nil {
			return nil, pages, err
		}
		out = append(out, page.Value...)
	}
	return out, pages, nil
}

func (f *front) mustUsages(t *testing.T, location string) map[string]*armcompute.Usage {
	t.Helper()
	got, _, err := f.usagesIn(t, location)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func (f *front) delete(t *testing.T, name string) {
	t.Helper()
	poller, err := f.vms.BeginDelete(context.Background(), testRG, name, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := poller.PollUntilDone(context.Background(), pollFast); err != nil {
		t.Fatal(err)
	}
}

// use is a usage's current value and limit.
type use struct{ current, limit int64 }

func useOf(u *armcompute.Usage) use {
	if u == nil {
		return use{-1, -1}
	}
	return use{int64(deref(u.CurrentValue)), deref(u.Limit)}
}

// Usages follow World.SetQuota, and rise with the VMs that count against
// them: an on-demand VM's vCPUs against its family and the regional total,
// a spot VM's against the low-priority total alone.
func TestUsages(t *testing.T) {
	const unlimited = 1 << 20
	a100Family, _ := catalog.AzureFamily(a100)
	t4Family, _ := catalog.AzureFamily(t4)
	tests := []struct {
		name     string
		setup    func(t *testing.T, f *front)
		location string
		want     map[string]use
	}{
		{name: "nothing running", location: "eastus", want: map[string]use{
			catalog.AzureCores: {0, unlimited}, catalog.AzureLowPriorityCores: {0, unlimited}, a100Family: {0, unlimited},
			"virtualMachines": {0, 25000}, "availabilitySets": {0, 2500}, "virtualMachineScaleSets": {0, 2500},
		}},
		{name: "limits follow SetQuota in their region", setup: func(t *testing.T, f *front) {
			f.world.SetQuota(catalog.Azure, "eastus", a100Family, 48)
			f.world.SetQuota(catalog.Azure, "eastus", catalog.AzureCores, 100)
			f.world.SetQuota(catalog.Azure, "westus3", catalog.AzureCores, 7)
		}, location: "eastus", want: map[string]use{a100Family: {0, 48}, catalog.AzureCores: {0, 100}, t4Family: {0, unlimited}}},
		{name: "on-demand VMs count against their family and cores", setup: func(t *testing.T, f *front) {
			f.mustCreate(t, "one", vmRequest("eastus", a100, inZone("1")))
			f.mustCreate(t, "two", vmRequest("eastus", a100, inZone("2")))
			f.mustCreate(t, "elsewhere", vmRequest("westus3", a100, inZone("1")))
		}, location: "eastus", want: map[string]use{
			a100Family: {48, unlimited}, catalog.AzureCores: {48, unlimited}, catalog.AzureLowPriorityCores: {0, unlimited},
			t4Family: {0, unlimited}, "virtualMachines": {2, 25000},
		}},
		{name: "spot VMs count against lowPriorityCores only", setup: func(t *testing.T, f *front) {
			f.mustCreate(t, "cheap", vmRequest("eastus", t4, inZone("3"), spot(armcompute.VirtualMachineEvictionPolicyTypesDelete)))
		}, location: "eastus", want: map[string]use{catalog.AzureLowPriorityCores: {4, unlimited}, catalog.AzureCores: {0, unlimited}, t4Family: {0, unlimited}}},
		{name: "a deleted VM stops counting", setup: func(t *testing.T, f *front) {
			f.mustCreate(t, "gone", vmRequest("eastus", t4, inZone("1")))
			f.delete(t, "gone")
		}, location: "eastus", want: map[string]use{t4Family: {0, unlimited}, catalog.AzureCores: {0, unlimited}, "virtualMachines": {0, 25000}}},
		{name: "a location by its display name", setup: func(t *testing.T, f *front) {
			f.mustCreate(t, "one", vmRequest("eastus", t4, inZone("1")))
		}, location: "East US", want: map[string]use{t4Family: {4, unlimited}, catalog.AzureCores: {4, unlimited}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFront(t, frontConfig{})
			if tt.setup != nil {
				tt.setup(t, f)
			}
			got := f.mustUsages(t, tt.location)
			for name, want := range tt.want {
				if u := useOf(got[name]); u != want {
					t.Errorf("%s: %+v, want %+v", name, u, want)
				}
			}
			// Every quota the catalog names is listed, in Count, with the
			// console's words for it.
			for _, q := range f.world.Catalog().Quotas {
				if q.Cloud != catalog.Azure {
					continue
				}
				u := got[q.Name]
				if u == nil {
					t.Errorf("quota %s not listed", q.Name)
					continue
				}
				if deref(u.Unit) != "Count" || deref(u.Name.LocalizedValue) != q.Description {
					t.Errorf("%s: unit %q, localized %q", q.Name, deref(u.Unit), deref(u.Name.LocalizedValue))
				}
			}
		})
	}
}

// A location's usages come back exactly once each over several pages.
func TestUsagesPaging(t *testing.T) {
	f := newFront(t, frontConfig{options: Options{PageSize: 3}})
	got, pages, err := f.usagesIn(t, "eastus")
	if err != nil {
		t.Fatal(err)
	}
	want := len(f.world.Quotas(catalog.Azure, "eastus")) + len(resourceCounts)
	if len(got) != want || pages != (want+2)/3 {
		t.Fatalf("%d usages over %d pages, want %d over %d", len(got), pages, want, (want+2)/3)
	}
}

// skuNamed finds a VM size's entry for a location.
func skuNamed(skus []*armcompute.ResourceSKU, name, location string) *armcompute.ResourceSKU {
	for _, s := range skus {
		if deref(s.ResourceType) == "virtualMachines" && deref(s.Name) == name && slices.ContainsFunc(s.Locations, func(l *string) bool { return deref(l) == location }) {
			return s
		}
	}
	return nil
}

func strs(ps []*string) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = deref(p)
	}
	return out
}

// restriction is a SKU restriction, flattened for comparing.
type restriction struct {
	typ, reason string
	values      string
	locations   string
	zones       string
}

func restrictionsOf(sku *armcompute.ResourceSKU) []restriction {
	out := []restriction{}
	for _, r := range sku.Restrictions {
		got := restriction{typ: string(deref(r.Type)), reason: string(deref(r.ReasonCode)), values: strings.Join(strs(r.Values), ",")}
		if r.RestrictionInfo != nil {
			got.locations = strings.Join(strs(r.RestrictionInfo.Locations), ",")
			got.zones = strings.Join(strs(r.RestrictionInfo.Zones), ",")
		}
		out = append(out, got)
	}
	return out
}

// SKU restrictions follow World.SetOffered: a zone without the size is
// restricted for the subscription, and a size in no zone is restricted in
// the location too, while locationInfo keeps listing where it exists.
func TestSKURestrictions(t *testing.T) {
	const notForSub = "NotAvailableForSubscription"
	tests := []struct {
		name     string
		unoffer  []string
		reoffer  []string
		size     string
		want     []restriction
		wantCode string // of a create in zone 2
	}{
		{name: "offered everywhere", size: t4, want: []restriction{}},
		{name: "one zone without it", unoffer: []string{"eastus-2"}, size: t4,
			want:     []restriction{{typ: "Zone", reason: notForSub, values: "eastus", locations: "eastus", zones: "2"}},
			wantCode: "SkuNotAvailable"},
		{name: "two zones without it", unoffer: []string{"eastus-3", "eastus-1"}, size: t4,
			want: []restriction{{typ: "Zone", reason: notForSub, values: "eastus", locations: "eastus", zones: "1,3"}}},
		{name: "no zone with it", unoffer: []string{"eastus-1", "eastus-2", "eastus-3"}, size: t4,
			want: []restriction{
				{typ: "Location", reason: notForSub, values: "eastus", locations: "eastus"},
				{typ: "Zone", reason: notForSub, values: "eastus", locations: "eastus", zones: "1,2,3"},
			}, wantCode: "SkuNotAvailable"},
		{name: "offered again", unoffer: []string{"eastus-2"}, reoffer: []string{"eastus-2"}, size: t4, want: []restriction{}},
		{name: "an on-demand-only size", unoffer: []string{"eastus-2"}, size: h100,
			want: []restriction{{typ: "Zone", reason: notForSub, values: "eastus", locations: "eastus", zones: "2"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFront(t, frontConfig{world: sim.Config{Catalog: onDemandOnly(t, "eastus", h100)}})
			for _, z := range tt.unoffer {
				f.world.SetOffered(catalog.Azure, z, tt.size, false)
			}
			for _, z := range tt.reoffer {
				f.world.SetOffered(catalog.Azure, z, tt.size, true)
			}
			skus, _, err := f.skusIn(t, "location eq 'eastus'")
			if err != nil {
				t.Fatal(err)
			}
			sku := skuNamed(skus, tt.size, "eastus")
			if sku == nil {
				t.Fatalf("%s not listed in eastus", tt.size)
			}
			if got := restrictionsOf(sku); !slices.Equal(got, tt.want) {
				t.Errorf("restrictions %+v, want %+v", got, tt.want)
			}
			if len(sku.LocationInfo) != 1 || deref(sku.LocationInfo[0].Location) != "eastus" || strings.Join(strs(sku.LocationInfo[0].Zones), ",") != "1,2,3" {
				t.Errorf("locationInfo %+v", sku.LocationInfo)
			}
			if tt.size != t4 {
				return
			}
			// What the listing says is what a create meets.
			_, err = f.create(t, "probe", vmRequest("eastus", t4, inZone("2")))
			if tt.wantCode == "" {
				if err != nil {
					t.Fatalf("create in an offered zone: %v", err)
				}
				return
			}
			responseError(t, err, tt.wantCode, http.StatusConflict)
		})
	}
}

// A size's entry describes it as the catalog does, in Compute's words.
func TestSKUDescription(t *testing.T) {
	cat := onDemandOnly(t, "eastus", h100)
	f := newFront(t, frontConfig{world: sim.Config{Catalog: cat}})
	skus, _, err := f.skusIn(t, "location eq 'eastus'")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		size             string
		family, sizeName string
		caps             map[string]string
	}{
		{t4, "standardNCASv3_T4Family", "NC4as_T4_v3", map[string]string{"vCPUs": "4", "GPUs": "1", "MemoryGB": "28", "LowPriorityCapable": "True", "vCPUsAvailable": "4"}},
		{a100, "StandardNCADSA100v4Family", "NC24ads_A100_v4", map[string]string{"vCPUs": "24", "GPUs": "1", "MemoryGB": "220", "LowPriorityCapable": "True"}},
		{h100, "standardNDSH100v5Family", "ND96isr_H100_v5", map[string]string{"vCPUs": "96", "GPUs": "8", "LowPriorityCapable": "False"}},
	}
	for _, tt := range tests {
		t.Run(tt.size, func(t *testing.T) {
			sku := skuNamed(skus, tt.size, "eastus")
			if sku == nil {
				t.Fatal("not listed")
			}
			if deref(sku.Family) != tt.family || deref(sku.Size) != tt.sizeName || deref(sku.Tier) != "Standard" {
				t.Errorf("family %q size %q tier %q", deref(sku.Family), deref(sku.Size), deref(sku.Tier))
			}
			caps := map[string]string{}
			for _, c := range sku.Capabilities {
				caps[deref(c.Name)] = deref(c.Value)
			}
			for name, want := range tt.caps {
				if caps[name] != want {
					t.Errorf("capability %s = %q, want %q", name, caps[name], want)
				}
			}
		})
	}
	if skuNamed(skus, sizeNotIn(t, cat, "eastus"), "eastus") != nil {
		t.Error("a size the catalog has not in eastus is listed there")
	}
}

// The location filter narrows the listing to one location's entries, an
// unknown location has none, and no filter lists every location, over as
// many pages as it takes.
func TestSKUFilter(t *testing.T) {
	cat := catalog.Default()
	sizesIn := func(region string) int {
		seen := map[string]bool{}
		for _, o := range cat.Offers {
			if o.Cloud == catalog.Azure && o.Region == region {
				seen[o.InstanceType] = true
			}
		}
		return len(seen) + 2 // and the availability sets' two SKUs
	}
	all := 0
	for _, r := range cat.RegionsOf(catalog.Azure) {
		all += sizesIn(r.Name)
	}
	tests := []struct {
		name      string
		filter    string
		pageSize  int
		want      int
		locations []string
	}{
		{name: "one location", filter: "location eq 'eastus'", want: sizesIn("eastus"), locations: []string{"eastus"}},
		{name: "one location by display name", filter: "location eq 'East US'", want: sizesIn("eastus"), locations: []string{"eastus"}},
		{name: "keywords in any case", filter: "Location EQ 'westus3'", want: sizesIn("westus3"), locations: []string{"westus3"}},
		{name: "an unknown location", filter: "location eq 'marsnorth'", want: 0},
		{name: "every location, paged", pageSize: 7, want: all},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFront(t, frontConfig{options: Options{PageSize: tt.pageSize}})
			skus, pages, err := f.skusIn(t, tt.filter)
			if err != nil {
				t.Fatal(err)
			}
			if len(skus) != tt.want {
				t.Fatalf("%d SKUs, want %d", len(skus), tt.want)
			}
			seen := map[string]bool{}
			for _, s := range skus {
				loc := strings.Join(strs(s.Locations), ",")
				key := deref(s.ResourceType) + "/" + deref(s.Name) + "@" + loc
				if seen[key] {
					t.Fatalf("%s listed twice", key)
				}
				seen[key] = true
				if tt.locations != nil && !slices.Contains(tt.locations, loc) {
					t.Fatalf("%s listed for filter %q", key, tt.filter)
				}
			}
			if tt.pageSize > 0 && pages != (tt.want+tt.pageSize-1)/tt.pageSize {
				t.Fatalf("%d pages of %d for %d SKUs", pages, tt.pageSize, tt.want)
			}
		})
	}
}

// Fault files reach the new operations: a denial is ARM's 403
// AuthorizationFailed naming the action the call needs, throttling is
// retried, and a fault may aim at one location.
func TestCapacityFaults(t *testing.T) {
	skusCall := func(t *testing.T, f *front) error {
		_, _, err := f.skusIn(t, "location eq 'eastus'")
		return err
	}
	usagesCall := func(location string) func(*testing.T, *front) error {
		return func(t *testing.T, f *front) error {
			_, _, err := f.usagesIn(t, location)
			return err
		}
	}
	tests := []struct {
		name       string
		fault      sim.Fault
		call       func(*testing.T, *front) error
		wantCode   string
		wantText   string
		wantCalls  int
		wantFired  int
		wantStatus int
	}{
		{name: "usages denied", fault: sim.Fault{Op: OpUsages, Kind: sim.FaultServerError, Code: "AuthorizationFailed", Times: 1},
			call: usagesCall("eastus"), wantCode: "AuthorizationFailed", wantStatus: http.StatusForbidden, wantCalls: 1, wantFired: 1,
			wantText: "does not have authorization to perform action 'Microsoft.Compute/locations/usages/read' over scope '/subscriptions/" + testSub + "' or the scope is invalid."},
		{name: "SKUs denied", fault: sim.Fault{Op: OpSKUs, Kind: sim.FaultServerError, Code: "AuthorizationFailed", Times: 1},
			call: skusCall, wantCode: "AuthorizationFailed", wantStatus: http.StatusForbidden, wantCalls: 1, wantFired: 1,
			wantText: "perform action 'Microsoft.Compute/skus/read' over scope '/subscriptions/" + testSub + "'"},
		{name: "usages throttled once", fault: sim.Fault{Op: OpUsages, Kind: sim.FaultThrottle, Times: 1},
			call: usagesCall("eastus"), wantCalls: 2, wantFired: 1},
		{name: "SKUs throttled once", fault: sim.Fault{Op: OpSKUs, Kind: sim.FaultThrottle, Times: 1},
			call: skusCall, wantCalls: 2, wantFired: 1},
		{name: "a fault for another location", fault: sim.Fault{Op: OpUsages, Region: "westus3", Kind: sim.FaultServerError, Code: "AuthorizationFailed", Times: 1},
			call: usagesCall("eastus"), wantCalls: 1, wantFired: 0},
		{name: "a fault for this location", fault: sim.Fault{Op: OpUsages, Region: "westus3", Kind: sim.FaultServerError, Code: "AuthorizationFailed", Times: 1},
			call: usagesCall("westus3"), wantCode: "AuthorizationFailed", wantStatus: http.StatusForbidden, wantCalls: 1, wantFired: 1},
		{name: "SKUs fault for the filtered location", fault: sim.Fault{Op: OpSKUs, Region: "eastus", Kind: sim.FaultServerError, Code: "ServiceUnavailable", Times: 1},
			call: skusCall, wantCalls: 2, wantFired: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFront(t, frontConfig{})
			fault := tt.fault
			if err := f.world.AddFaults(&fault); err != nil {
				t.Fatal(err)
			}
			err := tt.call(t, f)
			if tt.wantCode == "" {
				if err != nil {
					t.Fatal(err)
				}
			} else {
				re := responseError(t, err, tt.wantCode, tt.wantStatus)
				if !strings.Contains(re.Error(), tt.wantText) {
					t.Fatalf("message: %v", re)
				}
			}
			if fault.Fired != tt.wantFired {
				t.Errorf("fault fired %d times, want %d", fault.Fired, tt.wantFired)
			}
			if n := f.world.Calls()["azure "+tt.fault.Op]; n != tt.wantCalls {
				t.Errorf("%d %s calls, want %d", n, tt.fault.Op, tt.wantCalls)
			}
		})
	}
}
