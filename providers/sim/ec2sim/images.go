// SPDX-License-Identifier: Apache-2.0

package ec2sim

import (
	"encoding/xml"
	"strings"
)

// The front keeps no catalog of images: every well-formed AMI id names an
// image, EBS-backed, whose root device follows from the id so that both
// kinds of Linux images are met. An id whose last hex digit is even is
// Amazon Linux's kind, rooted at /dev/xvda; an odd one Ubuntu's (and the
// Deep Learning AMIs'), rooted at /dev/sda1. A launch's "resolve:ssm:"
// image is resolved to an AMI id first (ssm.go).
const (
	rootXVDA = "/dev/xvda"
	rootSDA1 = "/dev/sda1"
	// imageRootGiB is the size of every image's root snapshot, the
	// smallest root volume a launch from it may ask for.
	imageRootGiB = 8
	// imageCreated is when every image was registered.
	imageCreated = "2026-01-01T00:00:00.000Z"
)

// rootDeviceOf is an image's root device name.
func rootDeviceOf(image string) string {
	if !amiID.MatchString(image) {
		return rootSDA1
	}
	if strings.IndexByte("02468ace", image[len(image)-1]) >= 0 {
		return rootXVDA
	}
	return rootSDA1
}

// rootSnapshot is the snapshot an image's root volume is made from.
func rootSnapshot(image string) string { return hashID("snap", image) }

type imageEbsXML struct {
	SnapshotID          string `xml:"snapshotId"`
	VolumeSize          int    `xml:"volumeSize"`
	DeleteOnTermination bool   `xml:"deleteOnTermination"`
	VolumeType          string `xml:"volumeType"`
	Encrypted           bool   `xml:"encrypted"`
}

type imageBlockDeviceXML struct {
	DeviceName string      `xml:"deviceName"`
	Ebs        imageEbsXML `xml:"ebs"`
}

type imageXML struct {
	ImageID            string                `xml:"imageId"`
	ImageLocation      string                `xml:"imageLocation"`
	ImageState         string                `xml:"imageState"`
	ImageOwnerID       string                `xml:"imageOwnerId"`
	CreationDate       string                `xml:"creationDate"`
	IsPublic           bool                  `xml:"isPublic"`
	Architecture       string                `xml:"architecture"`
	ImageType          string                `xml:"imageType"`
	PlatformDetails    string                `xml:"platformDetails"`
	UsageOperation     string                `xml:"usageOperation"`
	Name               string                `xml:"name"`
	RootDeviceType     string                `xml:"rootDeviceType"`
	RootDeviceName     string                `xml:"rootDeviceName"`
	BlockDevices       []imageBlockDeviceXML `xml:"blockDeviceMapping>item"`
	VirtualizationType string                `xml:"virtualizationType"`
	Hypervisor         string                `xml:"hypervisor"`
	EnaSupport         bool                  `xml:"enaSupport"`
}

type describeImagesResponse struct {
	XMLName   xml.Name   `xml:"DescribeImagesResponse"`
	Xmlns     string     `xml:"xmlns,attr"`
	RequestID string     `xml:"requestId"`
	Images    []imageXML `xml:"imagesSet>item"`
}

// imageFilters gives an image's values for each filter DescribeImages
// understands here.
var imageFilters = map[string]func(x imageXML) []string{
	"architecture":        func(x imageXML) []string { return []string{x.Architecture} },
	"image-id":            func(x imageXML) []string { return []string{x.ImageID} },
	"root-device-name":    func(x imageXML) []string { return []string{x.RootDeviceName} },
	"root-device-type":    func(x imageXML) []string { return []string{x.RootDeviceType} },
	"state":               func(x imageXML) []string { return []string{x.ImageState} },
	"virtualization-type": func(x imageXML) []string { return []string{x.VirtualizationType} },
}

// describeImages describes the images asked for by id. Without ids it
// lists none: the front has no catalog of public images to list, and the
// account registered none of its own.
func (s *Server) describeImages(req *request) (any, *apiError) {
	if apiErr := s.admit(req); apiErr != nil {
		return nil, apiErr
	}
	fs, apiErr := knownFilters(req.form, imageFilters, false)
	if apiErr != nil {
		return nil, apiErr
	}
	ids := unique(list(req.form, "ImageId"))
	for _, id := range ids {
		if !amiID.MatchString(id) {
			return nil, malformedImage(id)
		}
	}
	out := describeImagesResponse{Xmlns: xmlns, RequestID: req.id}
	for _, id := range ids {
		x := s.renderImage(id)
		if matchesTable(x, fs, imageFilters) {
			out.Images = append(out.Images, x)
		}
	}
	return out, nil
}

func malformedImage(id string) *apiError {
	return malformedID("InvalidAMIID.Malformed", id, "ami")
}

func (s *Server) renderImage(id string) imageXML {
	root := rootDeviceOf(id)
	name := "gpufleet-sim-ubuntu-" + id
	if root == rootXVDA {
		name = "gpufleet-sim-al2023-" + id
	}
	return imageXML{
		ImageID:         id,
		ImageLocation:   s.opts.AccountID + "/" + name,
		ImageState:      "available",
		ImageOwnerID:    s.opts.AccountID,
		CreationDate:    imageCreated,
		Architecture:    "x86_64",
		ImageType:       "machine",
		PlatformDetails: "Linux/UNIX",
		UsageOperation:  "RunInstances",
		Name:            name,
		RootDeviceType:  "ebs",
		RootDeviceName:  root,
		BlockDevices: []imageBlockDeviceXML{{DeviceName: root, Ebs: imageEbsXML{
			SnapshotID: rootSnapshot(id), VolumeSize: imageRootGiB, DeleteOnTermination: true, VolumeType: "gp3",
		}}},
		VirtualizationType: "hvm",
		Hypervisor:         "xen",
		EnaSupport:         true,
	}
}
