// SPDX-License-Identifier: Apache-2.0

package gcesim

import (
	"net/http"
	"slices"
	"strings"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// Regions and zones are the world's catalog: every one is UP, and a
// zone's CPU platforms are those of the machine types it offers.

// cpuPlatforms names the CPU platform of each GPU machine series, as
// GCE's accelerator-optimized machine family page gives them; the first
// prefix that matches a machine type applies.
var cpuPlatforms = []struct{ prefix, platform string }{
	{"a3-ultragpu-", "Intel Emerald Rapids"},
	{"a3-", "Intel Sapphire Rapids"},
	{"a4-", "Intel Emerald Rapids"},
	{"a2-", "Intel Cascade Lake"},
	{"g2-", "Intel Cascade Lake"},
}

// cpuPlatform is the CPU platform instances of a machine type run on.
func cpuPlatform(machineType string) string {
	for _, p := range cpuPlatforms {
		if strings.HasPrefix(machineType, p.prefix) {
			return p.platform
		}
	}
	return "Intel Cascade Lake"
}

// admit intercepts a call on a project's resources, a region's ("" zone)
// or a zone's, and answers the fault the world injects into it, if any.
func (s *Server) admit(r *http.Request, op, project, region, zone, resource string) error {
	_, err := s.interceptSync(r, sim.Call{Op: op, Region: region, Zone: zone},
		faultContext{Project: project, Region: region, Zone: zone, Permission: permissions[op], Resource: resource})
	return err
}

// admitRegion admits a call on a region's resources, answering 404 for a
// region the catalog does not have; a call with no region is global.
func (s *Server) admitRegion(r *http.Request, op, project, region, resource string) error {
	if err := s.admit(r, op, project, region, "", resource); err != nil {
		return err
	}
	if region != "" {
		if _, ok := s.world.Region(cloud, region); !ok {
			return notFound(regionPath(project, region))
		}
	}
	return nil
}

// admitZone admits a call on a zone's resources, answering 404 for a zone
// the catalog does not have.
func (s *Server) admitZone(r *http.Request, op, project, zone, resource string) error {
	if err := s.admit(r, op, project, s.region(zone), zone, resource); err != nil {
		return err
	}
	if err := s.zoneExists(project, zone); err != nil {
		return err
	}
	return nil
}

// allZones lists the catalog's zones by name.
func (s *Server) allZones() []string {
	var zones []string
	for _, region := range s.world.Catalog().RegionsOf(cloud) {
		zones = append(zones, region.Zones...)
	}
	slices.Sort(zones)
	return zones
}

// allRegions lists the catalog's regions by name.
func (s *Server) allRegions() []string {
	var regions []string
	for _, region := range s.world.Catalog().RegionsOf(cloud) {
		regions = append(regions, region.Name)
	}
	slices.Sort(regions)
	return regions
}

// renderZone is a zone as zones.get returns it.
func (s *Server) renderZone(l links, project, zone string) *computepb.Zone {
	var platforms []string
	for _, t := range s.offered(zone) {
		if p := cpuPlatform(t.Name); !slices.Contains(platforms, p) {
			platforms = append(platforms, p)
		}
	}
	slices.Sort(platforms)
	return &computepb.Zone{
		Kind:                  proto.String("compute#zone"),
		Id:                    proto.Uint64(stableID("zone\x00" + zone)),
		CreationTimestamp:     proto.String(epoch),
		Name:                  proto.String(zone),
		Description:           proto.String(zone),
		Status:                proto.String(computepb.Zone_UP.String()),
		Region:                proto.String(l.region(project, s.region(zone))),
		SelfLink:              proto.String(l.zone(project, zone)),
		AvailableCpuPlatforms: platforms,
		SupportsPzs:           proto.Bool(false),
	}
}

// getZone serves zones.get.
func (s *Server) getZone(w http.ResponseWriter, r *http.Request, project, zone string) error {
	if err := s.admitZone(r, OpZoneGet, project, zone, scope(project, zone)); err != nil {
		return err
	}
	return writeProto(w, s.renderZone(linksOf(r), project, zone))
}

// listZones serves zones.list: every zone, by name.
func (s *Server) listZones(w http.ResponseWriter, r *http.Request, project string) error {
	collection := "projects/" + project + "/zones"
	q, invalid := parseNameQuery(r, collection)
	if err := admitted(s.admit(r, OpZonesList, project, "", "", "projects/"+project), invalid); err != nil {
		return err
	}
	zones := keyedBy(s.allZones(), func(z string) (string, string) { return "global", z })
	l := linksOf(r)
	items, next := page(r, collection, q, zones)
	return writeList(w, l, collection, next, &computepb.ZoneList{
		Kind:  proto.String("compute#zoneList"),
		Items: renderAll(items, func(z keyed[string]) *computepb.Zone { return s.renderZone(l, project, z.item) }),
	})
}

// renderRegion is a region with its zones and its regional quotas, with
// what pending and running instances use of them.
func (s *Server) renderRegion(l links, project string, reg catalog.Region) *computepb.Region {
	out := &computepb.Region{
		Kind:              proto.String("compute#region"),
		Id:                proto.Uint64(stableID(reg.Name)),
		CreationTimestamp: proto.String(epoch),
		Name:              proto.String(reg.Name),
		Description:       proto.String(reg.Name),
		Status:            proto.String(computepb.Region_UP.String()),
		SelfLink:          proto.String(l.region(project, reg.Name)),
		SupportsPzs:       proto.Bool(false),
		Quotas:            s.quotas(reg.Name, catalog.RegionScope),
	}
	for _, z := range reg.Zones {
		out.Zones = append(out.Zones, l.zone(project, z))
	}
	return out
}

// getRegion serves regions.get.
func (s *Server) getRegion(w http.ResponseWriter, r *http.Request, project, region string) error {
	resource := regionPath(project, region)
	if err := s.admit(r, OpRegionGet, project, region, "", resource); err != nil {
		return err
	}
	reg, ok := s.world.Region(cloud, region)
	if !ok {
		return notFound(resource)
	}
	return writeProto(w, s.renderRegion(linksOf(r), project, reg))
}

// listRegions serves regions.list: every region, by name.
func (s *Server) listRegions(w http.ResponseWriter, r *http.Request, project string) error {
	collection := "projects/" + project + "/regions"
	q, invalid := parseNameQuery(r, collection)
	if err := admitted(s.admit(r, OpRegionsList, project, "", "", "projects/"+project), invalid); err != nil {
		return err
	}
	regions := keyedBy(s.world.Catalog().RegionsOf(cloud), func(reg catalog.Region) (string, string) { return "global", reg.Name })
	l := linksOf(r)
	items, next := page(r, collection, q, regions)
	return writeList(w, l, collection, next, &computepb.RegionList{
		Kind:  proto.String("compute#regionList"),
		Items: renderAll(items, func(reg keyed[catalog.Region]) *computepb.Region { return s.renderRegion(l, project, reg.item) }),
	})
}
