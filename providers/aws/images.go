// SPDX-License-Identifier: Apache-2.0

package aws

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// ssmRootDevice is the root device assumed for an image named by an SSM
// parameter ("resolve:ssm:..."), which EC2 resolves only at launch:
// reading the parameter would take SSM's API and permission. The
// parameters gpufleet's default names are the Ubuntu-based Deep Learning
// AMIs, rooted at /dev/sda1, like Ubuntu's own. An image rooted elsewhere
// (Amazon Linux's /dev/xvda) is configured by its AMI id, whose root device
// is read.
const ssmRootDevice = "/dev/sda1"

const ssmImagePrefix = "resolve:ssm:"

// permDescribeImages is what reading an image's root device needs.
const permDescribeImages = "ec2:DescribeImages"

// rootDevices remembers the root device of each image by region: an AMI
// does not change once registered, so each is described once in the
// provider's life.
type rootDevices struct {
	mu     sync.Mutex
	byName map[regionImage]string
}

type regionImage struct{ region, image string }

func (r *rootDevices) get(k regionImage) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	name, ok := r.byName[k]
	return name, ok
}

func (r *rootDevices) put(k regionImage, name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byName == nil {
		r.byName = map[regionImage]string{}
	}
	r.byName[k] = name
}

// image is the AMI configured for a region.
func (p *Provider) image(region string) (string, error) {
	image := p.cfg.Launch.ImageByRegion[region]
	if image == "" {
		image = p.cfg.Launch.Image
	}
	if image == "" {
		return "", fmt.Errorf("no image configured for %s", region)
	}
	return image, nil
}

// rootDevice is the device name of an image's root volume, which a block
// device mapping must name to size it: a mapping on any other name adds a
// second volume and leaves the root at the image's size. Two creates that
// miss the cache at once both describe the image, and agree.
func (p *Provider) rootDevice(ctx context.Context, client *ec2.Client, offer planner.OfferKey, image string) (string, error) {
	if strings.HasPrefix(image, ssmImagePrefix) {
		return ssmRootDevice, nil
	}
	key := regionImage{offer.Region, image}
	if name, ok := p.roots.get(key); ok {
		return name, nil
	}
	invalid := func(format string, args ...any) error {
		return &providers.Error{Kind: providers.KindInvalid, Cloud: catalog.AWS, Op: "create", Offer: offer, Message: fmt.Sprintf(format, args...)}
	}
	callCtx, cancel := p.call(ctx)
	defer cancel()
	out, err := client.DescribeImages(callCtx, &ec2.DescribeImagesInput{ImageIds: []string{image}})
	if err != nil {
		err = classify("create", offer, err)
		if e, ok := errors.AsType[*providers.Error](err); ok && e.Kind == providers.KindAuth && e.Code != "" {
			e.Message = fmt.Sprintf("the credentials lack %s, which sizing the root volume of %s needs: %s", permDescribeImages, image, e.Message)
		}
		return "", err
	}
	var found *types.Image
	for i := range out.Images {
		if awssdk.ToString(out.Images[i].ImageId) == image {
			found = &out.Images[i]
		}
	}
	switch {
	case found == nil:
		return "", invalid("image %s is not available to the account in %s", image, offer.Region)
	case found.RootDeviceType != types.DeviceTypeEbs:
		return "", invalid("image %s has a %s root device, which diskGB cannot size: it takes an EBS-backed image", image, found.RootDeviceType)
	case awssdk.ToString(found.RootDeviceName) == "":
		return "", invalid("image %s names no root device", image)
	}
	name := awssdk.ToString(found.RootDeviceName)
	p.roots.put(key, name)
	return name, nil
}
