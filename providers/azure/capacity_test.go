// SPDX-License-Identifier: Apache-2.0

package azure

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	azfake "github.com/Azure/azure-sdk-for-go/sdk/azcore/fake"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/providers/sim/armsim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

const a100 = "Standard_NC24ads_A100_v4"

// wantOfferings is what the catalog offers in the configured regions'
// zones, less the sizes a zone is said not to have.
func wantOfferings(cat *catalog.Catalog, regions []string, without map[string][]string) []providers.ZoneOffering {
	var out []providers.ZoneOffering
	for _, name := range regions {
		region, _ := cat.Region(catalog.Azure, name)
		for _, zone := range region.Zones {
			offering := providers.ZoneOffering{Zone: zone, Types: []string{}}
			for _, o := range cat.Offers {
				if o.Cloud == catalog.Azure && o.Region == name && !slices.Contains(offering.Types, o.InstanceType) && !slices.Contains(without[zone], o.InstanceType) {
					offering.Types = append(offering.Types, o.InstanceType)
				}
			}
			slices.Sort(offering.Types)
			out = append(out, offering)
		}
	}
	return out
}

// wantQuotaNames is the catalog's quotas the sizes of a region count
// against.
func wantQuotaNames(cat *catalog.Catalog, region string) []string {
	var out []string
	for _, o := range cat.Offers {
		if o.Cloud != catalog.Azure || o.Region != region {
			continue
		}
		for _, u := range cat.UsesOf(catalog.Azure, o.InstanceType, o.Market) {
			if !slices.Contains(out, u.Quota) {
				out = append(out, u.Quota)
			}
		}
	}
	slices.Sort(out)
	return out
}

func quotaNamed(quotas []planner.Quota, region, name string) (planner.Quota, bool) {
	for _, q := range quotas {
		if q.Region == region && q.Name == name {
			return q, true
		}
	}
	return planner.Quota{}, false
}

// Capacity reads, through the SDK against the emulator, each configured
// region's quotas with their limits and use, and each zone's sizes.
func TestCapacity(t *testing.T) {
	e := newEnv(t, envConfig{})
	cat := catalog.Default()
	t4Family, _ := catalog.AzureFamily(t4)
	e.world.SetQuota(catalog.Azure, "eastus", t4Family, 16)
	e.world.SetQuota(catalog.Azure, "eastus", catalog.AzureCores, 100)
	e.world.SetQuota(catalog.Azure, "westus3", catalog.AzureCores, 50)
	e.world.SetOffered(catalog.Azure, "eastus-3", t4, false)
	for _, z := range []string{"westus3-1", "westus3-2", "westus3-3"} {
		e.world.SetOffered(catalog.Azure, z, a100, false)
	}
	ctx := context.Background()
	for _, req := range []providers.CreateRequest{request(onDemandT4, "demo", 0), request(spotT4, "demo", 1)} {
		if _, err := e.provider.Create(ctx, req); err != nil {
			t.Fatal(err)
		}
	}

	got, err := e.provider.Capacity(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Warnings) != 0 {
		t.Errorf("warnings %q", got.Warnings)
	}
	var names []string
	for _, q := range got.Quotas {
		names = append(names, q.Region+"/"+q.Name)
	}
	var wantNames []string
	for _, r := range []string{"eastus", "westus3"} {
		for _, n := range wantQuotaNames(cat, r) {
			wantNames = append(wantNames, r+"/"+n)
		}
	}
	if !slices.Equal(names, wantNames) {
		t.Errorf("quotas %v, want %v, sorted by region and name", names, wantNames)
	}
	unlimited := int64(1 << 20)
	tests := []struct {
		region, name string
		limit, used  int64
	}{
		{"eastus", t4Family, 16, 4},
		{"eastus", catalog.AzureCores, 100, 4},
		{"eastus", catalog.AzureLowPriorityCores, unlimited, 4},
		{"westus3", catalog.AzureCores, 50, 0},
		{"westus3", t4Family, unlimited, 0},
	}
	for _, tt := range tests {
		q, ok := quotaNamed(got.Quotas, tt.region, tt.name)
		if !ok {
			t.Errorf("%s/%s not read", tt.region, tt.name)
			continue
		}
		known, _ := cat.QuotaNamed(catalog.Azure, tt.name)
		want := planner.Quota{Cloud: catalog.Azure, Region: tt.region, Name: tt.name, Description: known.Description, Unit: catalog.VCPUs, Limit: tt.limit, Used: tt.used}
		if q != want {
			t.Errorf("%s/%s = %+v, want %+v", tt.region, tt.name, q, want)
		}
	}
	want := wantOfferings(cat, []string{"eastus", "westus3"}, map[string][]string{
		"eastus-3": {t4}, "westus3-1": {a100}, "westus3-2": {a100}, "westus3-3": {a100},
	})
	if !equalOfferings(got.Offerings, want) {
		t.Errorf("offerings\n%v\nwant\n%v", got.Offerings, want)
	}
}

func equalOfferings(a, b []providers.ZoneOffering) bool {
	return slices.EqualFunc(a, b, func(x, y providers.ZoneOffering) bool { return x.Zone == y.Zone && slices.Equal(x.Types, y.Types) })
}

// What cannot be read is left out with a warning that says why, naming
// the permission a denial lacked, and the rest is still read.
func TestCapacityWarnings(t *testing.T) {
	denied := func(op, region string, times int) sim.Fault {
		return sim.Fault{Cloud: catalog.Azure, Op: op, Region: region, Kind: sim.FaultServerError, Code: "AuthorizationFailed", Times: times}
	}
	noRetry := policy.RetryOptions{MaxRetries: -1}
	both := []string{"eastus", "westus3"}
	tests := []struct {
		name         string
		faults       []sim.Fault
		retry        *policy.RetryOptions
		wantWarnings []string // one substring per warning, in order
		quotaRegions []string
		offerRegions []string
	}{
		{name: "usages denied in one region", faults: []sim.Fault{denied(armsim.OpUsages, "eastus", 1)},
			wantWarnings: []string{"azure: quotas in eastus not read: the credential lacks permission Microsoft.Compute/locations/usages/read (AuthorizationFailed)"},
			quotaRegions: []string{"westus3"}, offerRegions: both},
		{name: "usages denied everywhere, one warning", faults: []sim.Fault{denied(armsim.OpUsages, "", 10)},
			wantWarnings: []string{"azure: quotas in eastus, westus3 not read: the credential lacks permission Microsoft.Compute/locations/usages/read"},
			offerRegions: both},
		{name: "SKUs denied", faults: []sim.Fault{denied(armsim.OpSKUs, "", 10)},
			wantWarnings: []string{"azure: zone offerings in eastus, westus3 not read: the credential lacks permission Microsoft.Compute/skus/read (AuthorizationFailed)"},
			quotaRegions: both},
		{name: "both denied", faults: []sim.Fault{denied(armsim.OpSKUs, "", 10), denied(armsim.OpUsages, "", 10)},
			wantWarnings: []string{"Microsoft.Compute/locations/usages/read", "Microsoft.Compute/skus/read"}},
		{name: "a token refused everywhere, one warning", retry: &noRetry,
			faults:       []sim.Fault{{Cloud: catalog.Azure, Op: armsim.OpUsages, Kind: sim.FaultServerError, Code: "InvalidAuthenticationToken", Times: 10}},
			wantWarnings: []string{"azure: quotas in eastus, westus3 not read: auth: The access token is invalid. (InvalidAuthenticationToken)"},
			offerRegions: both},
		{name: "throttling is retried", faults: []sim.Fault{{Cloud: catalog.Azure, Op: armsim.OpUsages, Kind: sim.FaultThrottle, Times: 1}},
			quotaRegions: both, offerRegions: both},
		{name: "a server error without retries", retry: &noRetry,
			faults:       []sim.Fault{{Cloud: catalog.Azure, Op: armsim.OpSKUs, Region: "westus3", Kind: sim.FaultServerError, Code: "ServiceUnavailable", Times: 1}},
			wantWarnings: []string{"azure: zone offerings in westus3 not read: unavailable: The service is currently unavailable. Please try again later. (ServiceUnavailable)"},
			quotaRegions: both, offerRegions: []string{"eastus"}},
		{name: "throttled past the retries", retry: &noRetry,
			faults:       []sim.Fault{{Cloud: catalog.Azure, Op: armsim.OpUsages, Region: "eastus", Kind: sim.FaultThrottle, Times: 1}},
			wantWarnings: []string{"azure: quotas in eastus not read: throttled: The request is being throttled"},
			quotaRegions: []string{"westus3"}, offerRegions: both},
	}
	cat := catalog.Default()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, envConfig{retry: tt.retry})
			for _, f := range tt.faults {
				if err := e.world.AddFaults(&f); err != nil {
					t.Fatal(err)
				}
			}
			got, err := e.provider.Capacity(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Warnings) != len(tt.wantWarnings) {
				t.Fatalf("warnings %q, want %d", got.Warnings, len(tt.wantWarnings))
			}
			for i, w := range tt.wantWarnings {
				if !strings.Contains(got.Warnings[i], w) {
					t.Errorf("warning %q lacks %q", got.Warnings[i], w)
				}
			}
			var regions []string
			for _, q := range got.Quotas {
				if !slices.Contains(regions, q.Region) {
					regions = append(regions, q.Region)
				}
			}
			if !slices.Equal(regions, tt.quotaRegions) {
				t.Errorf("quotas read in %v, want %v", regions, tt.quotaRegions)
			}
			if want := wantOfferings(cat, tt.offerRegions, nil); !equalOfferings(got.Offerings, want) {
				t.Errorf("offerings %v, want %v", got.Offerings, want)
			}
		})
	}
}

// Only a cancelled context fails Capacity: before it starts, or while a
// call waits.
func TestCapacityCancelled(t *testing.T) {
	tests := []struct {
		name  string
		fault *sim.Fault
		ctx   func() (context.Context, context.CancelFunc)
		want  error
	}{
		{name: "cancelled before", ctx: func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx, cancel
		}, want: context.Canceled},
		{name: "deadline during the usages call",
			fault: &sim.Fault{Cloud: catalog.Azure, Op: armsim.OpUsages, Kind: sim.FaultLatency, Latency: sim.Duration(5 * time.Second), Times: 1},
			ctx: func() (context.Context, context.CancelFunc) {
				return context.WithTimeout(context.Background(), 100*time.Millisecond)
			},
			want: context.DeadlineExceeded},
		{name: "deadline during the SKUs call",
			fault: &sim.Fault{Cloud: catalog.Azure, Op: armsim.OpSKUs, Kind: sim.FaultLatency, Latency: sim.Duration(5 * time.Second), Times: 1},
			ctx: func() (context.Context, context.CancelFunc) {
				return context.WithTimeout(context.Background(), 100*time.Millisecond)
			},
			want: context.DeadlineExceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, envConfig{})
			if tt.fault != nil {
				if err := e.world.AddFaults(tt.fault); err != nil {
					t.Fatal(err)
				}
			}
			ctx, cancel := tt.ctx()
			defer cancel()
			start := time.Now()
			got, err := e.provider.Capacity(ctx)
			if !errors.Is(err, tt.want) {
				t.Fatalf("got %v (%+v), want %v", err, got, tt.want)
			}
			if took := time.Since(start); took > 3*time.Second {
				t.Errorf("took %s after the context ended", took)
			}
		})
	}
}

// craftedARM answers the usages and SKUs of eastus with whatever a test
// writes, so that Capacity meets what the emulator never sends.
type craftedARM struct {
	usages, skus string
}

// eastusUsages is a well-formed usage list with every quota the catalog's
// eastus sizes count against, each edited by edit when it is given.
func eastusUsages(edit func(name string, u map[string]any) map[string]any) []map[string]any {
	var out []map[string]any
	for _, name := range wantQuotaNames(catalog.Default(), "eastus") {
		u := map[string]any{"unit": "Count", "currentValue": 3, "limit": 100, "name": map[string]any{"value": name, "localizedValue": name}}
		if edit != nil {
			u = edit(name, u)
		}
		if u != nil {
			out = append(out, u)
		}
	}
	return out
}

// eastusSKUs is a well-formed SKU list with every catalog size of eastus
// in zones 1 to 3, each edited by edit when it is given.
func eastusSKUs(edit func(name string, s map[string]any) map[string]any) []map[string]any {
	seen := map[string]bool{}
	var out []map[string]any
	for _, o := range catalog.Default().Offers {
		if o.Cloud != catalog.Azure || o.Region != "eastus" || seen[o.InstanceType] {
			continue
		}
		seen[o.InstanceType] = true
		s := map[string]any{
			"resourceType": "virtualMachines", "name": o.InstanceType, "locations": []string{"eastus"},
			"locationInfo": []any{map[string]any{"location": "eastus", "zones": []string{"1", "2", "3"}}},
			"restrictions": []any{},
		}
		if edit != nil {
			s = edit(o.InstanceType, s)
		}
		if s != nil {
			out = append(out, s)
		}
	}
	return out
}

func listJSON(t *testing.T, items []map[string]any) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"value": items})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func (c craftedARM) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body := c.skus
	if strings.HasSuffix(r.URL.Path, "/usages") {
		body = c.usages
	}
	// {{self}} is a next link back to the same page, for a listing that
	// never ends.
	self := "http://" + r.Host + r.URL.RequestURI()
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, strings.ReplaceAll(body, "{{self}}", self))
}

// Answers that cannot be read are warned about and left out, never
// guessed, and never panic; usages of quotas the catalog does not need are
// skipped without a word.
func TestCapacityBadInput(t *testing.T) {
	t4Family, _ := catalog.AzureFamily(t4)
	a100Family, _ := catalog.AzureFamily(a100)
	setUsage := func(quota, key string, v any) func(string, map[string]any) map[string]any {
		return func(name string, u map[string]any) map[string]any {
			if name == quota {
				if v == nil {
					delete(u, key)
				} else {
					u[key] = v
				}
			}
			return u
		}
	}
	setSKU := func(size, key string, v any) func(string, map[string]any) map[string]any {
		return func(name string, s map[string]any) map[string]any {
			if name == size {
				s[key] = v
			}
			return s
		}
	}
	zoneRestriction := func(zones ...string) []any {
		return []any{map[string]any{"type": "Zone", "values": []string{"eastus"}, "reasonCode": "NotAvailableForSubscription",
			"restrictionInfo": map[string]any{"locations": []string{"eastus"}, "zones": zones}}}
	}
	all := wantQuotaNames(catalog.Default(), "eastus")
	except := func(names ...string) []string {
		return slices.DeleteFunc(slices.Clone(all), func(n string) bool { return slices.Contains(names, n) })
	}
	full := wantOfferings(catalog.Default(), []string{"eastus"}, nil)
	tests := []struct {
		name         string
		usages       string
		skus         string
		wantQuotas   []string // names read, with limit 100 and use 3
		wantOffers   []providers.ZoneOffering
		wantWarnings []string
	}{
		{name: "well formed", wantQuotas: all, wantOffers: full},
		{name: "usages the catalog does not need", usages: listJSON(t, append(eastusUsages(nil),
			map[string]any{"unit": "Count", "currentValue": -5, "limit": -1, "name": map[string]any{"value": "standardDSv3Family"}},
			map[string]any{"unit": "Bytes", "name": map[string]any{"value": "PremiumDiskCount"}},
			map[string]any{"unit": "Count", "currentValue": 1, "limit": 1},
			nil)),
			wantQuotas: all, wantOffers: full},
		{name: "negative limit", usages: listJSON(t, eastusUsages(setUsage(catalog.AzureCores, "limit", -1))),
			wantQuotas: except(catalog.AzureCores), wantOffers: full, wantWarnings: []string{"quota cores in eastus not read: its limit -1 is negative"}},
		{name: "negative use", usages: listJSON(t, eastusUsages(setUsage(t4Family, "currentValue", -3))),
			wantQuotas: except(t4Family), wantOffers: full, wantWarnings: []string{"its current value -3 is negative"}},
		{name: "no limit", usages: listJSON(t, eastusUsages(setUsage(catalog.AzureLowPriorityCores, "limit", nil))),
			wantQuotas: except(catalog.AzureLowPriorityCores), wantOffers: full, wantWarnings: []string{"quota lowPriorityCores in eastus not read: it has no limit"}},
		{name: "no current value", usages: listJSON(t, eastusUsages(setUsage(catalog.AzureCores, "currentValue", nil))),
			wantQuotas: except(catalog.AzureCores), wantOffers: full, wantWarnings: []string{"it has no current value"}},
		{name: "another unit", usages: listJSON(t, eastusUsages(setUsage(catalog.AzureCores, "unit", "Percent"))),
			wantQuotas: except(catalog.AzureCores), wantOffers: full, wantWarnings: []string{`its unit is "Percent", not Count`}},
		{name: "a needed usage missing", usages: listJSON(t, eastusUsages(func(name string, u map[string]any) map[string]any {
			if name == a100Family {
				return nil
			}
			return u
		})), wantQuotas: except(a100Family), wantOffers: full,
			wantWarnings: []string{"quota " + a100Family + " in eastus not read: Compute lists no usage of that name"}},
		{name: "a usage name in another case", usages: listJSON(t, eastusUsages(func(name string, u map[string]any) map[string]any {
			u["name"] = map[string]any{"value": strings.ToUpper(name)}
			return u
		})), wantQuotas: all, wantOffers: full},
		{name: "a usage listed twice, differently", usages: listJSON(t, append(eastusUsages(nil),
			map[string]any{"unit": "Count", "currentValue": 9, "limit": 100, "name": map[string]any{"value": catalog.AzureCores}})),
			wantQuotas: except(catalog.AzureCores), wantOffers: full, wantWarnings: []string{"quota cores in eastus not read: listed twice"}},
		{name: "a usage listed twice, alike", usages: listJSON(t, append(eastusUsages(nil),
			map[string]any{"unit": "Count", "currentValue": 3, "limit": 100, "name": map[string]any{"value": catalog.AzureCores}})),
			wantQuotas: all, wantOffers: full},
		{name: "a current value that is not a number", usages: listJSON(t, eastusUsages(setUsage(catalog.AzureCores, "currentValue", "3"))),
			wantOffers: full, wantWarnings: []string{"azure: quotas in eastus not read:"}},
		{name: "usages that are not JSON", usages: `{"value": [`, wantOffers: full, wantWarnings: []string{"azure: quotas in eastus not read:"}},
		{name: "usages without end", usages: `{"value": [], "nextLink": "{{self}}"}`, wantOffers: full,
			wantWarnings: []string{"azure: quotas in eastus not read: the listing ran past 100 pages"}},
		{name: "a zone the catalog does not have", skus: listJSON(t, eastusSKUs(setSKU(t4, "locationInfo", []any{map[string]any{"location": "eastus", "zones": []string{"1", "4"}}}))),
			wantQuotas: all, wantOffers: wantOfferings(catalog.Default(), []string{"eastus"}, map[string][]string{"eastus-2": {t4}, "eastus-3": {t4}}),
			wantWarnings: []string{`Compute names zone "4" of eastus, which the catalog does not have; ignored`}},
		{name: "a zone restriction", skus: listJSON(t, eastusSKUs(setSKU(t4, "restrictions", zoneRestriction("2", "3")))),
			wantQuotas: all, wantOffers: wantOfferings(catalog.Default(), []string{"eastus"}, map[string][]string{"eastus-2": {t4}, "eastus-3": {t4}})},
		{name: "a location restriction", skus: listJSON(t, eastusSKUs(setSKU(t4, "restrictions", []any{map[string]any{"type": "Location", "values": []string{"eastus"}, "reasonCode": "NotAvailableForSubscription"}}))),
			wantQuotas: all, wantOffers: wantOfferings(catalog.Default(), []string{"eastus"}, map[string][]string{"eastus-1": {t4}, "eastus-2": {t4}, "eastus-3": {t4}})},
		{name: "a restriction elsewhere", skus: listJSON(t, eastusSKUs(setSKU(t4, "restrictions", []any{map[string]any{"type": "Location", "values": []string{"westus"}, "restrictionInfo": map[string]any{"locations": []string{"westus"}}}}))),
			wantQuotas: all, wantOffers: full},
		{name: "a zone restriction naming no zone", skus: listJSON(t, eastusSKUs(setSKU(t4, "restrictions", zoneRestriction()))),
			wantQuotas: all, wantWarnings: []string{"zone offerings in eastus not read: SKU " + t4 + " has a Zone restriction that names no zone"}},
		{name: "a restriction naming no location", skus: listJSON(t, eastusSKUs(setSKU(t4, "restrictions", []any{map[string]any{"type": "Location"}}))),
			wantQuotas: all, wantWarnings: []string{"has a Location restriction that names no location"}},
		{name: "a restriction of an unknown type", skus: listJSON(t, eastusSKUs(setSKU(t4, "restrictions", []any{map[string]any{"type": "Galaxy", "values": []string{"eastus"}}}))),
			wantQuotas: all, wantWarnings: []string{`has a restriction of unknown type "Galaxy"`}},
		{name: "a size not listed", skus: listJSON(t, eastusSKUs(func(name string, s map[string]any) map[string]any {
			if name == t4 {
				return nil
			}
			return s
		})), wantQuotas: all, wantOffers: wantOfferings(catalog.Default(), []string{"eastus"}, map[string][]string{"eastus-1": {t4}, "eastus-2": {t4}, "eastus-3": {t4}})},
		{name: "a size listed twice, where both agree", skus: listJSON(t, append(eastusSKUs(nil),
			map[string]any{"resourceType": "virtualMachines", "name": t4, "locationInfo": []any{map[string]any{"location": "eastus", "zones": []string{"1"}}}})),
			wantQuotas: all, wantOffers: wantOfferings(catalog.Default(), []string{"eastus"}, map[string][]string{"eastus-2": {t4}, "eastus-3": {t4}})},
		{name: "sizes in lower case, other resource types and nulls", skus: listJSON(t, append(eastusSKUs(func(name string, s map[string]any) map[string]any {
			s["name"] = strings.ToLower(name)
			return s
		}), map[string]any{"resourceType": "disks", "name": t4}, map[string]any{"locationInfo": []any{nil}, "restrictions": []any{nil}}, nil)),
			wantQuotas: all, wantOffers: full},
		{name: "a SKU list that is an array", skus: `[]`, wantQuotas: all, wantWarnings: []string{"azure: zone offerings in eastus not read:"}},
		{name: "SKUs without end", skus: `{"value": [], "nextLink": "{{self}}"}`, wantQuotas: all,
			wantWarnings: []string{"azure: zone offerings in eastus not read: the listing ran past 100 pages"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			arm := craftedARM{usages: tt.usages, skus: tt.skus}
			if arm.usages == "" {
				arm.usages = listJSON(t, eastusUsages(nil))
			}
			if arm.skus == "" {
				arm.skus = listJSON(t, eastusSKUs(nil))
			}
			ts := httptest.NewServer(arm)
			defer ts.Close()
			cfg := testConfig()
			cfg.Regions = []string{"eastus"}
			p, err := New(context.Background(), cfg, catalog.Default(), Options{
				Endpoint: ts.URL, Credential: &azfake.TokenCredential{}, Retry: policy.RetryOptions{MaxRetries: -1},
			})
			if err != nil {
				t.Fatal(err)
			}
			got, err := p.Capacity(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Warnings) != len(tt.wantWarnings) {
				t.Fatalf("warnings %q, want %d", got.Warnings, len(tt.wantWarnings))
			}
			for i, w := range tt.wantWarnings {
				if !strings.Contains(got.Warnings[i], w) {
					t.Errorf("warning %q lacks %q", got.Warnings[i], w)
				}
			}
			var names []string
			for _, q := range got.Quotas {
				names = append(names, q.Name)
				if q.Limit != 100 || q.Used != 3 || q.Region != "eastus" || q.Unit != catalog.VCPUs {
					t.Errorf("quota %+v", q)
				}
			}
			if !slices.Equal(names, tt.wantQuotas) {
				t.Errorf("quotas %v, want %v", names, tt.wantQuotas)
			}
			if !equalOfferings(got.Offerings, tt.wantOffers) {
				t.Errorf("offerings %v, want %v", got.Offerings, tt.wantOffers)
			}
		})
	}
}
