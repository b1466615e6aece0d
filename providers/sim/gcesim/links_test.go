// SPDX-License-Identifier: Apache-2.0

package gcesim

import (
	"crypto/tls"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// Links are written under the base the request came on, or GCE's own
// when it came as to Google's front end.
func TestLinksFollowTheRequest(t *testing.T) {
	world, err := sim.New(sim.Config{})
	if err != nil {
		t.Fatal(err)
	}
	// An instance an older state kept with full URLs.
	_, err = world.Launch(sim.LaunchSpec{Cloud: cloud, Zone: zone, Scope: scope(project, zone), Name: "old", InstanceType: "g2-standard-4",
		Market: catalog.OnDemand, Properties: map[string]string{
			propNetwork:    apiBase + "projects/gpufleet-test/global/networks/default",
			propSubnetwork: apiBase + "projects/gpufleet-test/regions/us-central1/subnetworks/default",
		}})
	if err != nil {
		t.Fatal(err)
	}
	srv := New(world, Options{})
	tests := []struct {
		name, host string
		tls        bool
		base       string
	}{
		{"loopback", "127.0.0.1:8080", false, "http://127.0.0.1:8080/compute/v1/"},
		{"loopback over TLS", "localhost:8443", true, "https://localhost:8443/compute/v1/"},
		{"IPv6", "[::1]:8080", false, "http://[::1]:8080/compute/v1/"},
		{"Google's endpoint", "compute.googleapis.com", true, apiBase},
		{"Google's older endpoint", "www.googleapis.com:443", true, apiBase},
		{"no host", "", false, apiBase},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, "/compute/v1/projects/gpufleet-test/zones/us-central1-a/instances/old", nil)
			req.Host = tt.host
			if tt.tls {
				req.TLS = &tls.ConnectionState{}
			}
			rec := httptest.NewRecorder()
			srv.ServeHTTP(rec, req)
			var inst struct {
				SelfLink          string
				Zone              string
				NetworkInterfaces []struct{ Network, Subnetwork string }
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &inst); err != nil || rec.Code != 200 {
				t.Fatalf("answered %d %s", rec.Code, rec.Body)
			}
			if inst.SelfLink != tt.base+"projects/gpufleet-test/zones/us-central1-a/instances/old" || inst.Zone != tt.base+"projects/gpufleet-test/zones/us-central1-a" ||
				inst.NetworkInterfaces[0].Network != tt.base+"projects/gpufleet-test/global/networks/default" ||
				inst.NetworkInterfaces[0].Subnetwork != tt.base+"projects/gpufleet-test/regions/us-central1/subnetworks/default" {
				t.Errorf("links %+v, want them under %s", inst, tt.base)
			}
		})
	}
}

// References are read in every form GCE takes, under any of Google's
// hosts or the request's own, and refused under another host.
func TestParseRef(t *testing.T) {
	l := links{base: "http://127.0.0.1:9/compute/v1/", host: "127.0.0.1:9"}
	def := ref{project: "p", scope: "zones", location: "z", collection: "machineTypes"}
	tests := []struct {
		value string
		want  ref
		ok    bool
	}{
		{"t", ref{"p", "zones", "z", "machineTypes", "t"}, true},
		{"zones/y/machineTypes/t", ref{"p", "zones", "y", "machineTypes", "t"}, true},
		{"projects/q/zones/y/machineTypes/t", ref{"q", "zones", "y", "machineTypes", "t"}, true},
		{"https://compute.googleapis.com/compute/v1/projects/q/zones/y/machineTypes/t", ref{"q", "zones", "y", "machineTypes", "t"}, true},
		{"https://www.googleapis.com/compute/v1/projects/q/zones/y/machineTypes/t", ref{"q", "zones", "y", "machineTypes", "t"}, true},
		{"http://127.0.0.1:9/compute/v1/projects/q/zones/y/machineTypes/t", ref{"q", "zones", "y", "machineTypes", "t"}, true},
		{"http://127.0.0.2:9/compute/v1/projects/q/zones/y/machineTypes/t", def, false},
		{"https://compute.googleapis.com/compute/beta/projects/q/zones/y/machineTypes/t", def, false},
		{"ftp://compute.googleapis.com/compute/v1/projects/q/zones/y/machineTypes/t", def, false},
		{"zones/y/diskTypes/t", def, false},
		{"regions/y/machineTypes/t", def, false},
		{"zones/y/machineTypes/", def, false},
		{"projects//zones/y/machineTypes/t", def, false},
		{"", def, false},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			got, ok := l.parseRef(tt.value, def)
			if ok != tt.ok || (ok && got != tt.want) {
				t.Errorf("parseRef = %+v, %v; want %+v, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
	global := ref{project: "p", scope: "global", collection: "networks"}
	for value, want := range map[string]string{
		"n":                                      "projects/p/global/networks/n",
		"global/networks/n":                      "projects/p/global/networks/n",
		"projects/q/global/networks/n":           "projects/q/global/networks/n",
		apiBase + "projects/q/global/networks/n": "projects/q/global/networks/n",
	} {
		if got, ok := l.parseRef(value, global); !ok || got.path() != want {
			t.Errorf("parseRef(%q) = %s, %v; want %s", value, got.path(), ok, want)
		}
	}
}
