// SPDX-License-Identifier: Apache-2.0

package gcesim

import (
	"net/http"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"
)

// diskTypeInfo is what diskTypes.get says of a disk type: its name in
// GCE's console, the sizes a disk of it may have and the size one gets
// without asking.
type diskTypeInfo struct {
	description string
	validSize   string
	defaultGb   int64
}

// diskTypeInfos describes the disk types every emulated zone offers (see
// diskTypes), as GCE's disk type resources do.
var diskTypeInfos = map[string]diskTypeInfo{
	"pd-standard":                          {"Standard Persistent Disk", "10GB-65536GB", 500},
	"pd-balanced":                          {"Balanced Persistent Disk", "10GB-65536GB", 100},
	"pd-ssd":                               {"SSD Persistent Disk", "10GB-65536GB", 100},
	"pd-extreme":                           {"Extreme Persistent Disk", "500GB-65536GB", 1000},
	"hyperdisk-balanced":                   {"Hyperdisk Balanced Persistent Disk", "4GB-65536GB", 100},
	"hyperdisk-balanced-high-availability": {"Hyperdisk Balanced High Availability Persistent Disk", "4GB-65536GB", 100},
	"hyperdisk-extreme":                    {"Hyperdisk Extreme Persistent Disk", "64GB-65536GB", 1000},
	"hyperdisk-ml":                         {"Hyperdisk ML Persistent Disk", "4GB-65536GB", 100},
	"hyperdisk-throughput":                 {"Hyperdisk Throughput Persistent Disk", "2048GB-32768GB", 2048},
}

func diskTypePath(project, zone, name string) string {
	return scope(project, zone) + "/diskTypes/" + name
}

func renderDiskType(l links, project, zone, name string) *computepb.DiskType {
	info := diskTypeInfos[name]
	return &computepb.DiskType{
		Kind:              proto.String("compute#diskType"),
		Id:                proto.Uint64(stableID("diskType\x00" + name)),
		CreationTimestamp: proto.String(epoch),
		Name:              proto.String(name),
		Description:       proto.String(info.description),
		ValidDiskSize:     proto.String(info.validSize),
		DefaultDiskSizeGb: proto.Int64(info.defaultGb),
		Zone:              proto.String(l.zone(project, zone)),
		SelfLink:          proto.String(l.url(diskTypePath(project, zone, name))),
	}
}

// getDiskType serves diskTypes.get.
func (s *Server) getDiskType(w http.ResponseWriter, r *http.Request, project, zone, name string) error {
	path := diskTypePath(project, zone, name)
	if err := s.admitZone(r, OpDiskTypeGet, project, zone, path); err != nil {
		return err
	}
	if _, ok := diskTypeInfos[name]; !ok {
		return notFound(path)
	}
	return writeProto(w, renderDiskType(linksOf(r), project, zone, name))
}

// listDiskTypes serves diskTypes.list.
func (s *Server) listDiskTypes(w http.ResponseWriter, r *http.Request, project, zone string) error {
	collection := scope(project, zone) + "/diskTypes"
	q, invalid := parseNameQuery(r, collection)
	if err := admitted(s.admitZone(r, OpDiskTypesList, project, zone, scope(project, zone)), invalid); err != nil {
		return err
	}
	l := linksOf(r)
	items, next := page(r, collection, q, keyedDiskTypes([]string{zone}))
	return writeList(w, l, collection, next, &computepb.DiskTypeList{
		Kind:  proto.String("compute#diskTypeList"),
		Items: renderAll(items, renderDiskTypeIn(l, project)),
	})
}

// aggregatedDiskTypes serves diskTypes.aggregatedList, keyed "zones/Z".
func (s *Server) aggregatedDiskTypes(w http.ResponseWriter, r *http.Request, project string) error {
	collection := "projects/" + project + "/aggregated/diskTypes"
	q, invalid := parseNameQuery(r, collection)
	if err := admitted(s.admit(r, OpDiskTypesAggregatedList, project, "", "", "projects/"+project), invalid); err != nil {
		return err
	}
	zones := s.allZones()
	l := linksOf(r)
	items, next := page(r, collection, q, keyedDiskTypes(zones))
	return writeList(w, l, collection, next, &computepb.DiskTypeAggregatedList{
		Kind: proto.String("compute#diskTypeAggregatedList"),
		Items: aggregate(items, "zones/", zones, renderDiskTypeIn(l, project),
			func(types []*computepb.DiskType, warning *computepb.Warning) *computepb.DiskTypesScopedList {
				return &computepb.DiskTypesScopedList{DiskTypes: types, Warning: warning}
			}),
	})
}

// renderDiskTypeIn renders the disk types of a page.
func renderDiskTypeIn(l links, project string) func(keyed[string]) *computepb.DiskType {
	return func(t keyed[string]) *computepb.DiskType { return renderDiskType(l, project, t.scope, t.name) }
}

func keyedDiskTypes(zones []string) []keyed[string] {
	var out []keyed[string]
	for _, z := range zones {
		for name := range diskTypeInfos {
			out = append(out, keyed[string]{scope: z, name: name, item: name})
		}
	}
	return out
}
