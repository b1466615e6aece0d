// SPDX-License-Identifier: Apache-2.0

package ocisim

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// shape is a shape as ListShapes renders it. The GPU shapes the catalog
// has are fixed, not flexible: their OCPUs and memory are the shape's.
type shape struct {
	Shape          string  `json:"shape"`
	Ocpus          float64 `json:"ocpus"`
	MemoryInGBs    float64 `json:"memoryInGBs"`
	Gpus           int     `json:"gpus"`
	GpuDescription string  `json:"gpuDescription,omitempty"`
	IsFlexible     bool    `json:"isFlexible"`
	BillingType    string  `json:"billingType"`
}

// ocpus is a type's OCPUs: an OCPU of the x86 shapes that carry GPUs is
// a core, two vCPUs.
func ocpus(typ sim.InstanceType) float64 { return float64(typ.VCPUs) / 2 }

// gpuDescription names a type's GPUs as OCI does, by maker and model.
func gpuDescription(typ sim.InstanceType) string {
	if typ.GPUs == 0 {
		return ""
	}
	return strings.TrimSpace(typ.GPU.Manufacturer + " " + cmp.Or(typ.GPU.Chip, typ.GPUModel))
}

func renderShape(typ sim.InstanceType) shape {
	return shape{Shape: typ.Name, Ocpus: ocpus(typ), MemoryInGBs: typ.MemoryGiB, Gpus: typ.GPUs,
		GpuDescription: gpuDescription(typ), BillingType: "PAID"}
}

// listShapes serves GET /shapes: the shapes an availability domain offers
// now (sim.World.Offered), or, without one, those any domain of the region
// offers, by name, paged.
func (s *Server) listShapes(w http.ResponseWriter, req *request) error {
	q := req.URL.Query()
	call := sim.Call{Op: OpListShapes}
	zone, zoneOK := s.zoneOf(req.region, q.Get("availabilityDomain"))
	if zoneOK {
		call.Zone = zone
	}
	if err := s.intercept(req, call); err != nil {
		return err
	}
	if q.Get("compartmentId") == "" {
		return errMissing("compartmentId")
	}
	zones := []string{zone}
	if ad := q.Get("availabilityDomain"); ad == "" {
		reg, _ := s.world.Region(cloud, req.region)
		zones = reg.Zones
	} else if !zoneOK {
		return errInvalid("availabilityDomain", fmt.Sprintf("%s is not an availability domain of %s.", ad, req.region))
	}
	seen := map[string]bool{}
	var out []shape
	for _, z := range zones {
		for _, typ := range s.world.Offered(cloud, z, catalog.OnDemand) {
			if seen[typ.Name] || q.Get("shape") != "" && q.Get("shape") != typ.Name {
				continue
			}
			seen[typ.Name] = true
			out = append(out, renderShape(typ))
		}
	}
	slices.SortFunc(out, func(a, b shape) int { return cmp.Compare(a.Shape, b.Shape) })
	page, next, err := paginate(q, out, func(sh shape) string { return sh.Shape }, strings.Compare)
	if err != nil {
		return err
	}
	return writeList(w, page, next)
}
