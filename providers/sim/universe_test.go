// SPDX-License-Identifier: Apache-2.0

package sim

import (
	"os"
	"slices"
	"testing"

	"github.com/gpufleet/gpufleet/schema/catalog"
)

// zonalCatalog is a small catalog whose offers are zonal where a cloud's
// price data names zones and regional elsewhere.
func zonalCatalog(t *testing.T) *catalog.Catalog {
	t.Helper()
	f, err := os.Open("testdata/zonal-catalog.json")
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

// A zonal offer sells its type in its zone only, a regional one in every
// zone of its region, on the offer's market; every type the catalog has is
// one of the cloud's, with its GPU's facts.
func TestZoneOfferingsAreTheCatalogs(t *testing.T) {
	w, _ := newWorld(t, Config{Catalog: zonalCatalog(t)})
	tests := []struct {
		cloud, region, instanceType string
		want                        []string
	}{
		{catalog.AWS, "us-east-1", "p5.48xlarge", []string{"us-east-1b", "us-east-1c"}},
		{catalog.AWS, "us-east-1", "dl1.24xlarge", []string{"us-east-1a"}},
		{catalog.AWS, "us-east-1", "g4dn.xlarge", []string{"us-east-1a", "us-east-1b", "us-east-1c"}},
		{catalog.Azure, "eastus", "Standard_NC24ads_A100_v4", []string{"eastus-2"}},
		{catalog.GCP, "us-central1", "a3-highgpu-8g", []string{"us-central1-b"}},
		{catalog.GCP, "us-central1", "no-such-type", nil},
	}
	for _, tt := range tests {
		if got := w.OfferedZones(tt.cloud, tt.region, tt.instanceType); !slices.Equal(got, tt.want) {
			t.Errorf("%s %s offered in %v, want %v", tt.cloud, tt.instanceType, got, tt.want)
		}
	}
	// The market is the offer's: p5 is on demand in b and spot in c.
	for _, c := range []struct {
		zone   string
		market catalog.Market
		want   bool
	}{
		{"us-east-1b", catalog.OnDemand, true}, {"us-east-1b", catalog.Spot, false},
		{"us-east-1c", catalog.Spot, true}, {"us-east-1c", catalog.OnDemand, false},
		{"us-east-1a", catalog.OnDemand, false},
	} {
		if _, ok := w.Type(catalog.AWS, c.zone, "p5.48xlarge", c.market); ok != c.want {
			t.Errorf("p5.48xlarge %s in %s: offered %v, want %v", c.market, c.zone, ok, c.want)
		}
	}
	var names []string
	for _, typ := range w.Types(catalog.AWS) {
		names = append(names, typ.Name)
	}
	if want := []string{"dl1.24xlarge", "g4dn.xlarge", "p5.48xlarge", "trn1.32xlarge"}; !slices.Equal(names, want) {
		t.Errorf("AWS types %v, want %v", names, want)
	}
	dl1, ok := w.TypeNamed(catalog.AWS, "dl1.24xlarge")
	if !ok || dl1.GPUs != 8 || dl1.VCPUs != 96 || dl1.GPU.Manufacturer != "Habana" || dl1.GPU.MemoryMiB != 32768 {
		t.Errorf("dl1.24xlarge %+v, want 8 Habana Gaudis of 32 GiB on 96 vCPUs", dl1)
	}

	// A create where the type is not sold is refused as unsupported, not
	// as an unknown type, and goes through where it is.
	launch := LaunchSpec{Cloud: catalog.AWS, Zone: "us-east-1a", InstanceType: "p5.48xlarge", Market: catalog.OnDemand}
	if _, err := w.Launch(launch); kindOf(err) != KindUnsupported {
		t.Errorf("p5.48xlarge in us-east-1a: %v, want unsupported", err)
	}
	launch.Zone = "us-east-1b"
	if _, err := w.Launch(launch); err != nil {
		t.Errorf("p5.48xlarge in us-east-1b: %v", err)
	}
	launch.InstanceType = "p9.unknown"
	if _, err := w.Launch(launch); kindOf(err) != KindUnknownType {
		t.Errorf("an unknown type: %v, want unknown-type", err)
	}
}

// Facts are found however the catalog spells a model, and a model the
// table lacks still gets a device of its own name.
func TestGPUFacts(t *testing.T) {
	for _, tt := range []struct {
		model, chip, maker string
		memory             int
		kind               AcceleratorKind
	}{
		{"A100-80GB", "A100", "NVIDIA", 81920, KindGPU},
		{"nvidia-a100-80gb", "A100", "NVIDIA", 81920, KindGPU},
		{"gaudi-hl205", "Gaudi HL-205", "Habana", 32768, KindGPU},
		{"Inferentia2", "Inferentia2", "AWS", 32768, KindNeuron},
		{"Virtex UltraScale (VU9P)", "Virtex UltraScale (VU9P)", "Xilinx", 0, KindFPGA},
		{"X900", "X900", "NVIDIA", 0, KindGPU},
	} {
		g := GPUFacts(tt.model)
		if g.Model != tt.model || g.Chip != tt.chip || g.Manufacturer != tt.maker || g.MemoryMiB != tt.memory || g.Kind != tt.kind {
			t.Errorf("GPUFacts(%q) = %+v", tt.model, g)
		}
	}
}

// The GPU models of the embedded catalog all have facts.
func TestGPUFactsCoverTheCatalog(t *testing.T) {
	for _, model := range catalog.Models() {
		if _, ok := LookupGPU(model); !ok {
			t.Errorf("GPU model %s has no facts", model)
		}
	}
}
