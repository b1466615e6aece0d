// SPDX-License-Identifier: Apache-2.0

package aws

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// quotasOf names, sorted, the quotas the catalog's offers in a region
// count against: what Capacity reads there.
func quotasOf(cat *catalog.Catalog, region string) []string {
	var out []string
	for _, o := range cat.Offers {
		if o.Cloud != catalog.AWS || o.Region != region {
			continue
		}
		for _, u := range cat.UsesOf(catalog.AWS, o.InstanceType, o.Market) {
			if !slices.Contains(out, u.Quota) {
				out = append(out, u.Quota)
			}
		}
	}
	slices.Sort(out)
	return out
}

// limits maps "region name" to limit for every quota of the regions, at
// limit but for those in set.
func limits(cat *catalog.Catalog, regions []string, limit int64, set map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for _, region := range regions {
		for _, q := range quotasOf(cat, region) {
			out[region+" "+q] = limit
		}
	}
	maps.Copy(out, set)
	return out
}

// TestCapacity reads quotas and offerings through the official clients
// from the emulator, whose one endpoint serves EC2 and Service Quotas.
func TestCapacity(t *testing.T) {
	const plenty = 1 << 20
	both := []string{"us-east-1", "us-west-2"}
	cat := catalog.Default()
	east, west := quotasOf(cat, "us-east-1"), quotasOf(cat, "us-west-2")
	for _, q := range []string{"L-417A185B", "L-7212CCBC", "L-DB2E81BA"} {
		if !slices.Contains(east, q) || !slices.Contains(west, q) {
			t.Fatalf("the catalog's offers in us-east-1 and us-west-2 count against %v and %v, not both against %s", east, west, q)
		}
	}
	failing := []string{}
	for _, name := range east {
		q, _ := cat.QuotaNamed(catalog.AWS, name)
		failing = append(failing, "aws: quota "+name+" ("+q.Description+") in us-east-1 left out: reading it failed (ServiceException: Something went wrong.)")
	}
	tests := []struct {
		name  string
		setup func(w *sim.World) error
		// wantQuotas maps "region name" to the limit read; a quota not
		// listed must be left out.
		wantQuotas map[string]int64
		// wantOfferings are the regions whose zones are read.
		wantOfferings []string
		// wantWarnings are substrings, one warning each, in order.
		wantWarnings []string
		// wantCalls bounds what reached the front.
		wantCalls map[string]int
	}{
		{
			name: "every quota and zone",
			setup: func(w *sim.World) error {
				w.SetQuota(catalog.AWS, "us-east-1", "L-417A185B", 384)
				w.SetQuota(catalog.AWS, "us-west-2", "L-DB2E81BA", 64)
				w.SetQuota(catalog.AWS, "us-west-2", "L-7212CCBC", 0)
				return nil
			},
			wantQuotas:    limits(cat, both, plenty, map[string]int64{"us-east-1 L-417A185B": 384, "us-west-2 L-7212CCBC": 0, "us-west-2 L-DB2E81BA": 64}),
			wantOfferings: both,
			wantCalls:     map[string]int{"aws GetServiceQuota": len(east) + len(west), "aws DescribeInstanceTypeOfferings": 2},
		},
		{
			name: "Service Quotas denied",
			setup: func(w *sim.World) error {
				return w.AddFaults(&sim.Fault{Cloud: "aws", Op: "GetServiceQuota", Kind: sim.FaultServerError, Code: "AccessDeniedException", Rate: 1})
			},
			wantQuotas:    map[string]int64{},
			wantOfferings: both,
			wantWarnings: []string{
				"aws: the credentials lack servicequotas:GetServiceQuota (AccessDeniedException: You do not have sufficient permission to perform this action.), so these are left out: " +
					"quotas " + strings.Join(east, ", ") + " in us-east-1; quotas " + strings.Join(west, ", ") + " in us-west-2",
			},
			// A denial is not retried.
			wantCalls: map[string]int{"aws GetServiceQuota": len(east) + len(west)},
		},
		{
			name: "Service Quotas denied in one region",
			setup: func(w *sim.World) error {
				return w.AddFaults(&sim.Fault{Cloud: "aws", Op: "GetServiceQuota", Region: "us-west-2", Kind: sim.FaultServerError, Code: "AccessDeniedException", Rate: 1})
			},
			wantQuotas:    limits(cat, []string{"us-east-1"}, plenty, nil),
			wantOfferings: both,
			wantWarnings:  []string{"servicequotas:GetServiceQuota (AccessDeniedException: You do not have sufficient permission to perform this action.), so these are left out: quotas " + strings.Join(west, ", ") + " in us-west-2"},
		},
		{
			name: "one quota denied",
			setup: func(w *sim.World) error {
				// IAM can scope the permission to quota ARNs; the emulator
				// stands that in by denying the first call alone.
				return w.AddFaults(&sim.Fault{Cloud: "aws", Op: "GetServiceQuota", Region: "us-east-1", Kind: sim.FaultServerError, Code: "AccessDeniedException", Times: 1})
			},
			wantQuotas: func() map[string]int64 {
				m := limits(cat, both, plenty, nil)
				delete(m, "us-east-1 "+east[0])
				return m
			}(),
			wantOfferings: both,
			wantWarnings:  []string{"left out: quotas " + east[0] + " in us-east-1"},
		},
		{
			name: "offerings denied",
			setup: func(w *sim.World) error {
				return w.AddFaults(&sim.Fault{Cloud: "aws", Op: "DescribeInstanceTypeOfferings", Kind: sim.FaultServerError, Code: "UnauthorizedOperation", Rate: 1})
			},
			wantQuotas: limits(cat, both, plenty, nil),
			wantWarnings: []string{
				"aws: the credentials lack ec2:DescribeInstanceTypeOfferings (UnauthorizedOperation: You are not authorized to perform this operation.), so these are left out: zone offerings in us-east-1; zone offerings in us-west-2",
			},
		},
		{
			name: "throttling ridden out",
			setup: func(w *sim.World) error {
				return w.AddFaults(
					&sim.Fault{Cloud: "aws", Op: "GetServiceQuota", Kind: sim.FaultThrottle, Times: 3},
					&sim.Fault{Cloud: "aws", Op: "DescribeInstanceTypeOfferings", Kind: sim.FaultThrottle, Times: 2},
				)
			},
			wantQuotas:    limits(cat, both, plenty, nil),
			wantOfferings: both,
			wantCalls:     map[string]int{"aws GetServiceQuota": len(east) + len(west) + 3, "aws DescribeInstanceTypeOfferings": 4},
		},
		{
			name: "Service Quotas failing",
			setup: func(w *sim.World) error {
				return w.AddFaults(&sim.Fault{Cloud: "aws", Op: "GetServiceQuota", Region: "us-east-1", Kind: sim.FaultServerError, Rate: 1})
			},
			wantQuotas:    limits(cat, []string{"us-west-2"}, plenty, nil),
			wantOfferings: both,
			wantWarnings:  failing,
		},
		{
			name: "offerings failing in one region",
			setup: func(w *sim.World) error {
				return w.AddFaults(&sim.Fault{Cloud: "aws", Op: "DescribeInstanceTypeOfferings", Region: "us-west-2", Kind: sim.FaultServerError, Rate: 1})
			},
			wantQuotas:    limits(cat, both, plenty, nil),
			wantOfferings: []string{"us-east-1"},
			wantWarnings:  []string{"aws: zone offerings in us-west-2 left out: reading them failed (InternalError: An internal error has occurred)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := emulator(t, cat)
			b.world.SetOffered(catalog.AWS, "us-east-1a", "p5.48xlarge", false)
			if err := tt.setup(b.world); err != nil {
				t.Fatal(err)
			}
			got, err := b.provider(t, cat).Capacity(context.Background())
			if err != nil {
				t.Fatal(err)
			}

			read := map[string]int64{}
			for _, q := range got.Quotas {
				read[q.Region+" "+q.Name] = q.Limit
				want, _ := cat.QuotaNamed(catalog.AWS, q.Name)
				if q.Cloud != catalog.AWS || q.Unit != catalog.VCPUs || q.Used != planner.UsedUnknown || q.Description != want.Description || q.Description == "" {
					t.Errorf("quota %+v", q)
				}
			}
			if !maps.Equal(read, tt.wantQuotas) {
				t.Errorf("quotas %v, want %v", read, tt.wantQuotas)
			}
			if !slices.IsSortedFunc(got.Quotas, func(a, b planner.Quota) int { return strings.Compare(a.Region+" "+a.Name, b.Region+" "+b.Name) }) {
				t.Error("quotas not sorted by region and name")
			}
			checkOfferings(t, cat, got.Offerings, tt.wantOfferings)

			if len(got.Warnings) != len(tt.wantWarnings) {
				t.Fatalf("warnings %q, want %d like %q", got.Warnings, len(tt.wantWarnings), tt.wantWarnings)
			}
			for i, w := range tt.wantWarnings {
				if !strings.Contains(got.Warnings[i], w) {
					t.Errorf("warning %q, want it to contain %q", got.Warnings[i], w)
				}
			}
			calls := b.world.Calls()
			for op, n := range tt.wantCalls {
				if calls[op] != n {
					t.Errorf("%s called %d times, want %d", op, calls[op], n)
				}
			}
		})
	}
}

// checkOfferings checks that the regions' zones, and only theirs, are
// read, each with what the catalog sells there, but for p5.48xlarge,
// which us-east-1a no longer offers.
func checkOfferings(t *testing.T, cat *catalog.Catalog, got []providers.ZoneOffering, regions []string) {
	t.Helper()
	var zones []string
	for _, region := range regions {
		r, _ := cat.Region(catalog.AWS, region)
		zones = append(zones, r.Zones...)
	}
	var gotZones []string
	for _, o := range got {
		gotZones = append(gotZones, o.Zone)
		if !slices.IsSorted(o.Types) {
			t.Errorf("%s: types %v not sorted", o.Zone, o.Types)
		}
		want := []string{}
		for _, of := range cat.Offers {
			if of.Cloud == catalog.AWS && of.Zone == o.Zone && !slices.Contains(want, of.InstanceType) && (of.Zone != "us-east-1a" || of.InstanceType != "p5.48xlarge") {
				want = append(want, of.InstanceType)
			}
		}
		slices.Sort(want)
		if !slices.Equal(o.Types, want) {
			t.Errorf("%s offers %v, want %v", o.Zone, o.Types, want)
		}
	}
	if !slices.Equal(gotZones, zones) {
		t.Errorf("zones %v, want %v", gotZones, zones)
	}
}

// TestCapacityCancelled shows that a cancelled context, and only that,
// fails the read, whether before it starts or while a call waits.
func TestCapacityCancelled(t *testing.T) {
	tests := []struct {
		name   string
		fault  *sim.Fault
		cancel func(context.CancelFunc)
	}{
		{name: "before the first call", cancel: func(cancel context.CancelFunc) { cancel() }},
		{
			name:  "while Service Quotas is slow",
			fault: &sim.Fault{Cloud: "aws", Op: "GetServiceQuota", Kind: sim.FaultLatency, Latency: sim.Duration(time.Minute), Rate: 1},
			cancel: func(cancel context.CancelFunc) {
				time.AfterFunc(50*time.Millisecond, cancel)
			},
		},
		{
			name:  "while EC2 is slow",
			fault: &sim.Fault{Cloud: "aws", Op: "DescribeInstanceTypeOfferings", Kind: sim.FaultLatency, Latency: sim.Duration(time.Minute), Rate: 1},
			cancel: func(cancel context.CancelFunc) {
				time.AfterFunc(50*time.Millisecond, cancel)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cat := catalog.Default()
			b := emulator(t, cat)
			if tt.fault != nil {
				if err := b.world.AddFaults(tt.fault); err != nil {
					t.Fatal(err)
				}
			}
			p := b.provider(t, cat)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			tt.cancel(cancel)
			got, err := p.Capacity(ctx)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("got %+v, %v; want context.Canceled", got, err)
			}
		})
	}
}

// TestCapacityBadInput runs the provider against a server that answers
// what AWS should not: each quota answer must be left out with its reason,
// the offerings of zones the catalog lacks ignored, and nothing invented.
func TestCapacityBadInput(t *testing.T) {
	const goodOfferings = `<item><instanceType>g4dn.xlarge</instanceType><locationType>availability-zone</locationType><location>us-east-1b</location></item>`
	tests := []struct {
		name string
		// quota is the Quota object answered for every code ("%s" is the
		// code asked for), or a whole body when it does not start with {.
		quota string
		// offerings are the items DescribeInstanceTypeOfferings answers.
		offerings    string
		wantLimit    int64 // for every quota, when wantReason is ""
		wantReason   string
		wantOffering []string // warnings about offerings
	}{
		{name: "a good answer", quota: `{"QuotaCode":"%s","Value":384.0,"Unit":"None","UsageMetric":{"MetricDimensions":{"Resource":"vCPU"}}}`, wantLimit: 384},
		{name: "a unit of vCPUs", quota: `{"QuotaCode":"%s","Value":8,"Unit":"vCPUs"}`, wantLimit: 8},
		{name: "a negative value", quota: `{"QuotaCode":"%s","Value":-5,"Unit":"None"}`, wantReason: "negative value, -5"},
		{name: "NaN", quota: `{"QuotaCode":"%s","Value":"NaN","Unit":"None"}`, wantReason: "a value of NaN"},
		{name: "infinity", quota: `{"QuotaCode":"%s","Value":"Infinity","Unit":"None"}`, wantReason: "a value of +Inf"},
		{name: "not whole", quota: `{"QuotaCode":"%s","Value":12.5,"Unit":"None"}`, wantReason: "12.5, not a whole number of vCPUs"},
		{name: "too large", quota: `{"QuotaCode":"%s","Value":1e300,"Unit":"None"}`, wantReason: "too large to be a limit"},
		{name: "no value", quota: `{"QuotaCode":"%s","Unit":"None"}`, wantReason: "without a value"},
		{name: "no quota", quota: `no quota`, wantReason: "without a quota"},
		{name: "another quota", quota: `{"QuotaCode":"L-1216C47A","Value":5,"Unit":"None"}`, wantReason: `answered for quota "L-1216C47A" instead`},
		{name: "a unit not of vCPUs", quota: `{"QuotaCode":"%s","Value":5,"Unit":"Bytes"}`, wantReason: `counts it in "Bytes", not in vCPUs`},
		{name: "a usage metric of instances", quota: `{"QuotaCode":"%s","Value":5,"Unit":"None","UsageMetric":{"MetricDimensions":{"Resource":"OnDemand"}}}`, wantReason: `measures its use in "OnDemand"`},
		{name: "an error reason", quota: `{"QuotaCode":"%s","Unit":"None","ErrorReason":{"ErrorCode":"DEPENDENCY_THROTTLING_ERROR","ErrorMessage":"slow down"}}`, wantReason: "could not read its value (DEPENDENCY_THROTTLING_ERROR: slow down)"},
		{name: "a wrong type", quota: `{"QuotaCode":"%s","Value":{"n":1},"Unit":"None"}`, wantReason: "reading it failed"},
		{name: "not JSON", quota: `<html>`, wantReason: "reading it failed"},
		{
			name:      "offerings of zones the catalog lacks",
			quota:     `{"QuotaCode":"%s","Value":1,"Unit":"None"}`,
			wantLimit: 1,
			offerings: goodOfferings +
				`<item><instanceType>g4dn.xlarge</instanceType><locationType>availability-zone</locationType><location>us-east-1z</location></item>` +
				`<item><instanceType>p5.48xlarge</instanceType><locationType>availability-zone</locationType><location>us-east-1z</location></item>` +
				`<item><instanceType>g4dn.xlarge</instanceType><locationType>availability-zone</locationType><location>us-west-2a</location></item>` +
				`<item><instanceType>g4dn.xlarge</instanceType><locationType>region</locationType><location>us-east-1</location></item>` +
				`<item><instanceType>x9.nonsense</instanceType><locationType>availability-zone</locationType><location>us-east-1a</location></item>` +
				`<item><locationType>availability-zone</locationType></item>`,
			wantOffering: []string{`"us-east-1z"`, `"us-west-2a"`, `"us-east-1" (region)`, `"" (availability-zone)`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(badAWS(tt.quota, cmp.Or(tt.offerings, goodOfferings)))
			t.Cleanup(srv.Close)
			b := backend{url: srv.URL, regions: []string{"us-east-1"}, image: "ami-0123456789abcdef0"}
			cat := catalog.Default()
			opts := b.options()
			opts.MaxAttempts = 1
			p, err := New(context.Background(), b.config(), cat, opts)
			if err != nil {
				t.Fatal(err)
			}
			got, err := p.Capacity(context.Background())
			if err != nil {
				t.Fatal(err)
			}

			var quotaWarnings, offeringWarnings []string
			for _, w := range got.Warnings {
				if strings.Contains(w, "quota") {
					quotaWarnings = append(quotaWarnings, w)
				} else {
					offeringWarnings = append(offeringWarnings, w)
				}
			}
			awsQuotas := quotasOf(cat, "us-east-1")
			if tt.wantReason == "" {
				if len(got.Quotas) != len(awsQuotas) || len(quotaWarnings) > 0 {
					t.Fatalf("quotas %+v, warnings %q; want all %d read", got.Quotas, quotaWarnings, len(awsQuotas))
				}
				for _, q := range got.Quotas {
					if q.Limit != tt.wantLimit {
						t.Errorf("%s: limit %d, want %d", q.Name, q.Limit, tt.wantLimit)
					}
				}
			} else {
				if len(got.Quotas) != 0 {
					t.Errorf("quotas %+v read from bad answers", got.Quotas)
				}
				if len(quotaWarnings) != len(awsQuotas) {
					t.Fatalf("warnings %q, want one per quota", quotaWarnings)
				}
				for i, w := range quotaWarnings {
					if !strings.Contains(w, awsQuotas[i]) || !strings.Contains(w, tt.wantReason) {
						t.Errorf("warning %q, want it to name %s and say %q", w, awsQuotas[i], tt.wantReason)
					}
				}
			}

			if len(offeringWarnings) != len(tt.wantOffering) {
				t.Fatalf("offering warnings %q, want %d", offeringWarnings, len(tt.wantOffering))
			}
			for i, w := range tt.wantOffering {
				if !strings.Contains(offeringWarnings[i], w) || !strings.Contains(offeringWarnings[i], "ignored") {
					t.Errorf("warning %q, want it to ignore %s", offeringWarnings[i], w)
				}
			}
			// Only what the answer says of the catalog's own zones counts.
			r, _ := cat.Region(catalog.AWS, "us-east-1")
			if len(got.Offerings) != len(r.Zones) {
				t.Fatalf("offerings %v, want one per zone of us-east-1", got.Offerings)
			}
			for _, o := range got.Offerings {
				want := []string{}
				if o.Zone == "us-east-1b" {
					want = []string{"g4dn.xlarge"}
				}
				if !slices.Equal(o.Types, want) {
					t.Errorf("%s offers %v, want %v", o.Zone, o.Types, want)
				}
			}
		})
	}
}

// badAWS answers every GetServiceQuota with quota and every
// DescribeInstanceTypeOfferings with offerings, as a broken endpoint might.
func badAWS(quota, offerings string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Amz-Target") == "ServiceQuotasV20190624.GetServiceQuota" {
			var in struct{ QuotaCode string }
			if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			w.Header().Set("Content-Type", "application/x-amz-json-1.1")
			switch {
			case quota == "no quota":
				fmt.Fprint(w, `{}`)
			case strings.HasPrefix(quota, "{"):
				fmt.Fprintf(w, `{"Quota":%s}`, strings.ReplaceAll(quota, "%s", in.QuotaCode))
			default:
				fmt.Fprint(w, quota)
			}
			return
		}
		if err := r.ParseForm(); err != nil || r.Form.Get("Action") != "DescribeInstanceTypeOfferings" {
			http.Error(w, "unexpected call", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
		fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><DescribeInstanceTypeOfferingsResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"><requestId>r</requestId><instanceTypeOfferingSet>%s</instanceTypeOfferingSet></DescribeInstanceTypeOfferingsResponse>`, offerings)
	})
}

// TestCapacityMoto reads through moto, whose offerings come from AWS's
// own listings and whose Service Quotas knows no EC2 quota: the offerings
// are read, and the quotas left out with a warning each.
func TestCapacityMoto(t *testing.T) {
	cat := catalog.Default()
	got, err := moto(t).provider(t, cat).Capacity(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Quotas) != 0 {
		t.Errorf("quotas %+v, from a Service Quotas without EC2's", got.Quotas)
	}
	awsQuotas := quotasOf(cat, "us-east-1")
	if len(got.Warnings) != len(awsQuotas) {
		t.Fatalf("warnings %q, want one per quota", got.Warnings)
	}
	for i, w := range got.Warnings {
		if !strings.Contains(w, awsQuotas[i]) || !strings.Contains(w, "NoSuchResourceException") {
			t.Errorf("warning %q", w)
		}
	}
	r, _ := cat.Region(catalog.AWS, "us-east-1")
	var zones []string
	g4dn := 0
	for _, o := range got.Offerings {
		zones = append(zones, o.Zone)
		if slices.Contains(o.Types, "g4dn.xlarge") {
			g4dn++
		}
	}
	if !slices.Equal(zones, r.Zones) {
		t.Errorf("zones %v, want %v", zones, r.Zones)
	}
	if g4dn == 0 {
		t.Errorf("no zone offers g4dn.xlarge: %v", got.Offerings)
	}
}
