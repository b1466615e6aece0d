// SPDX-License-Identifier: Apache-2.0

package gcesim

import (
	"net/http"
	"slices"
	"strconv"
	"strings"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"

	"github.com/gpufleet/gpufleet/providers/sim"
)

// diskTypes are the disk types every emulated zone offers, and whether a
// disk of the type can boot: of the Hyperdisk types only Balanced and
// Balanced High Availability can.
var diskTypes = map[string]bool{
	"pd-standard":                          true,
	"pd-balanced":                          true,
	"pd-ssd":                               true,
	"pd-extreme":                           true,
	"hyperdisk-balanced":                   true,
	"hyperdisk-balanced-high-availability": true,
	"hyperdisk-extreme":                    false,
	"hyperdisk-ml":                         false,
	"hyperdisk-throughput":                 false,
}

// seriesDisks are the disk types of the GPU machine series, as GCE's
// accelerator-optimized machine family page lists them: A3 Mega, High and
// Edge take Balanced and SSD Persistent Disk and Hyperdisk, but not
// Standard Persistent Disk; A3 Ultra and A4 take Hyperdisk only; G2 takes
// Balanced and SSD Persistent Disk and, of Hyperdisk, ML and Throughput;
// A2 takes any Persistent Disk but Extreme, and Hyperdisk ML. The first
// prefix that matches a machine type applies; a series not listed takes
// any type.
var seriesDisks = []struct {
	prefix string
	types  []string
}{
	{"a3-ultragpu-", []string{"hyperdisk-balanced", "hyperdisk-extreme"}},
	{"a3-", []string{"pd-balanced", "pd-ssd", "hyperdisk-balanced", "hyperdisk-extreme", "hyperdisk-ml", "hyperdisk-throughput"}},
	{"a4-", []string{"hyperdisk-balanced", "hyperdisk-extreme", "hyperdisk-ml", "hyperdisk-throughput"}},
	{"a4x-", []string{"hyperdisk-balanced", "hyperdisk-extreme", "hyperdisk-ml", "hyperdisk-throughput"}},
	{"g2-", []string{"pd-balanced", "pd-ssd", "hyperdisk-ml", "hyperdisk-throughput"}},
	{"a2-", []string{"pd-standard", "pd-balanced", "pd-ssd", "hyperdisk-ml"}},
}

// diskTypeFits says whether a machine type takes a disk type.
func diskTypeFits(machineType, diskType string) bool {
	for _, s := range seriesDisks {
		if strings.HasPrefix(machineType, s.prefix) {
			return slices.Contains(s.types, diskType)
		}
	}
	return true
}

// defaultDiskType is the disk type GCE gives a disk that names none, by
// machine series: Hyperdisk Balanced for A3 and newer series, Standard
// Persistent Disk for older ones. G2 takes neither, and its disks get
// Balanced Persistent Disk.
func defaultDiskType(machineType string) string {
	switch {
	case strings.HasPrefix(machineType, "g2-"):
		return "pd-balanced"
	case strings.HasPrefix(machineType, "a3-"), strings.HasPrefix(machineType, "a4-"), strings.HasPrefix(machineType, "a4x-"):
		return "hyperdisk-balanced"
	}
	return "pd-standard"
}

// diskTypeName reads initializeParams.diskType. An insert names the type
// by its full or partial URL ("zones/Z/diskTypes/T"); bulkInsert, like an
// instance template, by its bare name. what is "" when the form is right,
// else why it is not.
func (l links) diskTypeName(value, project, zone string, bulk bool) (name, what string) {
	dt, ok := l.parseRef(value, ref{project: project, scope: "zones", location: zone, collection: "diskTypes"})
	name = dt.name
	bare := !strings.Contains(value, "/")
	switch {
	case bulk && !bare:
		return value[strings.LastIndexByte(value, '/')+1:], "Bulk insert takes a disk type name, such as 'pd-balanced', not a URL."
	case !ok || bare && !bulk:
		return value[strings.LastIndexByte(value, '/')+1:], "The URL is malformed."
	case dt.location != zone || dt.project != project:
		return name, "Disk type with name '" + name + "' does not exist in zone '" + zone + "'."
	}
	return name, ""
}

// bootDiskType validates the boot disk's type against the machine type and
// returns it, or the series' default when none is named.
func bootDiskType(l links, field, project, zone, machineType string, bulk bool, init *computepb.AttachedDiskInitializeParams) (string, *apiError) {
	value := init.GetDiskType()
	if value == "" {
		return defaultDiskType(machineType), nil
	}
	f := field + ".disks[0].initializeParams.diskType"
	name, what := l.diskTypeName(value, project, zone, bulk)
	if what != "" {
		return "", invalidField(f, value, what)
	}
	boots, known := diskTypes[name]
	switch {
	case !known:
		return "", invalidField(f, value, "Disk type with name '"+name+"' does not exist in zone '"+zone+"'.")
	case !diskTypeFits(machineType, name):
		// GCE's words, e.g. "pd-standard disk type cannot be used by
		// a3-highgpu-8g machine type."
		return "", invalidField(f, value, name+" disk type cannot be used by "+machineType+" machine type.")
	case !boots:
		return "", invalidField(f, value, name+" disk type cannot be used as a boot disk.")
	}
	return name, nil
}

// getDisk serves disks.get for the boot disks of instances: each is named
// as its instance and lives as long as it. instances.get names a disk by
// its source URL only; its type is the disk's own.
func (s *Server) getDisk(w http.ResponseWriter, r *http.Request, project, zone, name string) error {
	resource := scope(project, zone) + "/disks/" + name
	if err := s.admitZone(r, OpDiskGet, project, zone, resource); err != nil {
		return err
	}
	inst, ok := s.world.ByName(cloud, scope(project, zone), name)
	if !ok {
		return notFound(resource)
	}
	return writeProto(w, s.renderDisk(linksOf(r), inst))
}

// renderDisk is an instance's boot disk as disks.get returns it.
func (s *Server) renderDisk(l links, inst *sim.Instance) *computepb.Disk {
	project := projectOf(inst.Scope)
	props := inst.Properties
	size, _ := strconv.ParseInt(props[propDiskSizeGb], 10, 64)
	out := &computepb.Disk{
		Kind:                   proto.String("compute#disk"),
		Id:                     proto.Uint64(stableID("disk\x00" + inst.ID)),
		Name:                   proto.String(inst.Name),
		Zone:                   proto.String(l.zone(project, inst.Zone)),
		Type:                   proto.String(l.url(diskTypePath(project, inst.Zone, diskTypeOf(inst)))),
		SizeGb:                 proto.Int64(max(size, defaultDiskSizeGb)),
		Status:                 proto.String("READY"),
		Users:                  []string{l.instance(project, inst.Zone, inst.Name)},
		SelfLink:               proto.String(l.zone(project, inst.Zone) + "/disks/" + inst.Name),
		CreationTimestamp:      proto.String(timestamp(inst.LaunchedAt)),
		LabelFingerprint:       proto.String(fingerprint(nil)),
		PhysicalBlockSizeBytes: proto.Int64(4096),
		Architecture:           proto.String("X86_64"),
	}
	if src := props[propSourceImage]; strings.Contains(src, "/global/images/") {
		// The boot disk came from an image, rather than a snapshot or a
		// disk.
		out.SourceImage = proto.String(l.stored(src))
	}
	if lic := props[propLicense]; lic != "" {
		out.Licenses = []string{l.url(lic)}
	}
	if img, ok := imageAt(props[propSourceImage]); ok {
		out.SourceImageId = proto.String(strconv.FormatUint(stableID("image\x00"+img.path()), 10))
	}
	return out
}

// diskTypeOf is the type of an instance's boot disk; one the world made
// without the front has its series' default.
func diskTypeOf(inst *sim.Instance) string {
	if t := inst.Properties[propDiskType]; t != "" {
		return t
	}
	return defaultDiskType(inst.InstanceType)
}
