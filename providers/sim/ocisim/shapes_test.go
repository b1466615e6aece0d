// SPDX-License-Identifier: Apache-2.0

package ocisim

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/oracle/oci-go-sdk/v65/common"
	"github.com/oracle/oci-go-sdk/v65/core"
	"github.com/oracle/oci-go-sdk/v65/identity"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

func TestAvailabilityDomains(t *testing.T) {
	f := newFront(t, sim.Config{}, Options{})
	resp, err := f.identity(ashburn).ListAvailabilityDomains(context.Background(), identity.ListAvailabilityDomainsRequest{CompartmentId: common.String(compartment)})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	ids := map[string]bool{}
	for _, ad := range resp.Items {
		names = append(names, *ad.Name)
		if !strings.HasPrefix(*ad.Id, "ocid1.availabilitydomain.oc1..") || ids[*ad.Id] {
			t.Errorf("the domain %s has the id %s", *ad.Name, *ad.Id)
		}
		ids[*ad.Id] = true
		if *ad.CompartmentId != tenancy {
			t.Errorf("the domain %s belongs to %s, want the tenancy", *ad.Name, *ad.CompartmentId)
		}
	}
	if got := strings.Join(names, " "); got != ad1+" "+ad2+" "+ad3 {
		t.Fatalf("Ashburn's domains are %s, want its three zones, in the catalog's order", got)
	}
	// A domain's id is the same on every run and for every tenancy.
	if *resp.Items[0].Id != adID("US-ASHBURN-AD-1") {
		t.Errorf("the first domain's id is %s", *resp.Items[0].Id)
	}

	wantAnswer(t, f.send(signed(t, testKey(), "GET", "identity.us-ashburn-1.oci.oraclecloud.com", "/20160918/availabilityDomains", nil)),
		http.StatusBadRequest, CodeMissingParameter)
	// The identity endpoint is served under its older name too.
	if a := f.send(signed(t, testKey(), "GET", "identity.us-ashburn-1.oraclecloud.com", "/20160918/availabilityDomains?compartmentId="+compartment, nil)); a.status != http.StatusOK {
		t.Errorf("identity.us-ashburn-1.oraclecloud.com answered %d %s", a.status, a.err.Message)
	}
}

// listShapes pages through ListShapes in a domain, or the whole region
// for "", and returns the shapes by name.
func (f *front) listShapes(ad string, limit int) map[string]core.Shape {
	f.t.Helper()
	req := core.ListShapesRequest{CompartmentId: common.String(compartment), Limit: common.Int(limit)}
	if ad != "" {
		req.AvailabilityDomain = common.String(ad)
	}
	out := map[string]core.Shape{}
	var order []string
	for pages := 0; ; pages++ {
		resp, err := f.compute().ListShapes(context.Background(), req)
		if err != nil {
			f.t.Fatal(err)
		}
		if len(resp.Items) > limit {
			f.t.Fatalf("a page of %d holds %d shapes", limit, len(resp.Items))
		}
		for _, s := range resp.Items {
			if _, ok := out[*s.Shape]; ok {
				f.t.Errorf("the shape %s is listed twice", *s.Shape)
			}
			out[*s.Shape] = s
			order = append(order, *s.Shape)
		}
		if resp.OpcNextPage == nil || pages > 10 {
			break
		}
		req.Page = resp.OpcNextPage
	}
	for i := 1; i < len(order); i++ {
		if order[i-1] > order[i] {
			f.t.Errorf("the shapes are listed as %v, not by name", order)
		}
	}
	return out
}

func shapeNames(shapes map[string]core.Shape) string {
	var names []string
	for _, n := range []string{a100, a10} {
		if _, ok := shapes[n]; ok {
			names = append(names, n)
		}
	}
	return strings.Join(names, " ")
}

func TestShapes(t *testing.T) {
	f := newFront(t, sim.Config{}, Options{})
	shapes := f.listShapes(ad1, 1)
	if got := shapeNames(shapes); got != a100+" "+a10 || len(shapes) != 2 {
		t.Fatalf("the first domain offers %v, want %s and %s", shapes, a100, a10)
	}
	s := shapes[a100]
	if *s.Gpus != 8 || *s.Ocpus != 128 || *s.MemoryInGBs != 2048 || !strings.Contains(*s.GpuDescription, "A100") || *s.IsFlexible {
		t.Errorf("%s is described as %v", a100, s)
	}
	if got := shapeNames(f.listShapes(ad2, 50)); got != a10 {
		t.Errorf("the second domain offers %q, want %s alone", got, a10)
	}
	if got := shapeNames(f.listShapes(ad3, 50)); got != "" {
		t.Errorf("the third domain offers %q, want nothing", got)
	}
	if got := shapeNames(f.listShapes("", 50)); got != a100+" "+a10 {
		t.Errorf("the region offers %q, want both shapes once", got)
	}

	// A domain that no longer offers a shape does not list it.
	f.world.SetOffered(catalog.OCI, "US-ASHBURN-AD-1", a100, false)
	if got := shapeNames(f.listShapes(ad1, 50)); got != a10 {
		t.Errorf("after the A100 shape is withdrawn the first domain offers %q", got)
	}

	for _, c := range []struct{ name, query, code string }{
		{"no compartment", "", CodeMissingParameter},
		{"an unknown domain", "?compartmentId=" + compartment + "&availabilityDomain=gpuf:US-ASHBURN-AD-9", CodeInvalidParameter},
		{"a domain without the tenancy's prefix", "?compartmentId=" + compartment + "&availabilityDomain=US-ASHBURN-AD-1", CodeInvalidParameter},
	} {
		t.Run(c.name, func(t *testing.T) {
			wantAnswer(t, f.send(signed(t, testKey(), "GET", computeHost, "/20160918/shapes"+c.query, nil)), http.StatusBadRequest, c.code)
		})
	}
}
