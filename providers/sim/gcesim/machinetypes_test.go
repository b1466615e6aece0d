// SPDX-License-Identifier: Apache-2.0

package gcesim

import (
	"context"
	"errors"
	"slices"
	"testing"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/api/iterator"
	"google.golang.org/protobuf/proto"

	"github.com/gpufleet/gpufleet/providers/sim"
)

// zoneTypes lists a zone's machine types through the SDK's iterator, in the
// order received.
func (f *fixture) zoneTypes(t *testing.T, req *computepb.ListMachineTypesRequest) []*computepb.MachineType {
	t.Helper()
	var out []*computepb.MachineType
	it := f.types.List(context.Background(), req)
	for {
		mt, err := it.Next()
		if errors.Is(err, iterator.Done) {
			return out
		}
		if err != nil {
			t.Fatalf("machineTypes.list %s: %v", req.GetZone(), err)
		}
		out = append(out, mt)
	}
}

// aggregatedTypes lists every zone's machine type names through the SDK.
func (f *fixture) aggregatedTypes(t *testing.T, pageSize uint32) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	req := &computepb.AggregatedListMachineTypesRequest{Project: project}
	if pageSize > 0 {
		req.MaxResults = proto.Uint32(pageSize)
	}
	it := f.types.AggregatedList(context.Background(), req)
	for {
		pair, err := it.Next()
		if errors.Is(err, iterator.Done) {
			return out
		}
		if err != nil {
			t.Fatalf("machineTypes.aggregatedList: %v", err)
		}
		for _, mt := range pair.Value.GetMachineTypes() {
			if want := "zones/" + mt.GetZone(); pair.Key != want {
				t.Errorf("machine type %s of %s listed under %s", mt.GetName(), mt.GetZone(), pair.Key)
			}
			out[mt.GetZone()] = append(out[mt.GetZone()], mt.GetName())
		}
		if len(pair.Value.GetMachineTypes()) == 0 && pair.Value.GetWarning().GetCode() != "NO_RESULTS_ON_PAGE" {
			t.Errorf("%s has neither machine types nor a NO_RESULTS_ON_PAGE warning", pair.Key)
		}
	}
}

func names(types []*computepb.MachineType) []string {
	var out []string
	for _, mt := range types {
		out = append(out, mt.GetName())
	}
	return out
}

func TestMachineTypesFollowOfferings(t *testing.T) {
	f := newFixture(t, sim.Config{}, Options{})
	// soldIn is what the catalog sells in a zone, on either market: its
	// zone's offers and its region's.
	soldIn := func(zone string) []string {
		t.Helper()
		region, ok := f.world.ZoneRegion(cloud, zone)
		if !ok {
			t.Fatalf("no zone %s", zone)
		}
		var out []string
		for _, o := range f.world.Catalog().Offers {
			if o.Cloud == cloud && o.Region == region && (o.Zone == "" || o.Zone == zone) && !slices.Contains(out, o.InstanceType) {
				out = append(out, o.InstanceType)
			}
		}
		slices.Sort(out)
		if len(out) < 2 {
			t.Fatalf("the catalog sells %v in %s, want a zone with more than one type", out, zone)
		}
		return out
	}
	f.world.SetOffered("gcp", "us-central1-a", "a3-highgpu-8g", false)
	for _, typ := range soldIn("us-west1-a") {
		f.world.SetOffered("gcp", "us-west1-a", typ, false)
	}
	usCentralA := soldIn("us-central1-a")
	if !slices.Contains(usCentralA, "a3-highgpu-8g") {
		t.Fatalf("us-central1-a sells %v, want a3-highgpu-8g among them", usCentralA)
	}

	tests := []struct {
		name string
		zone string
		want []string
	}{
		{"a zone offering what the catalog sells there", "us-central1-b", soldIn("us-central1-b")},
		{"a zone without one", "us-central1-a", slices.DeleteFunc(slices.Clone(usCentralA), func(n string) bool { return n == "a3-highgpu-8g" })},
		{"a zone offering none", "us-west1-a", nil},
		{"a smaller region", "us-west1-b", soldIn("us-west1-b")},
	}
	aggregated := f.aggregatedTypes(t, 0)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := names(f.zoneTypes(t, &computepb.ListMachineTypesRequest{Project: project, Zone: tt.zone}))
			if !slices.Equal(got, tt.want) {
				t.Errorf("machineTypes.list: %v, want %v", got, tt.want)
			}
			if got := aggregated[tt.zone]; !slices.Equal(got, tt.want) {
				t.Errorf("machineTypes.aggregatedList: %v, want %v", got, tt.want)
			}
		})
	}

	// Offered again, it is listed again.
	f.world.SetOffered("gcp", "us-central1-a", "a3-highgpu-8g", true)
	if got := names(f.zoneTypes(t, &computepb.ListMachineTypesRequest{Project: project, Zone: "us-central1-a"})); !slices.Equal(got, usCentralA) {
		t.Errorf("offered again: %v", got)
	}
}

func TestMachineTypeShape(t *testing.T) {
	f := newFixture(t, sim.Config{}, Options{})
	tests := []struct {
		name        string
		machineType string
		cpus        int32
		memoryMb    int32
		accelerator string
		count       int32
	}{
		{"one L4", "g2-standard-4", 4, 16384, "nvidia-l4", 1},
		{"eight H100s", "a3-highgpu-8g", 208, 1916928, "nvidia-h100-80gb", 8},
		{"one A100 40GB", "a2-highgpu-1g", 12, 87040, "nvidia-tesla-a100", 1},
		{"eight A100 80GB", "a2-ultragpu-8g", 96, 1392640, "nvidia-a100-80gb", 8},
		{"eight H200s", "a3-ultragpu-8g", 224, 3022848, "nvidia-h200-141gb", 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Each type is asked for in a zone of the test region that sells it.
			zone := zoneSelling(t, f.world, "us-central1", tt.machineType)
			mt, err := f.types.Get(context.Background(), &computepb.GetMachineTypeRequest{Project: project, Zone: zone, MachineType: tt.machineType})
			if err != nil {
				t.Fatal(err)
			}
			if mt.GetName() != tt.machineType || mt.GetZone() != zone || mt.GetGuestCpus() != tt.cpus || mt.GetMemoryMb() != tt.memoryMb {
				t.Errorf("got %s in %s with %d vCPUs and %d MB, want %s in %s with %d and %d",
					mt.GetName(), mt.GetZone(), mt.GetGuestCpus(), mt.GetMemoryMb(), tt.machineType, zone, tt.cpus, tt.memoryMb)
			}
			acc := mt.GetAccelerators()
			if len(acc) != 1 || acc[0].GetGuestAcceleratorType() != tt.accelerator || acc[0].GetGuestAcceleratorCount() != tt.count {
				t.Errorf("accelerators %v, want %d %s", acc, tt.count, tt.accelerator)
			}
			if want := f.link(scope(project, zone)) + "/machineTypes/" + tt.machineType; mt.GetSelfLink() != want {
				t.Errorf("selfLink %s, want %s", mt.GetSelfLink(), want)
			}
		})
	}

	// On the wire: 64-bit integers are strings, 32-bit ones numbers, and
	// the zone a bare name.
	body := getJSON(t, f.url+"/compute/v1/projects/gpufleet-test/zones/us-central1-a/machineTypes/g2-standard-4")
	wantJSON(t, body, "kind", "compute#machineType")
	wantJSON(t, body, "zone", "us-central1-a")
	wantJSON(t, body, "guestCpus", 4.0)
	wantJSON(t, body, "memoryMb", 16384.0)
	wantJSON(t, body, "maximumPersistentDisksSizeGb", "263168")
	if _, ok := body["id"].(string); !ok {
		t.Errorf("id %v is not a string", body["id"])
	}

	f.world.SetOffered("gcp", zone, "g2-standard-4", false)
	_, err := f.types.Get(context.Background(), &computepb.GetMachineTypeRequest{Project: project, Zone: zone, MachineType: "g2-standard-4"})
	wantAPIError(t, err, 404, "notFound", "The resource 'projects/gpufleet-test/zones/us-central1-a/machineTypes/g2-standard-4' was not found")
}

func TestMachineTypesPage(t *testing.T) {
	f := newFixture(t, sim.Config{}, Options{})
	all := names(f.zoneTypes(t, &computepb.ListMachineTypesRequest{Project: project, Zone: zone}))
	everyZone := f.aggregatedTypes(t, 0)
	tests := []struct {
		name     string
		pageSize uint32
		filter   string
		want     []string
	}{
		{"one a page", 1, "", all},
		{"four a page", 4, "", all},
		{"filtered by name", 1, `name = "g2-standard-4"`, []string{"g2-standard-4"}},
		{"filtered out by name", 2, `name != "g2-standard-4"`, slices.DeleteFunc(slices.Clone(all), func(n string) bool { return n == "g2-standard-4" })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := &computepb.ListMachineTypesRequest{Project: project, Zone: zone, MaxResults: proto.Uint32(tt.pageSize)}
			if tt.filter != "" {
				req.Filter = proto.String(tt.filter)
			}
			before := f.calls(OpMachineTypesList)
			if got := names(f.zoneTypes(t, req)); !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
			// No page token after the last type: no empty page to fetch.
			pages := f.calls(OpMachineTypesList) - before
			if want := max(1, (len(tt.want)+int(tt.pageSize)-1)/int(tt.pageSize)); pages != want {
				t.Errorf("%d pages for %d types of %d a page", pages, len(tt.want), tt.pageSize)
			}
		})
	}
	t.Run("aggregated, a few a page", func(t *testing.T) {
		got := f.aggregatedTypes(t, 7)
		if len(got) != len(everyZone) {
			t.Errorf("%d zones, want %d", len(got), len(everyZone))
		}
		for z, want := range everyZone {
			if !slices.Equal(got[z], want) {
				t.Errorf("%s: %v, want %v", z, got[z], want)
			}
		}
	})
}
