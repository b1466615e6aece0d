// SPDX-License-Identifier: Apache-2.0

package armsim

import (
	"math"
	"net/http"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7"

	"github.com/gpufleet/gpufleet/providers/sim"
)

// usageUnit is the one unit Compute counts usages in, vCPUs and VMs alike.
const usageUnit = "Count"

// resourceCounts are what Compute lists beside its vCPU quotas, with their
// default limits. The world has no availability sets or scale sets; its
// VMs it counts.
var resourceCounts = []struct {
	name, description string
	limit             int64
}{
	{"availabilitySets", "Availability Sets", 2500},
	{"virtualMachines", "Virtual Machines", 25000},
	{"virtualMachineScaleSets", "Virtual Machine Scale Sets", 2500},
}

// usages serves Usage.List: in a location, every quota the catalog names,
// with its limit and what the world's pending and running VMs use of it,
// beside the resource counts Compute lists too. The world keeps one
// account, so every subscription sees the same quotas.
func (s *Server) usages(w http.ResponseWriter, r *http.Request, sub, location string) {
	loc := normalizeLocation(location)
	out, ok := s.admit(w, r, sim.Call{Op: OpUsages, Region: loc})
	if !ok {
		return
	}
	if out.Err != nil {
		s.writeError(w, s.fromWorld(out.Err, callContext{vm: vmRef{Subscription: sub}, location: loc, opType: "Read",
			action: "Microsoft.Compute/locations/usages/read"}))
		return
	}
	region, ok := s.world.Region(cloud, loc)
	if !ok {
		s.writeError(w, s.errNoProvider(location, usagesType.typ, requestVersion(r, usagesType), usagesType.versions))
		return
	}
	vms := len(s.world.List(cloud, func(inst *sim.Instance) bool { return inst.Region == region.Name }))
	var all []*armcompute.Usage
	for _, c := range resourceCounts {
		used := int64(0)
		if c.name == "virtualMachines" {
			used = int64(vms)
		}
		all = append(all, usage(c.name, c.description, used, c.limit))
	}
	for _, q := range s.world.Quotas(cloud, region.Name) {
		all = append(all, usage(q.Name, q.Description, int64(q.Used), int64(q.Limit)))
	}
	page, next, e := s.offsetPage(r, len(all))
	if e != nil {
		s.writeError(w, *e)
		return
	}
	writeJSON(w, http.StatusOK, armcompute.ListUsagesResult{Value: all[page.start:page.end], NextLink: next})
}

func usage(name, description string, used, limit int64) *armcompute.Usage {
	return &armcompute.Usage{
		Name:         &armcompute.UsageName{Value: to.Ptr(name), LocalizedValue: to.Ptr(description)},
		Unit:         to.Ptr(usageUnit),
		CurrentValue: to.Ptr(int32(min(used, math.MaxInt32))),
		Limit:        to.Ptr(limit),
	}
}
