// SPDX-License-Identifier: Apache-2.0

package lambdasim

import (
	"fmt"
	"net/http"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// instanceType is the API's description of a type, as /instance-types
// lists it and every instance carries it.
type instanceType struct {
	Name              string `json:"name"`
	Description       string `json:"description"`
	GPUDescription    string `json:"gpu_description"`
	PriceCentsPerHour int64  `json:"price_cents_per_hour"`
	Specs             specs  `json:"specs"`
}

type specs struct {
	VCPUs     int     `json:"vcpus"`
	MemoryGiB float64 `json:"memory_gib"`
	// StorageGiB is the local disk, which the catalog does not know: the
	// front answers 0.
	StorageGiB int `json:"storage_gib"`
	GPUs       int `json:"gpus"`
}

type region struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

type typeAvailability struct {
	InstanceType instanceType `json:"instance_type"`
	Regions      []region     `json:"regions_with_capacity_available"`
}

// typeTable holds what the API says of each of the catalog's Lambda types
// and regions. It is read once: the catalog does not change under a world.
type typeTable struct {
	types map[string]instanceType
	// regions are the catalog's Lambda regions, in its order.
	regions []catalog.Region
}

func newTypeTable(w *sim.World) *typeTable {
	t := &typeTable{types: map[string]instanceType{}}
	cat := w.Catalog()
	for _, r := range cat.Regions {
		if r.Cloud == cloud {
			t.regions = append(t.regions, r)
		}
	}
	// A type's price is its first on-demand offer's: the API gives each
	// type one price, wherever it runs.
	for _, o := range cat.Offers {
		if o.Cloud != cloud || o.Market != catalog.OnDemand {
			continue
		}
		if _, ok := t.types[o.InstanceType]; ok {
			continue
		}
		typ, _ := w.TypeNamed(cloud, o.InstanceType)
		gpu := typ.GPUModel
		if mem := typ.GPU.MemoryMiB; mem > 0 {
			gpu = fmt.Sprintf("%s (%d GB)", typ.GPUModel, mem/1024)
		}
		t.types[o.InstanceType] = instanceType{
			Name:              o.InstanceType,
			Description:       fmt.Sprintf("%dx %s", typ.GPUs, gpu),
			GPUDescription:    gpu,
			PriceCentsPerHour: (o.PriceMicros + 5000) / 10000,
			Specs:             specs{VCPUs: typ.VCPUs, MemoryGiB: typ.MemoryGiB, GPUs: typ.GPUs},
		}
	}
	return t
}

// region describes a region as the API does, by where it is: here by the
// catalog's country of it, or its name when the catalog has none.
func (t *typeTable) region(name string) region {
	for _, r := range t.regions {
		if r.Name == name && r.Country != "" {
			return region{Name: name, Description: r.Country}
		}
	}
	return region{Name: name, Description: name}
}

// instanceTypes serves GET /instance-types: every type some region sells,
// with the regions that have room for one more of it now. A type no
// region sells any longer (sim.World.SetOffered in all of them) is not
// listed, as Lambda Cloud drops types it retires.
func (s *Server) instanceTypes(w http.ResponseWriter, r *http.Request, tenant string, _ []string) error {
	if err := s.intercept(r.Context(), tenant, sim.Call{Op: OpInstanceTypes}); err != nil {
		return err
	}
	out := map[string]typeAvailability{}
	for _, reg := range s.types.regions {
		for _, zone := range reg.Zones {
			for _, typ := range s.world.Offered(cloud, zone, catalog.OnDemand) {
				desc, ok := s.types.types[typ.Name]
				if !ok {
					continue
				}
				a, listed := out[typ.Name]
				if !listed {
					a = typeAvailability{InstanceType: desc, Regions: []region{}}
				}
				if s.world.Room(cloud, zone, typ.Name, catalog.OnDemand) > 0 && !hasRegion(a.Regions, reg.Name) {
					a.Regions = append(a.Regions, s.types.region(reg.Name))
				}
				out[typ.Name] = a
			}
		}
	}
	return writeData(w, out)
}

func hasRegion(regions []region, name string) bool {
	for _, r := range regions {
		if r.Name == name {
			return true
		}
	}
	return false
}
