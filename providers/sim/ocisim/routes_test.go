// SPDX-License-Identifier: Apache-2.0

package ocisim

import (
	"context"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/oracle/oci-go-sdk/v65/common"
	"github.com/oracle/oci-go-sdk/v65/identity"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

func TestHosts(t *testing.T) {
	f := newFront(t, sim.Config{}, Options{PublicKeys: map[string]*rsa.PublicKey{keyID(): &testKey().PublicKey}})
	for _, c := range []struct {
		name, host, code, says string
	}{
		{"a host that is no OCI endpoint", "example.com", CodeNotAuthorizedOrNotFound, `"example.com"`},
		{"a service the front does not serve", "objectstorage.us-ashburn-1.oraclecloud.com", CodeNotAuthorizedOrNotFound, "objectstorage"},
		{"a region the world does not have", "iaas.mars-1.oraclecloud.com", CodeNotAuthorizedOrNotFound, `"mars-1"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := f.send(signed(t, testKey(), "GET", c.host, "/20160918/instances?compartmentId="+compartment, nil))
			wantAnswer(t, a, http.StatusNotFound, c.code)
			if !strings.Contains(a.err.Message, c.says) {
				t.Errorf("refused with %q, which does not name %s", a.err.Message, c.says)
			}
		})
	}

	// The front's own address is no OCI host: a client must keep the
	// regional one.
	resp, err := f.client.Get(f.origin.String() + "/20160918/instances")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body errorBody
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusNotFound || body.Code != CodeNotAuthorizedOrNotFound || !strings.Contains(body.Message, "is not an OCI endpoint") {
		t.Errorf("a request to the front's own address answered %d %+v", resp.StatusCode, body)
	}

	// A port on the host is the emulator's and changes nothing, though
	// the signature covers it as sent.
	if a := f.send(signed(t, testKey(), "GET", computeHost+":443", "/20160918/instances?compartmentId="+compartment, nil)); a.status != http.StatusOK {
		t.Errorf("the regional host with a port answered %d %s", a.status, a.err.Message)
	}
	// The identity client's host, as the SDK makes it, is served.
	if _, err := f.identity(frankfurt).ListAvailabilityDomains(context.Background(), identity.ListAvailabilityDomainsRequest{CompartmentId: common.String(compartment)}); err != nil {
		t.Errorf("the identity client of Frankfurt: %v", err)
	}
}

func TestRoutes(t *testing.T) {
	f := newFront(t, sim.Config{}, Options{})
	for _, c := range []struct {
		name, method, host, path string
		status                   int
		code                     string
	}{
		{"a path outside the API version", "GET", computeHost, "/20170101/instances", http.StatusNotFound, CodeNotFound},
		{"an unknown resource", "GET", computeHost, "/20160918/nothing", http.StatusNotFound, CodeNotFound},
		{"an instance without an id", "GET", computeHost, "/20160918/instances/", http.StatusNotFound, CodeNotFound},
		{"identity's resource on the compute host", "GET", computeHost, "/20160918/availabilityDomains", http.StatusNotFound, CodeNotFound},
		{"compute's resource on the identity host", "GET", "identity.us-ashburn-1.oci.oraclecloud.com", "/20160918/instances", http.StatusNotFound, CodeNotFound},
		{"a method the resource does not have", "PUT", computeHost, "/20160918/instances", http.StatusMethodNotAllowed, CodeMethodNotAllowed},
	} {
		t.Run(c.name, func(t *testing.T) {
			var body []byte
			if c.method == "PUT" {
				body = []byte("{}")
			}
			wantAnswer(t, f.send(signed(t, testKey(), c.method, c.host, c.path, body)), c.status, c.code)
		})
	}
}

// Odd bodies and parameters are answered as errors, never a panic (the
// front counts those; newFront's cleanup fails the test on any).
func TestOddInput(t *testing.T) {
	f := newFront(t, sim.Config{}, Options{})
	for _, body := range []string{"[]", "null", `{"metadata": []}`, `{"freeformTags": {"a": 1}}`, `{"sourceDetails": "image"}`, "{} {}", `"x"`} {
		a := f.send(signed(t, testKey(), "POST", computeHost, "/20160918/instances", []byte(body)))
		if a.status != http.StatusBadRequest {
			t.Errorf("the body %s answered %d %s", body, a.status, a.err.Message)
		}
	}
	big := `{"displayName": "` + strings.Repeat("x", maxBody) + `"}`
	wantAnswer(t, f.send(signed(t, testKey(), "POST", computeHost, "/20160918/instances", []byte(big))), http.StatusBadRequest, CodeCannotParseRequest)
	for _, query := range []string{"&limit=99999999999999999999", "&page=e30", "&sortOrder=SIDEWAYS", "&lifecycleState=running"} {
		a := f.send(signed(t, testKey(), "GET", computeHost, "/20160918/instances?compartmentId="+compartment+query, nil))
		if a.status >= 500 {
			t.Errorf("the query %s answered %d %s", query, a.status, a.err.Message)
		}
	}
}

// A front over the embedded catalog serves its OCI regions: each answers
// with its domains, and a domain's shapes are the catalog's there.
func TestEmbeddedCatalog(t *testing.T) {
	f := newFront(t, sim.Config{Catalog: catalog.Default()}, Options{})
	regions := 0
	for _, r := range f.world.Catalog().Regions {
		if r.Cloud != catalog.OCI {
			continue
		}
		regions++
		resp, err := f.identity(r.Name).ListAvailabilityDomains(context.Background(), identity.ListAvailabilityDomainsRequest{CompartmentId: common.String(compartment)})
		if err != nil {
			t.Fatalf("%s: %v", r.Name, err)
		}
		if len(resp.Items) != len(r.Zones) {
			t.Fatalf("%s answers %d domains, want its %d zones", r.Name, len(resp.Items), len(r.Zones))
		}
		for i, ad := range resp.Items {
			if *ad.Name != adName(r.Zones[i]) {
				t.Errorf("%s's domain %d is %s, want %s", r.Name, i, *ad.Name, adName(r.Zones[i]))
			}
		}
	}
	if regions == 0 {
		t.Fatal("the embedded catalog has no OCI regions")
	}
}
