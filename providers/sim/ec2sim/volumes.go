// SPDX-License-Identifier: Apache-2.0

package ec2sim

import (
	"cmp"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/gpufleet/gpufleet/providers/sim"
)

// blockDevice is one EBS volume an instance was launched with, as the
// front stores it on the instance (propBlockDevices, in JSON). The world
// has no volumes: they live and end with their instance, and one kept
// past its instance's end stays listed while the world still lists the
// instance.
type blockDevice struct {
	Device              string `json:"device"`
	VolumeID            string `json:"volumeId,omitempty"`
	SizeGiB             int    `json:"sizeGiB"`
	VolumeType          string `json:"volumeType"`
	DeleteOnTermination bool   `json:"deleteOnTermination"`
	SnapshotID          string `json:"snapshotId,omitempty"`
}

// ebsVolumeTypes are the volume types RunInstances takes.
var ebsVolumeTypes = []string{"standard", "io1", "io2", "gp2", "sc1", "st1", "gp3"}

var volumeID = regexp.MustCompile(`^vol-([0-9a-f]{8}|[0-9a-f]{17})$`)

// parseBlockDevices reads the launch's block-device mappings over the
// image's own: the image gives the root volume, which a mapping on the
// image's root device name resizes or retypes; a mapping on any other
// device adds a volume. A mapping on /dev/sda1 for an image rooted at
// /dev/xvda therefore leaves the root at the image's size and attaches a
// second volume, as EC2 does. Instance-store and suppressed mappings make
// no EBS volume and are not kept.
func parseBlockDevices(form url.Values, image string) ([]blockDevice, *apiError) {
	root := rootDeviceOf(image)
	devices := []blockDevice{{Device: root, SizeGiB: imageRootGiB, VolumeType: "gp3", DeleteOnTermination: true}}
	if amiID.MatchString(image) {
		devices[0].SnapshotID = rootSnapshot(image)
	}
	seen := map[string]bool{}
	for _, n := range indexes(form, "BlockDeviceMapping") {
		prefix := fmt.Sprintf("BlockDeviceMapping.%d.", n)
		name := form.Get(prefix + "DeviceName")
		switch {
		case name == "":
			return nil, missingParameter(prefix + "DeviceName")
		case seen[name]:
			return nil, &apiError{Status: http.StatusBadRequest, Code: "InvalidBlockDeviceMapping", Message: fmt.Sprintf("The device '%s' is used in more than one block-device mapping", name)}
		}
		seen[name] = true
		if form.Has(prefix+"NoDevice") || form.Get(prefix+"VirtualName") != "" || !hasPrefix(form, prefix+"Ebs.") {
			continue
		}
		d := blockDevice{Device: name, VolumeType: "gp3", SnapshotID: form.Get(prefix + "Ebs.SnapshotId")}
		isRoot := name == root
		if isRoot {
			d = devices[0]
		}
		if raw := form.Get(prefix + "Ebs.VolumeSize"); raw != "" {
			size, err := strconv.Atoi(raw)
			if err != nil || size < 1 || size > 65536 {
				return nil, invalidValue("Volume size %s is invalid. Valid sizes are 1 to 65536 GiB.", raw)
			}
			d.SizeGiB = size
		}
		if raw := form.Get(prefix + "Ebs.VolumeType"); raw != "" {
			if !slices.Contains(ebsVolumeTypes, raw) {
				return nil, invalidValue("Value (%s) for parameter volumeType is invalid. Valid values: %s", raw, strings.Join(ebsVolumeTypes, ", "))
			}
			d.VolumeType = raw
		}
		// EC2 deletes the root volume with the instance unless told not
		// to, and keeps any other.
		d.DeleteOnTermination = isRoot
		if raw := form.Get(prefix + "Ebs.DeleteOnTermination"); raw != "" {
			v, err := strconv.ParseBool(raw)
			if err != nil {
				return nil, invalidValue("Invalid value '%s' for DeleteOnTermination.", raw)
			}
			d.DeleteOnTermination = v
		}
		switch {
		case isRoot && d.SizeGiB < imageRootGiB:
			return nil, &apiError{Status: http.StatusBadRequest, Code: "InvalidBlockDeviceMapping", Message: fmt.Sprintf(
				"Volume of size %dGB is smaller than snapshot '%s', expect size >= %dGB", d.SizeGiB, devices[0].SnapshotID, imageRootGiB)}
		case isRoot:
			devices[0] = d
		case d.SizeGiB == 0 && d.SnapshotID == "":
			return nil, missingParameter(prefix + "Ebs.VolumeSize")
		case d.SizeGiB == 0:
			// The front's snapshots are all of the image's size.
			d.SizeGiB = imageRootGiB
			devices = append(devices, d)
		default:
			devices = append(devices, d)
		}
	}
	return devices, nil
}

func hasPrefix(form url.Values, prefix string) bool {
	for k := range form {
		if strings.HasPrefix(k, prefix) {
			return true
		}
	}
	return false
}

// withVolumes gives each device of one instance, the index-th of its
// reservation, a volume of its own. The ids derive from the reservation's
// rather than draw on the world's seeded source, so that instance ids
// repeat with the seed whatever volumes the launches have.
func withVolumes(devices []blockDevice, reservation string, index int) string {
	own := slices.Clone(devices)
	for i := range own {
		own[i].VolumeID = hashID("vol", fmt.Sprintf("%s/%d/%s", reservation, index, own[i].Device))
	}
	raw, _ := json.Marshal(own)
	return string(raw)
}

// devicesOf reads what withVolumes stored.
func devicesOf(inst *sim.Instance) []blockDevice {
	var devices []blockDevice
	if raw := inst.Properties[propBlockDevices]; raw != "" {
		if err := json.Unmarshal([]byte(raw), &devices); err != nil {
			return nil
		}
	}
	return devices
}

func volumeTagsOf(inst *sim.Instance) map[string]string {
	var tags map[string]string
	if raw := inst.Properties[propVolumeTags]; raw != "" {
		if err := json.Unmarshal([]byte(raw), &tags); err != nil {
			return nil
		}
	}
	return tags
}

// rootDeviceName is the root device an instance was launched with.
func rootDeviceName(inst *sim.Instance) string {
	if root := inst.Properties[propRootDevice]; root != "" {
		return root
	}
	return rootDeviceOf(inst.Properties[propImage])
}

type instanceEbsXML struct {
	VolumeID            string `xml:"volumeId"`
	Status              string `xml:"status"`
	AttachTime          string `xml:"attachTime"`
	DeleteOnTermination bool   `xml:"deleteOnTermination"`
}

type instanceBlockDeviceXML struct {
	DeviceName string         `xml:"deviceName"`
	Ebs        instanceEbsXML `xml:"ebs"`
}

// renderDevices draws an instance's attached volumes; an ended instance
// has none left attached.
func renderDevices(inst *sim.Instance, state string) []instanceBlockDeviceXML {
	if state == "terminated" {
		return nil
	}
	var out []instanceBlockDeviceXML
	for _, d := range devicesOf(inst) {
		out = append(out, instanceBlockDeviceXML{DeviceName: d.Device, Ebs: instanceEbsXML{
			VolumeID: d.VolumeID, Status: "attached", AttachTime: timestamp(inst.LaunchedAt), DeleteOnTermination: d.DeleteOnTermination,
		}})
	}
	return out
}

type volumeAttachmentXML struct {
	VolumeID            string `xml:"volumeId"`
	InstanceID          string `xml:"instanceId"`
	Device              string `xml:"device"`
	Status              string `xml:"status"`
	AttachTime          string `xml:"attachTime"`
	DeleteOnTermination bool   `xml:"deleteOnTermination"`
}

type volumeXML struct {
	VolumeID           string                `xml:"volumeId"`
	Size               int                   `xml:"size"`
	SnapshotID         string                `xml:"snapshotId"`
	AvailabilityZone   string                `xml:"availabilityZone"`
	Status             string                `xml:"status"`
	CreateTime         string                `xml:"createTime"`
	Attachments        []volumeAttachmentXML `xml:"attachmentSet>item"`
	Tags               []tagXML              `xml:"tagSet>item"`
	VolumeType         string                `xml:"volumeType"`
	Iops               int                   `xml:"iops,omitempty"`
	Throughput         int                   `xml:"throughput,omitempty"`
	Encrypted          bool                  `xml:"encrypted"`
	MultiAttachEnabled bool                  `xml:"multiAttachEnabled"`
}

type describeVolumesResponse struct {
	XMLName   xml.Name    `xml:"DescribeVolumesResponse"`
	Xmlns     string      `xml:"xmlns,attr"`
	RequestID string      `xml:"requestId"`
	Volumes   []volumeXML `xml:"volumeSet>item"`
	NextToken string      `xml:"nextToken,omitempty"`
}

// volumeFilters gives a volume's values for each filter DescribeVolumes
// understands here; tag:KEY is handled apart.
var volumeFilters = map[string]func(v volumeXML) []string{
	"attachment.delete-on-termination": func(v volumeXML) []string {
		return attached(v, func(a volumeAttachmentXML) string { return strconv.FormatBool(a.DeleteOnTermination) })
	},
	"attachment.device": func(v volumeXML) []string { return attached(v, func(a volumeAttachmentXML) string { return a.Device }) },
	"attachment.instance-id": func(v volumeXML) []string {
		return attached(v, func(a volumeAttachmentXML) string { return a.InstanceID })
	},
	"attachment.status": func(v volumeXML) []string { return attached(v, func(a volumeAttachmentXML) string { return a.Status }) },
	"availability-zone": func(v volumeXML) []string { return []string{v.AvailabilityZone} },
	"size":              func(v volumeXML) []string { return []string{strconv.Itoa(v.Size)} },
	"snapshot-id":       func(v volumeXML) []string { return nonEmpty(v.SnapshotID) },
	"status":            func(v volumeXML) []string { return []string{v.Status} },
	"tag-key": func(v volumeXML) []string {
		var keys []string
		for _, t := range v.Tags {
			keys = append(keys, t.Key)
		}
		return keys
	},
	"volume-id":   func(v volumeXML) []string { return []string{v.VolumeID} },
	"volume-type": func(v volumeXML) []string { return []string{v.VolumeType} },
}

func attached(v volumeXML, field func(volumeAttachmentXML) string) []string {
	var out []string
	for _, a := range v.Attachments {
		out = append(out, field(a))
	}
	return out
}

func volumeValues(v volumeXML, name string) []string {
	if key, ok := strings.CutPrefix(name, "tag:"); ok {
		for _, t := range v.Tags {
			if t.Key == key {
				return []string{t.Value}
			}
		}
		return nil
	}
	return volumeFilters[name](v)
}

// maxVolumeResults is the largest page DescribeVolumes serves; a larger
// MaxResults gets this many, as on EC2.
const maxVolumeResults = 500

// describeVolumes lists the region's volumes, those of its listed
// instances, in launch order.
func (s *Server) describeVolumes(req *request) (any, *apiError) {
	if apiErr := s.admit(req); apiErr != nil {
		return nil, apiErr
	}
	form := req.form
	fs, apiErr := knownFilters(form, volumeFilters, true)
	if apiErr != nil {
		return nil, apiErr
	}
	ids := unique(list(form, "VolumeId"))
	for _, id := range ids {
		if !volumeID.MatchString(id) {
			return nil, malformedID("InvalidVolumeID.Malformed", id, "vol")
		}
	}
	maxResults, paged, apiErr := intParam(form, "MaxResults")
	if apiErr != nil {
		return nil, apiErr
	}
	switch {
	case paged && len(ids) > 0:
		return nil, &apiError{Status: http.StatusBadRequest, Code: "InvalidParameterCombination", Message: "The parameter volumeSet cannot be used with the parameter maxResults"}
	case paged && maxResults < 5:
		return nil, invalidValue("Value ( %d ) for parameter maxResults is invalid. Expecting a value greater than 5.", maxResults)
	}
	maxResults = min(maxResults, maxVolumeResults)
	n, apiErr := nextToken(form, "volumes")
	if apiErr != nil {
		return nil, apiErr
	}
	offset := int(n)

	all := s.volumes(req.region)
	var vols []volumeXML
	if len(ids) > 0 {
		byID := map[string]volumeXML{}
		for _, v := range all {
			byID[v.VolumeID] = v
		}
		var missing []string
		for _, id := range ids {
			v, ok := byID[id]
			if !ok {
				missing = append(missing, id)
				continue
			}
			vols = append(vols, v)
		}
		if len(missing) > 0 {
			return nil, &apiError{Status: http.StatusBadRequest, Code: "InvalidVolume.NotFound", Message: fmt.Sprintf("The volume '%s' does not exist.", strings.Join(missing, ", "))}
		}
	} else {
		vols = all
	}
	vols = slices.DeleteFunc(vols, func(v volumeXML) bool {
		return slices.ContainsFunc(fs, func(f filter) bool { return !f.matches(volumeValues(v, f.name)) })
	})
	if offset > len(vols) {
		return nil, invalidPaginationToken()
	}
	vols = vols[offset:]
	out := describeVolumesResponse{Xmlns: xmlns, RequestID: req.id}
	if paged && len(vols) > maxResults {
		vols = vols[:maxResults]
		out.NextToken = encodeToken("volumes", uint64(offset+maxResults))
	}
	out.Volumes = vols
	return out, nil
}

// volumes are the region's volumes: those attached to its instances, and
// those kept past the end of an instance the world still lists.
func (s *Server) volumes(region string) []volumeXML {
	var out []volumeXML
	for _, inst := range s.world.List(cloud, func(inst *sim.Instance) bool { return inst.Region == region }) {
		ended := stateName(inst.State) == "terminated"
		var tags []tagXML
		for k, v := range volumeTagsOf(inst) {
			tags = append(tags, tagXML{Key: k, Value: v})
		}
		slices.SortFunc(tags, func(a, b tagXML) int { return cmp.Compare(a.Key, b.Key) })
		for _, d := range devicesOf(inst) {
			if ended && d.DeleteOnTermination {
				continue
			}
			v := volumeXML{
				VolumeID:         d.VolumeID,
				Size:             d.SizeGiB,
				SnapshotID:       d.SnapshotID,
				AvailabilityZone: inst.Zone,
				Status:           "in-use",
				CreateTime:       timestamp(inst.LaunchedAt),
				Tags:             slices.Clone(tags),
				VolumeType:       d.VolumeType,
			}
			switch d.VolumeType {
			case "gp3":
				v.Iops, v.Throughput = 3000, 125
			case "gp2":
				v.Iops = min(max(3*d.SizeGiB, 100), 16000)
			}
			if ended {
				v.Status = "available"
			} else {
				v.Attachments = []volumeAttachmentXML{{
					VolumeID: d.VolumeID, InstanceID: inst.ID, Device: d.Device, Status: "attached",
					AttachTime: timestamp(inst.LaunchedAt), DeleteOnTermination: d.DeleteOnTermination,
				}}
			}
			out = append(out, v)
		}
	}
	return out
}

// encodeTags stores tags as a property.
func encodeTags(tags map[string]string) string {
	if len(tags) == 0 {
		return ""
	}
	raw, _ := json.Marshal(tags)
	return string(raw)
}
