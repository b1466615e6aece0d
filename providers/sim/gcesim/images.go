// SPDX-License-Identifier: Apache-2.0

package gcesim

import (
	"net/http"
	"strings"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"
)

// The public images of Google's image projects, a fixture: the current
// image of a few families each, which is what boot disks name through
// their family. Real projects hold every past version too, deprecated; a
// client that asks for the family gets the current one either way. An
// image of any other project is one its owner made, which the emulator
// does not model: a boot disk may name one, unchecked.

// publicImage is an image of a public image project.
type publicImage struct {
	project, family, name string
	description           string
	// diskSizeGb is the image's size, the least a disk made from it may
	// have.
	diskSizeGb int64
	// license is the license the image's disks carry, in the same project.
	license string
	created string
}

var publicImages = []publicImage{
	{"debian-cloud", "debian-12", "debian-12-bookworm-v20250610", "Debian, Debian GNU/Linux, 12 (bookworm), amd64 built on 20250610", 10, "debian-12-bookworm", "2025-06-10T12:00:00.000-07:00"},
	{"debian-cloud", "debian-11", "debian-11-bullseye-v20250610", "Debian, Debian GNU/Linux, 11 (bullseye), amd64 built on 20250610", 10, "debian-11-bullseye", "2025-06-10T12:00:00.000-07:00"},
	{"ubuntu-os-cloud", "ubuntu-2204-lts", "ubuntu-2204-jammy-v20250605", "Canonical, Ubuntu, 22.04 LTS, amd64 jammy image built on 2025-06-05", 10, "ubuntu-2204-lts", "2025-06-05T12:00:00.000-07:00"},
	{"ubuntu-os-cloud", "ubuntu-2404-lts-amd64", "ubuntu-2404-noble-amd64-v20250606", "Canonical, Ubuntu, 24.04 LTS Minimal, amd64 noble image built on 2025-06-06", 10, "ubuntu-2404-lts", "2025-06-06T12:00:00.000-07:00"},
	{"ubuntu-os-accelerator-images", "ubuntu-accelerator-2204-amd64-with-nvidia-550", "ubuntu-accelerator-2204-amd64-with-nvidia-550-v20250604", "Canonical, Ubuntu, 22.04 LTS, amd64 jammy image with the NVIDIA 550 driver built on 2025-06-04", 30, "ubuntu-2204-lts", "2025-06-04T12:00:00.000-07:00"},
	{"cos-cloud", "cos-stable", "cos-stable-121-18867-90-8", "Google, Container-Optimized OS, 121-18867-90-8 stable, Kernel: ChromiumOS-6.6.87 Kubernetes: 1.33.0 Docker: 24.0.9 Family: cos-stable", 10, "cos-pcid", "2025-06-02T12:00:00.000-07:00"},
	{"deeplearning-platform-release", "common-cu124-ubuntu-2204", "common-cu124-v20250325-ubuntu-2204-py310", "Google, Deep Learning VM with CUDA 12.4, M129, Base software with CUDA 12.4 and Python 3.10 on Ubuntu 22.04", 50, "dlvm-ubuntu-2204", "2025-03-25T12:00:00.000-07:00"},
	{"deeplearning-platform-release", "common-cu124-debian-11", "common-cu124-v20250325-debian-11-py310", "Google, Deep Learning VM with CUDA 12.4, M129, Base software with CUDA 12.4 and Python 3.10 on Debian 11", 50, "dlvm-debian-11", "2025-03-25T12:00:00.000-07:00"},
	{"rocky-linux-accelerator-cloud", "rocky-linux-9-optimized-gcp-nvidia-latest", "rocky-linux-9-optimized-gcp-nvidia-latest-v20250610", "Rocky Linux, Rocky Linux, 9 optimized for GCP with the latest NVIDIA driver, x86_64 built on 20250610", 20, "rocky-linux-9-optimized-gcp", "2025-06-10T12:00:00.000-07:00"},
}

// isPublicImageProject reports whether a project is one of the image
// projects the fixture stands for, whose images are checked.
func isPublicImageProject(project string) bool {
	for _, img := range publicImages {
		if img.project == project {
			return true
		}
	}
	return false
}

func imageNamed(project, name string) (publicImage, bool) {
	for _, img := range publicImages {
		if img.project == project && img.name == name {
			return img, true
		}
	}
	return publicImage{}, false
}

func imageOfFamily(project, family string) (publicImage, bool) {
	for _, img := range publicImages {
		if img.project == project && img.family == family {
			return img, true
		}
	}
	return publicImage{}, false
}

func (img publicImage) path() string {
	return "projects/" + img.project + "/global/images/" + img.name
}

// imageRef is a boot disk's source image as an instance names it.
type imageRef struct {
	project string
	// family is set for a reference through the family, name otherwise.
	family, name string
}

// path is the reference as GCE names it in errors.
func (r imageRef) path() string {
	if r.family != "" {
		return "projects/" + r.project + "/global/images/family/" + r.family
	}
	return "projects/" + r.project + "/global/images/" + r.name
}

// parseImageRef reads the forms of sourceImage GCE takes: a full or
// partial URL of an image ("projects/P/global/images/I",
// "global/images/I"), of a family ("…/global/images/family/F"), or of a
// family's zonal view ("projects/P/zones/Z/imageFamilyViews/F", Z being
// "-" for any zone), which gcloud sends for the families of public images.
// A bare name is an image of the instance's project.
func (l links) parseImageRef(value, project string) (imageRef, bool) {
	rest, ok := l.relative(value)
	if !ok || rest == "" {
		return imageRef{}, false
	}
	seg := strings.Split(rest, "/")
	out := imageRef{project: project}
	if len(seg) > 2 && seg[0] == "projects" {
		out.project, seg = seg[1], seg[2:]
	}
	switch {
	case len(seg) == 1:
		out.name = seg[0]
	case len(seg) == 3 && seg[0] == "global" && seg[1] == "images":
		out.name = seg[2]
	case len(seg) == 4 && seg[0] == "global" && seg[1] == "images" && seg[2] == "family":
		out.family = seg[3]
	case len(seg) == 4 && seg[0] == "zones" && seg[2] == "imageFamilyViews":
		out.family = seg[3]
	default:
		return imageRef{}, false
	}
	return out, out.project != "" && out.name+out.family != ""
}

// resolveImage finds a boot disk's source image: a public image it names
// must exist; one of any other project is taken on trust. found says
// whether the image is the fixture's.
func resolveImage(ref imageRef) (img publicImage, found bool, err *apiError) {
	if !isPublicImageProject(ref.project) {
		return publicImage{}, false, nil
	}
	if ref.family != "" {
		img, found = imageOfFamily(ref.project, ref.family)
	} else {
		img, found = imageNamed(ref.project, ref.name)
	}
	if !found {
		return publicImage{}, false, notFound(ref.path())
	}
	return img, true, nil
}

// renderImage is an image as images.get returns it.
func renderImage(l links, img publicImage) *computepb.Image {
	return &computepb.Image{
		Kind:              proto.String("compute#image"),
		Id:                proto.Uint64(stableID("image\x00" + img.path())),
		CreationTimestamp: proto.String(img.created),
		Name:              proto.String(img.name),
		Description:       proto.String(img.description),
		Family:            proto.String(img.family),
		SourceType:        proto.String(computepb.Image_RAW.String()),
		Status:            proto.String(computepb.Image_READY.String()),
		ArchiveSizeBytes:  proto.Int64(img.diskSizeGb << 27), // about an eighth of the disk, compressed
		DiskSizeGb:        proto.Int64(img.diskSizeGb),
		Licenses:          []string{l.url(licensePath(img))},
		SelfLink:          proto.String(l.url(img.path())),
		LabelFingerprint:  proto.String(fingerprint(nil)),
		Architecture:      proto.String(computepb.Image_X86_64.String()),
		StorageLocations:  []string{"asia", "eu", "us"},
		GuestOsFeatures: []*computepb.GuestOsFeature{
			{Type: proto.String("UEFI_COMPATIBLE")},
			{Type: proto.String("VIRTIO_SCSI_MULTIQUEUE")},
			{Type: proto.String("GVNIC")},
			{Type: proto.String("SEV_CAPABLE")},
		},
	}
}

func licensePath(img publicImage) string {
	return "projects/" + img.project + "/global/licenses/" + img.license
}

// imageCall intercepts an images call.
func (s *Server) imageCall(r *http.Request, op, project, resource string) error {
	return s.admit(r, op, project, "", "", resource)
}

// getImage serves images.get.
func (s *Server) getImage(w http.ResponseWriter, r *http.Request, project, name string) error {
	path := "projects/" + project + "/global/images/" + name
	if err := s.imageCall(r, OpImageGet, project, path); err != nil {
		return err
	}
	img, ok := imageNamed(project, name)
	if !ok {
		return notFound(path)
	}
	return writeProto(w, renderImage(linksOf(r), img))
}

// getImageFromFamily serves images.getFromFamily.
func (s *Server) getImageFromFamily(w http.ResponseWriter, r *http.Request, project, family string) error {
	path := "projects/" + project + "/global/images/family/" + family
	if err := s.imageCall(r, OpImageGetFromFamily, project, path); err != nil {
		return err
	}
	img, ok := imageOfFamily(project, family)
	if !ok {
		return notFound(path)
	}
	return writeProto(w, renderImage(linksOf(r), img))
}

// getImageFamilyView serves imageFamilyViews.get: a family's image as a
// zone sees it, which for the fixture is the same in every zone.
func (s *Server) getImageFamilyView(w http.ResponseWriter, r *http.Request, project, zone, family string) error {
	path := "projects/" + project + "/zones/" + zone + "/imageFamilyViews/" + family
	if err := s.imageCall(r, OpImageFamilyViewGet, project, path); err != nil {
		return err
	}
	if err := s.zoneExists(project, zone); err != nil {
		return err
	}
	img, ok := imageOfFamily(project, family)
	if !ok {
		return notFound(path)
	}
	return writeProto(w, &computepb.ImageFamilyView{Image: renderImage(linksOf(r), img)})
}

// listImages serves images.list: a project's images by name, paged.
func (s *Server) listImages(w http.ResponseWriter, r *http.Request, project string) error {
	collection := "projects/" + project + "/global/images"
	q, invalid := parseNameQuery(r, collection)
	if err := s.imageCall(r, OpImageList, project, "projects/"+project); err != nil {
		return err
	}
	if invalid != nil {
		return invalid
	}
	l := linksOf(r)
	resp := &computepb.ImageList{
		Kind:     proto.String("compute#imageList"),
		Id:       proto.String(collection),
		SelfLink: proto.String(l.url(collection)),
	}
	var images []keyed[publicImage]
	for _, img := range publicImages {
		if img.project == project {
			images = append(images, keyed[publicImage]{scope: "global", name: img.name, item: img})
		}
	}
	items, next := page(r, collection, q, images)
	resp.NextPageToken = next
	for _, img := range items {
		resp.Items = append(resp.Items, renderImage(l, img.item))
	}
	return writeProto(w, resp)
}

// imageAt is the public image at a stored source image path, if it is
// one.
func imageAt(stored string) (publicImage, bool) {
	rest, ok := (links{}).relative(stored)
	if !ok {
		return publicImage{}, false
	}
	project, name, ok := strings.Cut(strings.TrimPrefix(rest, "projects/"), "/global/images/")
	if !ok || strings.Contains(name, "/") {
		return publicImage{}, false
	}
	return imageNamed(project, name)
}
