// SPDX-License-Identifier: Apache-2.0

package ec2sim

import (
	"fmt"
	"net/http"
	"strings"
)

// ssmImagePrefix names an image by an SSM parameter that holds its id,
// which EC2 resolves at launch: the instance runs, and is described with,
// the AMI the parameter held.
const ssmImagePrefix = "resolve:ssm:"

// publicParameters are the public SSM parameters AWS publishes for the
// images GPU nodes boot, each with the kind of image it holds: every
// account may read them, in every region, and each region's holds that
// region's own AMI.
var publicParameters = map[string]string{
	"/aws/service/deeplearning/ami/x86_64/base-oss-nvidia-driver-gpu-ubuntu-22.04/latest/ami-id":      rootSDA1,
	"/aws/service/deeplearning/ami/x86_64/base-oss-nvidia-driver-gpu-ubuntu-24.04/latest/ami-id":      rootSDA1,
	"/aws/service/deeplearning/ami/x86_64/base-oss-nvidia-driver-gpu-amazon-linux-2023/latest/ami-id": rootXVDA,
	"/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64":                           rootXVDA,
	"/aws/service/eks/optimized-ami/1.33/amazon-linux-2023/x86_64/nvidia/recommended/image_id":        rootXVDA,
	"/aws/service/canonical/ubuntu/server/22.04/stable/current/amd64/hvm/ebs-gp2/ami-id":              rootSDA1,
	"/aws/service/canonical/ubuntu/server/24.04/stable/current/amd64/hvm/ebs-gp3/ami-id":              rootSDA1,
}

// resolveImage is the AMI a launch's image names: an AMI id is itself; a
// resolve:ssm: parameter is the id it holds in the region, one of AWS's
// public parameters or one the account created. The parameter may be
// named by its ARN, and carry a version or label after a colon, which the
// front accepts and reads as the latest.
func (s *Server) resolveImage(region, image string) (string, *apiError) {
	ref, ok := strings.CutPrefix(image, ssmImagePrefix)
	if !ok {
		if !amiID.MatchString(image) {
			return "", malformedImage(image)
		}
		return image, nil
	}
	name := ref
	if arn, ok := strings.CutPrefix(ref, "arn:"); ok {
		// arn:PARTITION:ssm:REGION:ACCOUNT:parameter/NAME
		parts := strings.SplitN(arn, ":", 5)
		if len(parts) < 5 || parts[1] != "ssm" || !strings.HasPrefix(parts[4], "parameter/") {
			return "", unresolvedParameter(image)
		}
		name = "/" + strings.TrimPrefix(parts[4], "parameter/")
	}
	if i := strings.LastIndexByte(name, ':'); i > 0 {
		name = name[:i]
	}
	if root, ok := publicParameters[name]; ok {
		return regionalAMI(region, name, root), nil
	}
	if id, ok := s.world.SSMParameter(name); ok && amiID.MatchString(id) {
		return id, nil
	}
	return "", unresolvedParameter(image)
}

// regionalAMI is the id a public parameter holds in a region, derived so
// that every answer agrees, with its last digit's parity the image's root
// device (see rootDeviceOf).
func regionalAMI(region, name, root string) string {
	id := []byte(hashID("ami", region+"|"+name))
	last := strings.IndexByte("0123456789abcdef", id[len(id)-1])
	even := last%2 == 0
	if even != (root == rootXVDA) {
		id[len(id)-1] = "0123456789abcdef"[last^1]
	}
	return string(id)
}

func unresolvedParameter(image string) *apiError {
	return &apiError{Status: http.StatusBadRequest, Code: "InvalidParameterValue", Message: fmt.Sprintf(
		"Invalid value '%s' for ImageId. The SSM parameter does not exist, or you do not have permission to read it.", image)}
}
