// SPDX-License-Identifier: Apache-2.0

package ec2sim_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/gpufleet/gpufleet/providers/sim"
)

const secret = "canary-secret-4711"

func userData(in *ec2.RunInstancesInput, data []byte) *ec2.RunInstancesInput {
	in.UserData = aws.String(base64.StdEncoding.EncodeToString(data))
	return in
}

func readUserData(t *testing.T, c *ec2.Client, id string) []byte {
	t.Helper()
	out, err := c.DescribeInstanceAttribute(context.Background(), &ec2.DescribeInstanceAttributeInput{InstanceId: aws.String(id), Attribute: types.InstanceAttributeNameUserData})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(out.InstanceId) != id || out.UserData == nil {
		t.Fatalf("answer for %s: %+v", aws.ToString(out.InstanceId), out)
	}
	if out.UserData.Value == nil {
		return nil
	}
	data, err := base64.StdEncoding.DecodeString(aws.ToString(out.UserData.Value))
	if err != nil {
		t.Fatalf("user data is not base64: %v", err)
	}
	return data
}

// User data comes back byte for byte, binary too, for every instance of
// the reservation; none reads as empty.
func TestUserDataRoundTrip(t *testing.T) {
	f := newFixture(t, sim.Config{})
	c := f.client("us-east-1", 1)
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	w.Write([]byte("#cloud-config\nruncmd:\n  - echo " + secret + "\n"))
	w.Close()
	for name, data := range map[string][]byte{
		"script":             []byte("#!/bin/bash\necho " + secret + "\n"),
		"gzip":               gz.Bytes(),
		"at the limit":       bytes.Repeat([]byte{'x'}, 16384),
		"one byte, not text": {0xff},
	} {
		t.Run(name, func(t *testing.T) {
			in := userData(runInput("g4dn.xlarge", "us-east-1a", ""), data)
			in.MinCount, in.MaxCount = aws.Int32(3), aws.Int32(3)
			out := mustRun(t, c, in)
			for _, inst := range out.Instances {
				if got := readUserData(t, c, aws.ToString(inst.InstanceId)); !bytes.Equal(got, data) {
					t.Errorf("%s: %d bytes back, want %d", aws.ToString(inst.InstanceId), len(got), len(data))
				}
			}
		})
	}
	t.Run("none", func(t *testing.T) {
		out := mustRun(t, c, runInput("g4dn.xlarge", "us-east-1a", ""))
		if got := readUserData(t, c, aws.ToString(out.Instances[0].InstanceId)); got != nil {
			t.Errorf("an instance launched without user data has %q", got)
		}
	})
	t.Run("base64 across lines", func(t *testing.T) {
		data := []byte(strings.Repeat("#!/bin/sh\n", 20))
		enc := base64.StdEncoding.EncodeToString(data)
		var wrapped strings.Builder
		for len(enc) > 60 {
			wrapped.WriteString(enc[:60] + "\n")
			enc = enc[60:]
		}
		wrapped.WriteString(enc + "\n")
		in := runInput("g4dn.xlarge", "us-east-1a", "")
		in.UserData = aws.String(wrapped.String())
		out := mustRun(t, c, in)
		if got := readUserData(t, c, aws.ToString(out.Instances[0].InstanceId)); !bytes.Equal(got, data) {
			t.Errorf("got %q", got)
		}
	})
}

// EC2 counts its 16 KB limit before base64, and refuses what is not
// base64, in words that never quote the data.
func TestUserDataRefusals(t *testing.T) {
	f := newFixture(t, sim.Config{})
	c := f.client("us-east-1", 1)
	over := bytes.Repeat([]byte(secret), 16385/len(secret)+1)[:16385]
	_, err := c.RunInstances(context.Background(), userData(runInput("g4dn.xlarge", "us-east-1a", ""), over))
	if msg := wantAPIError(t, err, "InvalidParameterValue", 400); msg != "User data is limited to 16384 bytes" {
		t.Errorf("message %q", msg)
	}
	in := runInput("g4dn.xlarge", "us-east-1a", "")
	in.UserData = aws.String("#!/bin/bash\necho " + secret)
	_, err = c.RunInstances(context.Background(), in)
	if msg := wantAPIError(t, err, "InvalidParameterValue", 400); msg != "Invalid BASE64 encoding of user data" {
		t.Errorf("message %q", msg)
	}
	if n := len(f.world.List("aws", nil)); n != 0 {
		t.Errorf("%d instances launched", n)
	}
}

// A ClientToken replay must repeat the user data: another file is another
// request.
func TestUserDataIsPartOfIdempotency(t *testing.T) {
	f := newFixture(t, sim.Config{})
	c := f.client("us-east-1", 1)
	first := mustRun(t, c, userData(runInput("g4dn.xlarge", "us-east-1a", "tok-ud"), []byte("#!/bin/sh\necho one\n")))
	again := mustRun(t, c, userData(runInput("g4dn.xlarge", "us-east-1a", "tok-ud"), []byte("#!/bin/sh\necho one\n")))
	if aws.ToString(again.Instances[0].InstanceId) != aws.ToString(first.Instances[0].InstanceId) {
		t.Error("a replay with the same user data launched again")
	}
	_, err := c.RunInstances(context.Background(), userData(runInput("g4dn.xlarge", "us-east-1a", "tok-ud"), []byte("#!/bin/sh\necho two\n")))
	wantAPIError(t, err, "IdempotentParameterMismatch", 400)
}

// The world keeps a token's parameters in its state file: the user data,
// which holds secrets, is kept there once, on the instance, and only its
// digest with the token.
func TestUserDataIsKeptOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	f := newFixture(t, sim.Config{StatePath: path})
	c := f.client("us-east-1", 1)
	data := []byte("#!/bin/sh\nexport TOKEN=" + secret + "\n")
	mustRun(t, c, userData(runInput("g4dn.xlarge", "us-east-1a", "tok-kept"), data))
	if err := f.world.Save(); err != nil {
		t.Fatal(err)
	}
	state, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	encoded := base64.StdEncoding.EncodeToString(data)
	if n := strings.Count(string(state), encoded); n != 1 {
		t.Errorf("the state file holds the user data %d times, want once", n)
	}
	if strings.Contains(string(state), secret) || strings.Contains(string(state), "UserData="+url.QueryEscape(encoded)) ||
		!strings.Contains(string(state), "UserData=sha256%3A") {
		t.Error("the token's parameters hold the user data, not its digest")
	}
}

func TestDescribeInstanceAttribute(t *testing.T) {
	f := newFixture(t, sim.Config{})
	c := f.client("us-east-1", 1)
	ctx := context.Background()
	id := aws.ToString(mustRun(t, c, runInput("g4dn.xlarge", "us-east-1a", "")).Instances[0].InstanceId)
	describe := func(attr types.InstanceAttributeName) (*ec2.DescribeInstanceAttributeOutput, error) {
		return c.DescribeInstanceAttribute(ctx, &ec2.DescribeInstanceAttributeInput{InstanceId: aws.String(id), Attribute: attr})
	}

	out, err := describe(types.InstanceAttributeNameInstanceType)
	if err != nil || out.InstanceType == nil || aws.ToString(out.InstanceType.Value) != "g4dn.xlarge" {
		t.Errorf("instance type: %+v %v", out, err)
	}
	out, err = describe(types.InstanceAttributeNameRootDeviceName)
	if err != nil || out.RootDeviceName == nil || aws.ToString(out.RootDeviceName.Value) != "/dev/xvda" {
		t.Errorf("root device: %+v %v", out, err)
	}
	out, err = describe(types.InstanceAttributeNameBlockDeviceMapping)
	if err != nil || len(out.BlockDeviceMappings) != 1 || aws.ToString(out.BlockDeviceMappings[0].DeviceName) != "/dev/xvda" ||
		!strings.HasPrefix(aws.ToString(out.BlockDeviceMappings[0].Ebs.VolumeId), "vol-") {
		t.Errorf("block devices: %+v %v", out, err)
	}

	_, err = describe(types.InstanceAttributeNameKernel)
	wantAPIError(t, err, "Unsupported", 400)
	_, err = describe("colour")
	if msg := wantAPIError(t, err, "InvalidParameterValue", 400); msg != "Value (colour) for parameter attribute is invalid. Unknown attribute." {
		t.Errorf("message %q", msg)
	}
	_, err = c.DescribeInstanceAttribute(ctx, &ec2.DescribeInstanceAttributeInput{InstanceId: aws.String("i-0000000000000000f"), Attribute: types.InstanceAttributeNameUserData})
	wantAPIError(t, err, "InvalidInstanceID.NotFound", 400)
	_, err = c.DescribeInstanceAttribute(ctx, &ec2.DescribeInstanceAttributeInput{InstanceId: aws.String("vm-1"), Attribute: types.InstanceAttributeNameUserData})
	wantAPIError(t, err, "InvalidInstanceID.Malformed", 400)
	// Instances are the region's: another region does not know it.
	_, err = f.client("us-west-2", 1).DescribeInstanceAttribute(ctx, &ec2.DescribeInstanceAttributeInput{InstanceId: aws.String(id), Attribute: types.InstanceAttributeNameUserData})
	wantAPIError(t, err, "InvalidInstanceID.NotFound", 400)
}

func TestDescribeImages(t *testing.T) {
	f := newFixture(t, sim.Config{})
	c := f.client("us-east-1", 1)
	ctx := context.Background()
	out, err := c.DescribeImages(ctx, &ec2.DescribeImagesInput{ImageIds: []string{"ami-0123456789abcdef0", "ami-0123456789abcdef1", "ami-0123456789abcdef0", "ami-1234567a"}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"ami-0123456789abcdef0": "/dev/xvda", "ami-0123456789abcdef1": "/dev/sda1", "ami-1234567a": "/dev/xvda"}
	if len(out.Images) != len(want) {
		t.Fatalf("got %d images, want %d", len(out.Images), len(want))
	}
	for _, img := range out.Images {
		id := aws.ToString(img.ImageId)
		if aws.ToString(img.RootDeviceName) != want[id] || img.RootDeviceType != types.DeviceTypeEbs || img.State != types.ImageStateAvailable ||
			len(img.BlockDeviceMappings) != 1 || aws.ToString(img.BlockDeviceMappings[0].DeviceName) != want[id] ||
			aws.ToInt32(img.BlockDeviceMappings[0].Ebs.VolumeSize) != 8 || !strings.HasPrefix(aws.ToString(img.BlockDeviceMappings[0].Ebs.SnapshotId), "snap-") {
			t.Errorf("%s: root %s (%s), state %s, block devices %+v", id, aws.ToString(img.RootDeviceName), img.RootDeviceType, img.State, img.BlockDeviceMappings)
		}
	}

	filtered, err := c.DescribeImages(ctx, &ec2.DescribeImagesInput{
		ImageIds: []string{"ami-0123456789abcdef0", "ami-0123456789abcdef1"},
		Filters:  []types.Filter{{Name: aws.String("root-device-name"), Values: []string{"/dev/sda*"}}},
	})
	if err != nil || len(filtered.Images) != 1 || aws.ToString(filtered.Images[0].ImageId) != "ami-0123456789abcdef1" {
		t.Errorf("filtered: %+v %v", filtered, err)
	}
	none, err := c.DescribeImages(ctx, &ec2.DescribeImagesInput{})
	if err != nil || len(none.Images) != 0 {
		t.Errorf("without ids: %+v %v", none, err)
	}
	_, err = c.DescribeImages(ctx, &ec2.DescribeImagesInput{ImageIds: []string{"ubuntu"}})
	wantAPIError(t, err, "InvalidAMIID.Malformed", 400)
	_, err = c.DescribeImages(ctx, &ec2.DescribeImagesInput{ImageIds: []string{"ami-0123456789abcdef0"}, Filters: []types.Filter{{Name: aws.String("colour"), Values: []string{"x"}}}})
	wantAPIError(t, err, "InvalidParameterValue", 400)
}

func TestMetadataOptions(t *testing.T) {
	f := newFixture(t, sim.Config{})
	c := f.client("us-east-1", 1)
	ctx := context.Background()

	out := mustRun(t, c, runInput("g4dn.xlarge", "us-east-1a", ""))
	m := out.Instances[0].MetadataOptions
	if m == nil || m.State != types.InstanceMetadataOptionsStatePending || m.HttpTokens != types.HttpTokensStateOptional ||
		aws.ToInt32(m.HttpPutResponseHopLimit) != 1 || m.HttpEndpoint != types.InstanceMetadataEndpointStateEnabled {
		t.Errorf("defaults at launch: %+v", m)
	}
	if m := describeOne(t, c, aws.ToString(out.Instances[0].InstanceId)).MetadataOptions; m == nil || m.State != types.InstanceMetadataOptionsStateApplied {
		t.Errorf("described: %+v", m)
	}

	in := runInput("g4dn.xlarge", "us-east-1a", "")
	in.MetadataOptions = &types.InstanceMetadataOptionsRequest{
		HttpTokens: types.HttpTokensStateRequired, HttpEndpoint: types.InstanceMetadataEndpointStateEnabled,
		HttpPutResponseHopLimit: aws.Int32(2), InstanceMetadataTags: types.InstanceMetadataTagsStateEnabled,
	}
	id := aws.ToString(mustRun(t, c, in).Instances[0].InstanceId)
	m = describeOne(t, c, id).MetadataOptions
	if m == nil || m.State != types.InstanceMetadataOptionsStateApplied || m.HttpTokens != types.HttpTokensStateRequired ||
		aws.ToInt32(m.HttpPutResponseHopLimit) != 2 || m.HttpEndpoint != types.InstanceMetadataEndpointStateEnabled ||
		m.InstanceMetadataTags != types.InstanceMetadataTagsStateEnabled || m.HttpProtocolIpv6 != types.InstanceMetadataProtocolStateDisabled {
		t.Errorf("set: %+v", m)
	}
	filtered := describe(t, c, &ec2.DescribeInstancesInput{Filters: []types.Filter{{Name: aws.String("instance-id"), Values: []string{id}}}})
	if len(filtered) != 1 || filtered[0].MetadataOptions.HttpTokens != types.HttpTokensStateRequired {
		t.Errorf("listed: %+v", filtered)
	}

	for name, opts := range map[string]*types.InstanceMetadataOptionsRequest{
		"unknown tokens":     {HttpTokens: "sometimes"},
		"no hops":            {HttpPutResponseHopLimit: aws.Int32(0)},
		"too many hops":      {HttpPutResponseHopLimit: aws.Int32(65)},
		"unknown endpoint":   {HttpEndpoint: "on"},
		"unknown tag access": {InstanceMetadataTags: "yes"},
	} {
		in := runInput("g4dn.xlarge", "us-east-1a", "")
		in.MetadataOptions = opts
		_, err := c.RunInstances(ctx, in)
		if err == nil {
			t.Errorf("%s: launched", name)
			continue
		}
		wantAPIError(t, err, "InvalidParameterValue", 400)
	}
}

func TestInstanceProfile(t *testing.T) {
	f := newFixture(t, sim.Config{})
	if err := f.world.SetAccount(sim.Account{InstanceProfiles: []string{"gpu-node"}}); err != nil {
		t.Fatal(err)
	}
	c := f.client("us-east-1", 1)
	ctx := context.Background()

	in := runInput("g4dn.xlarge", "us-east-1a", "")
	in.IamInstanceProfile = &types.IamInstanceProfileSpecification{Name: aws.String("gpu-node")}
	out := mustRun(t, c, in)
	const arn = "arn:aws:iam::123456789012:instance-profile/gpu-node"
	for _, inst := range []types.Instance{out.Instances[0], describeOne(t, c, aws.ToString(out.Instances[0].InstanceId))} {
		p := inst.IamInstanceProfile
		if p == nil || aws.ToString(p.Arn) != arn || len(aws.ToString(p.Id)) != 21 || !strings.HasPrefix(aws.ToString(p.Id), "AIPA") {
			t.Errorf("by name: %+v", p)
		}
	}

	in = runInput("g4dn.xlarge", "us-east-1a", "")
	const withPath = "arn:aws:iam::123456789012:instance-profile/ml/gpu-node"
	in.IamInstanceProfile = &types.IamInstanceProfileSpecification{Arn: aws.String(withPath)}
	if p := mustRun(t, c, in).Instances[0].IamInstanceProfile; p == nil || aws.ToString(p.Arn) != withPath {
		t.Errorf("by ARN: %+v", p)
	}
	if p := mustRun(t, c, runInput("g4dn.xlarge", "us-east-1a", "")).Instances[0].IamInstanceProfile; p != nil {
		t.Errorf("without a profile: %+v", p)
	}

	for _, spec := range []*types.IamInstanceProfileSpecification{
		{Name: aws.String("gpu node")},
		{Arn: aws.String("arn:aws:iam::123:instance-profile/x")},
		{Arn: aws.String("arn:aws:iam::123456789012:role/gpu-node")},
		// Well formed, but another account's, or one this account lacks.
		{Arn: aws.String("arn:aws:iam::210987654321:instance-profile/ml/gpu-node")},
		{Name: aws.String("cpu-node")},
	} {
		in := runInput("g4dn.xlarge", "us-east-1a", "")
		in.IamInstanceProfile = spec
		_, err := c.RunInstances(ctx, in)
		wantAPIError(t, err, "InvalidParameterValue", 400)
	}
}

// The root volume is the image's, resized by a mapping on its root device
// name; a mapping on another name is a second volume, and the root keeps
// the image's size.
func TestBlockDevices(t *testing.T) {
	f := newFixture(t, sim.Config{})
	c := f.client("us-east-1", 1)
	ctx := context.Background()
	volumes := func(id string) map[string]types.Volume {
		t.Helper()
		out, err := c.DescribeVolumes(ctx, &ec2.DescribeVolumesInput{Filters: []types.Filter{{Name: aws.String("attachment.instance-id"), Values: []string{id}}}})
		if err != nil {
			t.Fatal(err)
		}
		byDevice := map[string]types.Volume{}
		for _, v := range out.Volumes {
			if len(v.Attachments) != 1 || aws.ToString(v.Attachments[0].InstanceId) != id || v.Attachments[0].State != types.VolumeAttachmentStateAttached {
				t.Errorf("volume %s attachments %+v", aws.ToString(v.VolumeId), v.Attachments)
				continue
			}
			byDevice[aws.ToString(v.Attachments[0].Device)] = v
		}
		return byDevice
	}
	mapping := func(device string, size int32) types.BlockDeviceMapping {
		return types.BlockDeviceMapping{DeviceName: aws.String(device), Ebs: &types.EbsBlockDevice{VolumeSize: aws.Int32(size), VolumeType: types.VolumeTypeGp3, DeleteOnTermination: aws.Bool(true)}}
	}

	// ami-…f0 is rooted at /dev/xvda.
	in := runInput("g4dn.xlarge", "us-east-1a", "")
	in.TagSpecifications = []types.TagSpecification{{ResourceType: types.ResourceTypeVolume, Tags: []types.Tag{{Key: aws.String("team"), Value: aws.String("ml")}}}}
	in.BlockDeviceMappings = []types.BlockDeviceMapping{mapping("/dev/xvda", 200)}
	resized := mustRun(t, c, in).Instances[0]
	if aws.ToString(resized.RootDeviceName) != "/dev/xvda" || resized.RootDeviceType != types.DeviceTypeEbs || len(resized.BlockDeviceMappings) != 1 {
		t.Errorf("resized root: %s %s %+v", aws.ToString(resized.RootDeviceName), resized.RootDeviceType, resized.BlockDeviceMappings)
	}
	vols := volumes(aws.ToString(resized.InstanceId))
	if v := vols["/dev/xvda"]; len(vols) != 1 || aws.ToInt32(v.Size) != 200 || v.VolumeType != types.VolumeTypeGp3 || v.State != types.VolumeStateInUse ||
		aws.ToString(v.AvailabilityZone) != "us-east-1a" || len(v.Tags) != 1 || aws.ToString(v.Tags[0].Value) != "ml" {
		t.Errorf("resized root volume: %+v", vols)
	}

	// A mapping on /dev/sda1 does not reach this image's root.
	in = runInput("g4dn.xlarge", "us-east-1a", "")
	in.BlockDeviceMappings = []types.BlockDeviceMapping{{DeviceName: aws.String("/dev/sda1"), Ebs: &types.EbsBlockDevice{VolumeSize: aws.Int32(200)}}}
	missed := mustRun(t, c, in).Instances[0]
	vols = volumes(aws.ToString(missed.InstanceId))
	if len(vols) != 2 || aws.ToInt32(vols["/dev/xvda"].Size) != 8 || aws.ToInt32(vols["/dev/sda1"].Size) != 200 {
		t.Errorf("mapping beside the root: %+v", vols)
	}
	if len(missed.BlockDeviceMappings) != 2 {
		t.Errorf("instance block devices %+v", missed.BlockDeviceMappings)
	}

	// An image rooted at /dev/sda1.
	in = runInput("g4dn.xlarge", "us-east-1a", "")
	in.ImageId = aws.String("ami-0123456789abcdef1")
	in.BlockDeviceMappings = []types.BlockDeviceMapping{mapping("/dev/sda1", 300)}
	ubuntu := mustRun(t, c, in).Instances[0]
	if aws.ToString(ubuntu.RootDeviceName) != "/dev/sda1" || aws.ToInt32(volumes(aws.ToString(ubuntu.InstanceId))["/dev/sda1"].Size) != 300 {
		t.Errorf("sda1 root: %s %+v", aws.ToString(ubuntu.RootDeviceName), ubuntu.BlockDeviceMappings)
	}

	// An ended instance's root goes with it; the second volume, deleted
	// on termination only when asked, stays, detached.
	kept := aws.ToString(vols["/dev/sda1"].VolumeId)
	if _, err := c.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{aws.ToString(missed.InstanceId)}}); err != nil {
		t.Fatal(err)
	}
	if got := describeOne(t, c, aws.ToString(missed.InstanceId)); len(got.BlockDeviceMappings) != 0 {
		t.Errorf("a terminated instance lists block devices %+v", got.BlockDeviceMappings)
	}
	out, err := c.DescribeVolumes(ctx, &ec2.DescribeVolumesInput{VolumeIds: []string{kept}})
	if err != nil || len(out.Volumes) != 1 || out.Volumes[0].State != types.VolumeStateAvailable || len(out.Volumes[0].Attachments) != 0 {
		t.Errorf("kept volume: %+v %v", out, err)
	}
	_, err = c.DescribeVolumes(ctx, &ec2.DescribeVolumesInput{VolumeIds: []string{aws.ToString(vols["/dev/xvda"].VolumeId)}})
	wantAPIError(t, err, "InvalidVolume.NotFound", 400)

	for name, tt := range map[string]struct {
		mappings []types.BlockDeviceMapping
		code     string
	}{
		"root below the snapshot": {[]types.BlockDeviceMapping{mapping("/dev/xvda", 4)}, "InvalidBlockDeviceMapping"},
		"device twice":            {[]types.BlockDeviceMapping{mapping("/dev/sdf", 10), mapping("/dev/sdf", 20)}, "InvalidBlockDeviceMapping"},
		"unknown volume type":     {[]types.BlockDeviceMapping{{DeviceName: aws.String("/dev/sdf"), Ebs: &types.EbsBlockDevice{VolumeSize: aws.Int32(10), VolumeType: "floppy"}}}, "InvalidParameterValue"},
		"no size":                 {[]types.BlockDeviceMapping{{DeviceName: aws.String("/dev/sdf"), Ebs: &types.EbsBlockDevice{VolumeType: types.VolumeTypeGp3}}}, "MissingParameter"},
	} {
		in := runInput("g4dn.xlarge", "us-east-1a", "")
		in.BlockDeviceMappings = tt.mappings
		_, err := c.RunInstances(ctx, in)
		if err == nil {
			t.Errorf("%s: launched", name)
			continue
		}
		wantAPIError(t, err, tt.code, 400)
	}
}

func TestDescribeVolumesPages(t *testing.T) {
	f := newFixture(t, sim.Config{})
	c := f.client("us-east-1", 1)
	in := runInput("g4dn.xlarge", "us-east-1a", "")
	in.MinCount, in.MaxCount = aws.Int32(7), aws.Int32(7)
	mustRun(t, c, in)
	seen := map[string]bool{}
	pages := 0
	p := ec2.NewDescribeVolumesPaginator(c, &ec2.DescribeVolumesInput{MaxResults: aws.Int32(5)})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, v := range page.Volumes {
			seen[aws.ToString(v.VolumeId)] = true
		}
	}
	if len(seen) != 7 || pages != 2 {
		t.Errorf("%d volumes in %d pages, want 7 in 2", len(seen), pages)
	}
	ctx := context.Background()
	_, err := c.DescribeVolumes(ctx, &ec2.DescribeVolumesInput{VolumeIds: []string{"disk-1"}})
	wantAPIError(t, err, "InvalidVolumeID.Malformed", 400)
	_, err = c.DescribeVolumes(ctx, &ec2.DescribeVolumesInput{MaxResults: aws.Int32(2)})
	wantAPIError(t, err, "InvalidParameterValue", 400)
	_, err = c.DescribeVolumes(ctx, &ec2.DescribeVolumesInput{Filters: []types.Filter{{Name: aws.String("colour"), Values: []string{"x"}}}})
	wantAPIError(t, err, "InvalidParameterValue", 400)
}
