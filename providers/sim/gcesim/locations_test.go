// SPDX-License-Identifier: Apache-2.0

package gcesim

import (
	"context"
	"net/http"
	"slices"
	"testing"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/api/iterator"
	"google.golang.org/api/option"
	"google.golang.org/protobuf/proto"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// client makes an SDK client of the fixture's front.
func client[C interface{ Close() error }](t *testing.T, f *fixture, make func(context.Context, ...option.ClientOption) (C, error)) C {
	t.Helper()
	c, err := make(context.Background(), option.WithEndpoint(f.url), option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// all drains an SDK iterator.
func all[T any](t *testing.T, next func() (T, error)) []T {
	t.Helper()
	var out []T
	for {
		v, err := next()
		if err == iterator.Done {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
}

// Zones and regions are the catalog's, UP, with links under the base
// called, in pages.
func TestZonesAndRegions(t *testing.T) {
	f := newFixture(t, sim.Config{}, Options{})
	ctx := context.Background()
	zones := client(t, f, compute.NewZonesRESTClient)
	regions := client(t, f, compute.NewRegionsRESTClient)

	var want []string
	for _, r := range f.world.Catalog().RegionsOf(cloud) {
		want = append(want, r.Zones...)
	}
	slices.Sort(want)
	listed := all(t, zones.List(ctx, &computepb.ListZonesRequest{Project: project, MaxResults: proto.Uint32(5)}).Next)
	var got []string
	for _, z := range listed {
		got = append(got, z.GetName())
	}
	if !slices.Equal(got, want) {
		t.Errorf("zones %v, want %v", got, want)
	}

	// A zone that sells A3 Ultra, A3 and G2 has the CPU platforms of all three.
	every := zoneSelling(t, f.world, "us-central1", "a3-ultragpu-8g", "a3-highgpu-8g", "g2-standard-4")
	z, err := zones.Get(ctx, &computepb.GetZoneRequest{Project: project, Zone: every})
	if err != nil {
		t.Fatal(err)
	}
	if z.GetStatus() != "UP" || z.GetRegion() != f.link("projects/"+project+"/regions/us-central1") || z.GetSelfLink() != f.link(scope(project, every)) ||
		!slices.Equal(z.GetAvailableCpuPlatforms(), []string{"Intel Cascade Lake", "Intel Emerald Rapids", "Intel Sapphire Rapids"}) {
		t.Errorf("zone %v", z)
	}
	_, err = zones.Get(ctx, &computepb.GetZoneRequest{Project: project, Zone: "mars-north1-a"})
	wantAPIError(t, err, http.StatusNotFound, "notFound", "The resource 'projects/gpufleet-test/zones/mars-north1-a' was not found")

	got = nil
	for _, r := range all(t, regions.List(ctx, &computepb.ListRegionsRequest{Project: project, MaxResults: proto.Uint32(3)}).Next) {
		got = append(got, r.GetName())
		if r.GetName() == "us-central1" && (len(r.GetZones()) != 4 || r.GetZones()[0] != f.zoneLink() || len(r.GetQuotas()) == 0) {
			t.Errorf("region %v", r)
		}
	}
	if len(got) != len(f.world.Catalog().RegionsOf(cloud)) || !slices.IsSorted(got) {
		t.Errorf("regions %v", got)
	}
}

// A zone's accelerator types are the GPU models of the machine types it
// offers.
func TestAcceleratorTypes(t *testing.T) {
	f := newFixture(t, sim.Config{}, Options{})
	ctx := context.Background()
	accels := client(t, f, compute.NewAcceleratorTypesRESTClient)

	l4, err := accels.Get(ctx, &computepb.GetAcceleratorTypeRequest{Project: project, Zone: zone, AcceleratorType: "nvidia-l4"})
	if err != nil {
		t.Fatal(err)
	}
	if l4.GetDescription() != "NVIDIA L4" || l4.GetMaximumCardsPerInstance() != 8 || l4.GetZone() != f.zoneLink() ||
		l4.GetSelfLink() != f.zoneLink()+"/acceleratorTypes/nvidia-l4" || l4.GetKind() != "compute#acceleratorType" {
		t.Errorf("nvidia-l4: %v", l4)
	}
	_, err = accels.Get(ctx, &computepb.GetAcceleratorTypeRequest{Project: project, Zone: zone, AcceleratorType: "nvidia-tesla-k80"})
	wantAPIError(t, err, http.StatusNotFound, "notFound", "The resource 'projects/gpufleet-test/zones/us-central1-a/acceleratorTypes/nvidia-tesla-k80' was not found")

	names := func(list []*computepb.AcceleratorType) []string {
		var out []string
		for _, a := range list {
			out = append(out, a.GetName())
		}
		return out
	}
	// GCE's names of the catalog's models, as the console shows them.
	gceName := map[string]string{
		"L4": "nvidia-l4", "A100-40GB": "nvidia-tesla-a100", "A100-80GB": "nvidia-a100-80gb",
		"H100": "nvidia-h100-80gb", "H200": "nvidia-h200-141gb", "B200": "nvidia-b200",
	}
	var want, h100s []string
	for _, m := range []catalog.Market{catalog.OnDemand, catalog.Spot} {
		for _, typ := range f.world.Offered(cloud, zone, m) {
			name, ok := gceName[typ.GPUModel]
			if !ok {
				t.Fatalf("%s sells %s, of a model (%s) this test has no GCE name for", zone, typ.Name, typ.GPUModel)
			}
			if !slices.Contains(want, name) {
				want = append(want, name)
			}
			if typ.GPUModel == "H100" && !slices.Contains(h100s, typ.Name) {
				h100s = append(h100s, typ.Name)
			}
		}
	}
	slices.Sort(want)
	if len(want) < 3 || len(h100s) == 0 {
		t.Fatalf("%s sells %v, want a zone with H100s and at least three models", zone, want)
	}
	inZone := all(t, accels.List(ctx, &computepb.ListAcceleratorTypesRequest{Project: project, Zone: zone}).Next)
	if got := names(inZone); !slices.Equal(got, want) {
		t.Errorf("accelerator types of %s: %v, want %v", zone, got, want)
	}

	// A zone that offers no A3 has no H100s.
	for _, typ := range h100s {
		f.world.SetOffered(cloud, zone, typ, false)
	}
	if got := names(all(t, accels.List(ctx, &computepb.ListAcceleratorTypesRequest{Project: project, Zone: zone}).Next)); slices.Contains(got, "nvidia-h100-80gb") {
		t.Errorf("a zone without A3 lists %v", got)
	}
	// Another region's zone that sells A3 still lists them.
	var other string
	for _, r := range f.world.Catalog().RegionsOf(cloud) {
		if r.Name == "us-central1" || other != "" {
			continue
		}
		if zones := f.world.OfferedZones(cloud, r.Name, "a3-highgpu-8g"); len(zones) > 0 {
			other = zones[0]
		}
	}
	if other == "" {
		t.Fatal("no zone outside us-central1 sells a3-highgpu-8g")
	}

	seen := map[string]int{}
	for _, pair := range all(t, accels.AggregatedList(ctx, &computepb.AggregatedListAcceleratorTypesRequest{Project: project, MaxResults: proto.Uint32(7)}).Next) {
		for _, a := range pair.Value.GetAcceleratorTypes() {
			seen[pair.Key+" "+a.GetName()]++
		}
	}
	if seen["zones/"+other+" nvidia-h100-80gb"] != 1 || seen["zones/"+zone+" nvidia-h100-80gb"] != 0 {
		t.Errorf("aggregated accelerator types %v", seen)
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("%s listed %d times", k, n)
		}
	}
}

// An instance's accelerators are its machine type's: naming them is
// allowed, naming others is refused.
func TestGuestAccelerators(t *testing.T) {
	f := newFixture(t, sim.Config{}, Options{})
	ctx := context.Background()
	tests := []struct {
		name, accelerator string
		count             int32
		status            int
		reason, message   string
	}{
		{"its own, by URL", "https://www.googleapis.com/compute/v1/projects/gpufleet-test/zones/us-central1-a/acceleratorTypes/nvidia-l4", 1, 0, "", ""},
		{"its own, by the front's URL", "", 1, 0, "", ""},
		{"its own, by partial URL", "zones/us-central1-a/acceleratorTypes/nvidia-l4", 1, 0, "", ""},
		{"its own, by name", "nvidia-l4", 1, 0, "", ""},
		{"another model", "nvidia-tesla-a100", 1, 400, "badRequest", "[nvidia-tesla-a100, g2-standard-4] features are not compatible for creating instance."},
		{"too many", "nvidia-l4", 2, 400, "invalid",
			"Invalid value for field 'resource.guestAccelerators[0].acceleratorCount': '2'. Machine type g2-standard-4 comes with 1 nvidia-l4 accelerator cards attached."},
		{"unknown", "zones/us-central1-a/acceleratorTypes/nvidia-tesla-k80", 1, 404, "notFound",
			"The resource 'projects/gpufleet-test/zones/us-central1-a/acceleratorTypes/nvidia-tesla-k80' was not found"},
		{"another zone's", "zones/us-central1-b/acceleratorTypes/nvidia-l4", 1, 404, "notFound",
			"The resource 'projects/gpufleet-test/zones/us-central1-b/acceleratorTypes/nvidia-l4' was not found"},
		{"another host", "https://compute.example.com/compute/v1/projects/gpufleet-test/zones/us-central1-a/acceleratorTypes/nvidia-l4", 1, 400, "invalid", ""},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			accel := tt.accelerator
			if accel == "" {
				accel = f.zoneLink() + "/acceleratorTypes/nvidia-l4"
			}
			req := vm{name: "gpu-" + string(rune('a'+i))}.request()
			req.InstanceResource.GuestAccelerators = []*computepb.AcceleratorConfig{{AcceleratorType: proto.String(accel), AcceleratorCount: proto.Int32(tt.count)}}
			op, err := f.instances.Insert(ctx, req)
			if tt.status != 0 {
				wantAPIError(t, err, tt.status, tt.reason, tt.message)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := op.Wait(ctx); err != nil {
				t.Fatal(err)
			}
			got := f.get(t, zone, req.InstanceResource.GetName()).GetGuestAccelerators()
			if len(got) != 1 || got[0].GetAcceleratorType() != f.zoneLink()+"/acceleratorTypes/nvidia-l4" || got[0].GetAcceleratorCount() != 1 {
				t.Errorf("guestAccelerators %v", got)
			}
		})
	}
}

// Disk types are served for every zone, with their sizes.
func TestDiskTypes(t *testing.T) {
	f := newFixture(t, sim.Config{}, Options{})
	ctx := context.Background()
	types := client(t, f, compute.NewDiskTypesRESTClient)
	pd, err := types.Get(ctx, &computepb.GetDiskTypeRequest{Project: project, Zone: zone, DiskType: "pd-balanced"})
	if err != nil {
		t.Fatal(err)
	}
	if pd.GetValidDiskSize() != "10GB-65536GB" || pd.GetDefaultDiskSizeGb() != 100 || pd.GetSelfLink() != f.zoneLink()+"/diskTypes/pd-balanced" {
		t.Errorf("pd-balanced: %v", pd)
	}
	_, err = types.Get(ctx, &computepb.GetDiskTypeRequest{Project: project, Zone: zone, DiskType: "pd-fast"})
	wantAPIError(t, err, http.StatusNotFound, "notFound", "")
	if n := len(all(t, types.List(ctx, &computepb.ListDiskTypesRequest{Project: project, Zone: zone, MaxResults: proto.Uint32(4)}).Next)); n != len(diskTypes) {
		t.Errorf("%d disk types listed, want %d", n, len(diskTypes))
	}
	n := 0
	for _, pair := range all(t, types.AggregatedList(ctx, &computepb.AggregatedListDiskTypesRequest{Project: project, MaxResults: proto.Uint32(50)}).Next) {
		n += len(pair.Value.GetDiskTypes())
	}
	var zones int
	for _, r := range f.world.Catalog().RegionsOf(catalog.GCP) {
		zones += len(r.Zones)
	}
	if n != zones*len(diskTypes) {
		t.Errorf("aggregated %d disk types, want %d", n, zones*len(diskTypes))
	}
}
