// SPDX-License-Identifier: Apache-2.0

package gcesim

import (
	"context"
	"net/http"
	"testing"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"

	"github.com/gpufleet/gpufleet/providers/sim"
)

// Public images are served by name, by family and by a family's zonal
// view, which is how gcloud names them.
func TestPublicImages(t *testing.T) {
	f := newFixture(t, sim.Config{}, Options{})
	ctx := context.Background()
	images := client(t, f, compute.NewImagesRESTClient)
	views := client(t, f, compute.NewImageFamilyViewsRESTClient)

	fam, err := images.GetFromFamily(ctx, &computepb.GetFromFamilyImageRequest{Project: "debian-cloud", Family: "debian-12"})
	if err != nil {
		t.Fatal(err)
	}
	if fam.GetName() != "debian-12-bookworm-v20250610" || fam.GetStatus() != "READY" || fam.GetDiskSizeGb() != 10 ||
		fam.GetSelfLink() != f.link("projects/debian-cloud/global/images/debian-12-bookworm-v20250610") ||
		len(fam.GetLicenses()) != 1 || fam.GetLicenses()[0] != f.link("projects/debian-cloud/global/licenses/debian-12-bookworm") {
		t.Errorf("debian-12: %v", fam)
	}
	byName, err := images.Get(ctx, &computepb.GetImageRequest{Project: "debian-cloud", Image: fam.GetName()})
	if err != nil || byName.GetId() != fam.GetId() {
		t.Errorf("images.get: %v, %v", byName, err)
	}
	view, err := views.Get(ctx, &computepb.GetImageFamilyViewRequest{Project: "debian-cloud", Zone: zone, Family: "debian-12"})
	if err != nil || view.GetImage().GetName() != fam.GetName() {
		t.Errorf("imageFamilyViews.get: %v, %v", view, err)
	}
	_, err = images.GetFromFamily(ctx, &computepb.GetFromFamilyImageRequest{Project: "debian-cloud", Family: "debian-99"})
	wantAPIError(t, err, http.StatusNotFound, "notFound", "The resource 'projects/debian-cloud/global/images/family/debian-99' was not found")
	listed := all(t, images.List(ctx, &computepb.ListImagesRequest{Project: "debian-cloud", MaxResults: proto.Uint32(1)}).Next)
	if len(listed) != 2 || listed[0].GetName() != "debian-11-bullseye-v20250610" {
		t.Errorf("debian-cloud lists %d images, first %s", len(listed), listed[0].GetName())
	}
}

// A boot disk's public image must exist, and the disk be no smaller than
// it; an image of the user's own project is taken on trust.
func TestBootDiskImages(t *testing.T) {
	f := newFixture(t, sim.Config{}, Options{})
	ctx := context.Background()
	tests := []struct {
		name, image string
		sizeGb      int64
		wantSize    int64
		wantImage   string
		status      int
		message     string
	}{
		{"family", "projects/debian-cloud/global/images/family/debian-12", 0, 10, "projects/debian-cloud/global/images/debian-12-bookworm-v20250610", 0, ""},
		{"family view", f.link("projects/debian-cloud/zones/-/imageFamilyViews/debian-12"), 0, 10, "projects/debian-cloud/global/images/debian-12-bookworm-v20250610", 0, ""},
		{"by name", "https://www.googleapis.com/compute/v1/projects/cos-cloud/global/images/cos-stable-121-18867-90-8", 20, 20, "projects/cos-cloud/global/images/cos-stable-121-18867-90-8", 0, ""},
		{"a larger image", "projects/deeplearning-platform-release/global/images/family/common-cu124-ubuntu-2204", 0, 50,
			"projects/deeplearning-platform-release/global/images/common-cu124-v20250325-ubuntu-2204-py310", 0, ""},
		{"own project", "global/images/golden", 0, 10, "projects/gpufleet-test/global/images/golden", 0, ""},
		{"unknown public family", "projects/ubuntu-os-cloud/global/images/family/ubuntu-1404-lts", 0, 0, "", 404,
			"The resource 'projects/ubuntu-os-cloud/global/images/family/ubuntu-1404-lts' was not found"},
		{"too small", "projects/deeplearning-platform-release/global/images/family/common-cu124-ubuntu-2204", 20, 0, "", 400,
			"Invalid value for field 'resource.disks[0].initializeParams.diskSizeGb': '20'. Requested disk size cannot be smaller than the image size (50 GB)"},
		{"malformed", "projects/debian-cloud/images/debian-12", 0, 0, "", 400,
			"Invalid value for field 'resource.disks[0].initializeParams.sourceImage': 'projects/debian-cloud/images/debian-12'. The URL is malformed."},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := vm{name: "img-" + string(rune('a'+i))}.request()
			init := req.InstanceResource.Disks[0].InitializeParams
			init.SourceImage = proto.String(tt.image)
			init.DiskSizeGb = nil
			if tt.sizeGb != 0 {
				init.DiskSizeGb = proto.Int64(tt.sizeGb)
			}
			op, err := f.instances.Insert(ctx, req)
			if tt.status != 0 {
				reason := map[int]string{404: "notFound", 400: "invalid"}[tt.status]
				wantAPIError(t, err, tt.status, reason, tt.message)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := op.Wait(ctx); err != nil {
				t.Fatal(err)
			}
			disk := f.disk(t, req.InstanceResource.GetName())
			if disk.GetSizeGb() != tt.wantSize || disk.GetSourceImage() != f.link(tt.wantImage) {
				t.Errorf("disk of %d GB from %s, want %d GB from %s", disk.GetSizeGb(), disk.GetSourceImage(), tt.wantSize, tt.wantImage)
			}
		})
	}
}
