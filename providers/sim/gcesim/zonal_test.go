// SPDX-License-Identifier: Apache-2.0

package gcesim

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// zonalCatalog is the emulator's small test catalog: in us-central1 the
// A3 and A4 machine types are sold in zone b only, g2-standard-4 in every
// zone.
func zonalCatalog(t *testing.T) *catalog.Catalog {
	t.Helper()
	f, err := os.Open("../testdata/zonal-catalog.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cat, err := catalog.Read(f)
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

// A zone has the machine types the catalog sells in it, each with its
// GPUs attached as GCE names them, and the accelerator types of those; an
// insert of a machine type the zone lacks is refused as GCE refuses it,
// and goes through in a zone that has it.
func TestZonalMachineTypes(t *testing.T) {
	f := newFixture(t, sim.Config{Catalog: zonalCatalog(t)}, Options{})
	ctx := context.Background()
	typesIn := func(z string) map[string]string {
		t.Helper()
		out := map[string]string{}
		for _, mt := range all(t, f.types.List(ctx, &computepb.ListMachineTypesRequest{Project: project, Zone: z}).Next) {
			var accels []string
			for _, a := range mt.GetAccelerators() {
				accels = append(accels, fmt.Sprintf("%s×%d", a.GetGuestAcceleratorType(), a.GetGuestAcceleratorCount()))
			}
			out[mt.GetName()] = strings.Join(accels, ",")
		}
		return out
	}
	if got, want := typesIn("us-central1-a"), map[string]string{"g2-standard-4": "nvidia-l4×1"}; !maps.Equal(got, want) {
		t.Errorf("us-central1-a machine types %v, want %v", got, want)
	}
	if got, want := typesIn("us-central1-b"), map[string]string{"g2-standard-4": "nvidia-l4×1", "a3-highgpu-8g": "nvidia-h100-80gb×8", "a4-highgpu-8g": "nvidia-b200×8"}; !maps.Equal(got, want) {
		t.Errorf("us-central1-b machine types %v, want %v", got, want)
	}

	_, err := f.types.Get(ctx, &computepb.GetMachineTypeRequest{Project: project, Zone: "us-central1-a", MachineType: "a3-highgpu-8g"})
	wantAPIError(t, err, http.StatusNotFound, "notFound", "The resource 'projects/"+project+"/zones/us-central1-a/machineTypes/a3-highgpu-8g' was not found")

	var accels []string
	list := client(t, f, compute.NewAcceleratorTypesRESTClient).List(ctx, &computepb.ListAcceleratorTypesRequest{Project: project, Zone: "us-central1-b"})
	for _, a := range all(t, list.Next) {
		accels = append(accels, a.GetName())
	}
	if want := []string{"nvidia-b200", "nvidia-h100-80gb", "nvidia-l4"}; !slices.Equal(accels, want) {
		t.Errorf("us-central1-b accelerator types %v, want %v", accels, want)
	}

	_, err = f.instances.Insert(ctx, vm{name: "a3-in-a", zone: "us-central1-a", machineType: "a3-highgpu-8g"}.request())
	wantAPIError(t, err, http.StatusBadRequest, "invalid",
		"Invalid value for field 'resource.machineType': 'zones/us-central1-a/machineTypes/a3-highgpu-8g'. Machine type with name 'a3-highgpu-8g' does not exist in zone 'us-central1-a'.")
	inst := f.create(t, vm{name: "a3-in-b", zone: "us-central1-b", machineType: "a3-highgpu-8g"})
	if got := inst.GetGuestAccelerators(); len(got) != 1 || got[0].GetAcceleratorCount() != 8 {
		t.Errorf("a3-highgpu-8g came up with accelerators %v", got)
	}
}
