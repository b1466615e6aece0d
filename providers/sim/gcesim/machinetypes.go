// SPDX-License-Identifier: Apache-2.0

package gcesim

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// A zone's machine types are the catalog's types of its region that the
// world has it offer (sim.World.SetOffered), on demand or spot: GCE lists a
// machine type once, however it may be bought.

// The persistent disk limits GCE gives every machine type of these
// families.
const (
	maxPersistentDisks       = 128
	maxPersistentDisksSizeGb = 263168
)

// getMachineType serves machineTypes.get.
func (s *Server) getMachineType(w http.ResponseWriter, r *http.Request, project, zone, name string) error {
	resource := scope(project, zone) + "/machineTypes/" + name
	fc := faultContext{Project: project, Zone: zone, Region: s.region(zone), Permission: permissions[OpMachineTypeGet], Resource: resource}
	// Faults may name the machine type.
	if _, err := s.interceptSync(r, sim.Call{Op: OpMachineTypeGet, Region: fc.Region, Zone: zone, InstanceType: name}, fc); err != nil {
		return err
	}
	if err := s.zoneExists(project, zone); err != nil {
		return err
	}
	for _, t := range s.offered(zone) {
		if t.Name == name {
			return writeProto(w, renderMachineType(linksOf(r), project, zone, t))
		}
	}
	return notFound(resource)
}

// listMachineTypes serves machineTypes.list: a zone's machine types by
// name, paged.
func (s *Server) listMachineTypes(w http.ResponseWriter, r *http.Request, project, zone string) error {
	// Page tokens are tied to the request's path, not the collection.
	q, invalid := parseNameQuery(r, r.URL.Path)
	if err := admitted(s.admitZone(r, OpMachineTypesList, project, zone, ""), invalid); err != nil {
		return err
	}
	collection := scope(project, zone) + "/machineTypes"
	l := linksOf(r)
	items, next := page(r, r.URL.Path, q, s.keyedMachineTypes([]string{zone}))
	return writeList(w, l, collection, next, &computepb.MachineTypeList{
		Kind:  proto.String("compute#machineTypeList"),
		Items: renderAll(items, renderMachineTypeIn(l, project)),
	})
}

// aggregatedMachineTypes serves machineTypes.aggregatedList: every zone's
// machine types, paged across zones, as a map from "zones/Z" to the zone's
// types, with a NO_RESULTS_ON_PAGE warning for zones without any on the
// page.
func (s *Server) aggregatedMachineTypes(w http.ResponseWriter, r *http.Request, project string) error {
	q, invalid := parseNameQuery(r, r.URL.Path)
	if err := admitted(s.admit(r, OpMachineTypesAggregatedList, project, "", "", ""), invalid); err != nil {
		return err
	}
	zones := s.allZones()
	collection := "projects/" + project + "/aggregated/machineTypes"
	l := linksOf(r)
	items, next := page(r, r.URL.Path, q, s.keyedMachineTypes(zones))
	return writeList(w, l, collection, next, &computepb.MachineTypeAggregatedList{
		Kind: proto.String("compute#machineTypeAggregatedList"),
		Items: aggregate(items, "zones/", zones, renderMachineTypeIn(l, project),
			func(types []*computepb.MachineType, warning *computepb.Warning) *computepb.MachineTypesScopedList {
				return &computepb.MachineTypesScopedList{MachineTypes: types, Warning: warning}
			}),
	})
}

// keyedMachineTypes lists the machine types of zones, keyed by zone.
func (s *Server) keyedMachineTypes(zones []string) []keyed[sim.InstanceType] {
	var out []keyed[sim.InstanceType]
	for _, zone := range zones {
		for _, t := range s.offered(zone) {
			out = append(out, keyed[sim.InstanceType]{scope: zone, name: t.Name, item: t})
		}
	}
	return out
}

// renderMachineTypeIn renders the machine types of a page.
func renderMachineTypeIn(l links, project string) func(keyed[sim.InstanceType]) *computepb.MachineType {
	return func(t keyed[sim.InstanceType]) *computepb.MachineType {
		return renderMachineType(l, project, t.scope, t.item)
	}
}

// offered lists the machine types a zone offers, bought either way, by
// name.
func (s *Server) offered(zone string) []sim.InstanceType {
	types := s.world.Offered(cloud, zone, catalog.OnDemand)
	for _, t := range s.world.Offered(cloud, zone, catalog.Spot) {
		if !slices.ContainsFunc(types, func(o sim.InstanceType) bool { return o.Name == t.Name }) {
			types = append(types, t)
		}
	}
	slices.SortFunc(types, func(a, b sim.InstanceType) int { return cmp.Compare(a.Name, b.Name) })
	return types
}

// renderMachineType is a machine type as GCE describes it. Its zone is the
// bare zone name, unlike the URLs elsewhere.
func renderMachineType(l links, project, zone string, t sim.InstanceType) *computepb.MachineType {
	out := &computepb.MachineType{
		Kind:                         proto.String("compute#machineType"),
		Id:                           proto.Uint64(stableID(t.Name)),
		CreationTimestamp:            proto.String(epoch),
		Name:                         proto.String(t.Name),
		Description:                  proto.String(describeMachineType(t)),
		GuestCpus:                    proto.Int32(int32(t.VCPUs)),
		MemoryMb:                     proto.Int32(int32(t.MemoryGiB * 1024)),
		ImageSpaceGb:                 proto.Int32(0),
		MaximumPersistentDisks:       proto.Int32(maxPersistentDisks),
		MaximumPersistentDisksSizeGb: proto.Int64(maxPersistentDisksSizeGb),
		Zone:                         proto.String(zone),
		SelfLink:                     proto.String(l.zone(project, zone) + "/machineTypes/" + t.Name),
		IsSharedCpu:                  proto.Bool(false),
		Architecture:                 proto.String("X86_64"),
	}
	if accel := acceleratorOf(t.GPUModel); t.GPUs > 0 {
		out.Accelerators = []*computepb.Accelerators{{
			GuestAcceleratorType:  proto.String(accel.name),
			GuestAcceleratorCount: proto.Int32(int32(t.GPUs)),
		}}
	}
	return out
}

// describeMachineType words a description as GCE's accelerator-optimized
// types do: "Accelerator Optimized: 1 NVIDIA Tesla A100 GPU, 12 vCPUs,
// 85GB RAM".
func describeMachineType(t sim.InstanceType) string {
	if t.GPUs == 0 {
		return fmt.Sprintf("%d vCPUs, %gGB RAM", t.VCPUs, t.MemoryGiB)
	}
	gpus := "GPU"
	if t.GPUs > 1 {
		gpus = "GPUs"
	}
	return fmt.Sprintf("Accelerator Optimized: %d NVIDIA %s %s, %d vCPUs, %gGB RAM", t.GPUs, t.GPUModel, gpus, t.VCPUs, t.MemoryGiB)
}
