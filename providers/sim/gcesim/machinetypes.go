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
	out, err := s.intercept(r.Context(), sim.Call{Op: OpMachineTypeGet, Region: fc.Region, Zone: zone, InstanceType: name})
	if err != nil {
		return err
	}
	if out.Err != nil {
		return s.syncError(out.Err, fc)
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
	q, invalid := parseMachineTypeQuery(r)
	fc := faultContext{Project: project, Zone: zone, Region: s.region(zone), Permission: permissions[OpMachineTypesList]}
	out, err := s.intercept(r.Context(), sim.Call{Op: OpMachineTypesList, Region: fc.Region, Zone: zone})
	if err != nil {
		return err
	}
	if out.Err != nil {
		return s.syncError(out.Err, fc)
	}
	if err := s.zoneExists(project, zone); err != nil {
		return err
	}
	if invalid != nil {
		return invalid
	}
	collection := scope(project, zone) + "/machineTypes"
	l := linksOf(r)
	resp := &computepb.MachineTypeList{
		Kind:     proto.String("compute#machineTypeList"),
		Id:       proto.String(collection),
		SelfLink: proto.String(l.url(collection)),
	}
	page, more := typesPage(q, s.zonal([]string{zone}))
	for _, t := range page {
		resp.Items = append(resp.Items, renderMachineType(l, project, t.zone, t.InstanceType))
	}
	if more {
		resp.NextPageToken = proto.String(typesToken(r, page[len(page)-1]))
	}
	return writeProto(w, resp)
}

// aggregatedMachineTypes serves machineTypes.aggregatedList: every zone's
// machine types, paged across zones, as a map from "zones/Z" to the zone's
// types, with a NO_RESULTS_ON_PAGE warning for zones without any on the
// page.
func (s *Server) aggregatedMachineTypes(w http.ResponseWriter, r *http.Request, project string) error {
	q, invalid := parseMachineTypeQuery(r)
	out, err := s.intercept(r.Context(), sim.Call{Op: OpMachineTypesAggregatedList})
	if err != nil {
		return err
	}
	if out.Err != nil {
		return s.syncError(out.Err, faultContext{Project: project, Permission: permissions[OpMachineTypesAggregatedList]})
	}
	if invalid != nil {
		return invalid
	}
	zones := s.allZones()
	collection := "projects/" + project + "/aggregated/machineTypes"
	l := linksOf(r)
	resp := &computepb.MachineTypeAggregatedList{
		Kind:     proto.String("compute#machineTypeAggregatedList"),
		Id:       proto.String(collection),
		SelfLink: proto.String(l.url(collection)),
		Items:    map[string]*computepb.MachineTypesScopedList{},
	}
	page, more := typesPage(q, s.zonal(zones))
	for _, t := range page {
		key := "zones/" + t.zone
		scoped := resp.Items[key]
		if scoped == nil {
			scoped = &computepb.MachineTypesScopedList{}
			resp.Items[key] = scoped
		}
		scoped.MachineTypes = append(scoped.MachineTypes, renderMachineType(l, project, t.zone, t.InstanceType))
	}
	if more {
		resp.NextPageToken = proto.String(typesToken(r, page[len(page)-1]))
	}
	for _, zone := range zones {
		key := "zones/" + zone
		if resp.Items[key] == nil {
			resp.Items[key] = &computepb.MachineTypesScopedList{Warning: noResults(key)}
		}
	}
	return writeProto(w, resp)
}

// zonalType is a machine type as one zone offers it.
type zonalType struct {
	zone string
	sim.InstanceType
}

// zonal lists the machine types of zones, in list order: by zone, then by
// name.
func (s *Server) zonal(zones []string) []zonalType {
	var out []zonalType
	for _, zone := range zones {
		for _, t := range s.offered(zone) {
			out = append(out, zonalType{zone: zone, InstanceType: t})
		}
	}
	return out
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

// parseMachineTypeQuery reads a list's parameters as for instances; a
// machine type has a name but no labels or status to filter on.
func parseMachineTypeQuery(r *http.Request) (listQuery, *apiError) {
	q, err := parseListQuery(r, r.URL.Path)
	if err == nil && !q.filter.only("name") {
		err = invalidField("filter", r.URL.Query().Get("filter"), "Invalid list filter expression.")
	}
	return q, err
}

// typesPage returns the types of a page, after the page token's and
// passing the filter, and whether more follow.
func typesPage(q listQuery, types []zonalType) (page []zonalType, more bool) {
	for _, t := range types {
		if q.after != nil && cmp.Or(cmp.Compare(t.zone, q.after.Zone), cmp.Compare(t.Name, q.after.Name)) <= 0 {
			continue
		}
		if !q.filter.match(func(condition) (string, bool) { return t.Name, true }) {
			continue
		}
		if len(page) == q.limit {
			return page, true
		}
		page = append(page, t)
	}
	return page, false
}

// typesToken is the page token that resumes after a type.
func typesToken(r *http.Request, last zonalType) string {
	return encodeCursor(cursor{Zone: last.zone, Name: last.Name, Query: queryHash(r, r.URL.Path)})
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
	if accel, ok := acceleratorTypes[t.GPUModel]; ok && t.GPUs > 0 {
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
