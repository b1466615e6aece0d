// SPDX-License-Identifier: Apache-2.0

package aws

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/schema"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// canary stands for a secret the bootstrap file carries: it must reach the
// node and nothing else.
const canary = "canary-secret-4711"

func bootstrap(data string) *providers.Bootstrap {
	return &providers.Bootstrap{Format: schema.BootstrapCloudInit, Data: []byte(data), Digest: "0123456789ab"}
}

const cloudConfig = "#cloud-config\nwrite_files:\n  - path: /etc/gpufleet/join-token\n    permissions: '0600'\n    content: " + canary + "\n"

// launchBackend is a backend whose provider launches nodes as production
// does: a bootstrap file, an instance profile, IMDSv2 only, a sized root.
func launchProvider(t *testing.T, b backend, configure func(*schema.AWS)) *Provider {
	t.Helper()
	cfg := b.config()
	cfg.Launch.InstanceProfile = "gpu-node"
	cfg.Launch.IMDS = "required"
	if b.world != nil {
		// The emulator, like EC2, launches only as a profile the account
		// has (moto's cases create theirs through IAM).
		account := b.world.Account()
		if !slices.Contains(account.InstanceProfiles, "gpu-node") {
			account.InstanceProfiles = append(account.InstanceProfiles, "gpu-node")
			if err := b.world.SetAccount(account); err != nil {
				t.Fatal(err)
			}
		}
	}
	if configure != nil {
		configure(cfg)
	}
	p, err := New(context.Background(), cfg, catalog.Default(), b.options())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// node is what EC2 says about a launched instance, read past the provider
// with the SDK's own client.
type node struct {
	inst     types.Instance
	userData []byte
	root     string // the image's root device, by DescribeImages
	volumes  map[string]types.Volume
}

func readNode(t *testing.T, b backend, region, id string) node {
	t.Helper()
	ctx := context.Background()
	c := b.raw(region)
	out, err := c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Reservations) != 1 || len(out.Reservations[0].Instances) != 1 {
		t.Fatalf("DescribeInstances(%s) gave %d reservations", id, len(out.Reservations))
	}
	n := node{inst: out.Reservations[0].Instances[0], volumes: map[string]types.Volume{}}

	attr, err := c.DescribeInstanceAttribute(ctx, &ec2.DescribeInstanceAttributeInput{InstanceId: awssdk.String(id), Attribute: types.InstanceAttributeNameUserData})
	if err != nil {
		t.Fatal(err)
	}
	if attr.UserData != nil && attr.UserData.Value != nil {
		if n.userData, err = base64.StdEncoding.DecodeString(awssdk.ToString(attr.UserData.Value)); err != nil {
			t.Fatalf("user data is not base64: %v", err)
		}
	}

	images, err := c.DescribeImages(ctx, &ec2.DescribeImagesInput{ImageIds: []string{awssdk.ToString(n.inst.ImageId)}})
	if err != nil {
		t.Fatal(err)
	}
	if len(images.Images) != 1 {
		t.Fatalf("DescribeImages(%s) gave %d images", awssdk.ToString(n.inst.ImageId), len(images.Images))
	}
	n.root = awssdk.ToString(images.Images[0].RootDeviceName)

	var ids []string
	for _, m := range n.inst.BlockDeviceMappings {
		if m.Ebs != nil {
			ids = append(ids, awssdk.ToString(m.Ebs.VolumeId))
		}
	}
	if len(ids) > 0 {
		vols, err := c.DescribeVolumes(ctx, &ec2.DescribeVolumesInput{VolumeIds: ids})
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range vols.Volumes {
			n.volumes[awssdk.ToString(v.VolumeId)] = v
		}
	}
	return n
}

// checkLaunched checks that a node carries what the provider was configured
// to give it.
func checkLaunched(t *testing.T, n node, data []byte, diskGB int) {
	t.Helper()
	id := awssdk.ToString(n.inst.InstanceId)
	if !bytes.Equal(n.userData, data) {
		t.Errorf("%s: user data reads back as %d bytes, want the %d of the bootstrap file", id, len(n.userData), len(data))
	}
	if p := n.inst.IamInstanceProfile; p == nil || !strings.HasPrefix(awssdk.ToString(p.Arn), "arn:aws:iam::") ||
		!strings.HasSuffix(awssdk.ToString(p.Arn), ":instance-profile/gpu-node") || awssdk.ToString(p.Id) == "" {
		t.Errorf("%s: instance profile %+v, want gpu-node's ARN and id", id, p)
	}
	if m := n.inst.MetadataOptions; m == nil || m.HttpTokens != types.HttpTokensStateRequired ||
		m.HttpEndpoint != types.InstanceMetadataEndpointStateEnabled || awssdk.ToInt32(m.HttpPutResponseHopLimit) != 2 {
		t.Errorf("%s: metadata options %+v, want IMDSv2 required, enabled, two hops", id, m)
	}
	if n.root == "" || awssdk.ToString(n.inst.RootDeviceName) != n.root || n.inst.RootDeviceType != types.DeviceTypeEbs {
		t.Errorf("%s: root device %q (%s), the image's is %q", id, awssdk.ToString(n.inst.RootDeviceName), n.inst.RootDeviceType, n.root)
	}
	// One volume, the root, at the configured size: a mapping on another
	// device name would have added a second and left the root small.
	if len(n.inst.BlockDeviceMappings) != 1 {
		t.Fatalf("%s: %d block devices, want the root only: %+v", id, len(n.inst.BlockDeviceMappings), n.inst.BlockDeviceMappings)
	}
	m := n.inst.BlockDeviceMappings[0]
	if awssdk.ToString(m.DeviceName) != n.root || m.Ebs == nil || !awssdk.ToBool(m.Ebs.DeleteOnTermination) {
		t.Errorf("%s: block device %s %+v, want the root %s, deleted with the node", id, awssdk.ToString(m.DeviceName), m.Ebs, n.root)
	}
	if m.Ebs != nil {
		v, ok := n.volumes[awssdk.ToString(m.Ebs.VolumeId)]
		if !ok || int(awssdk.ToInt32(v.Size)) != diskGB || v.VolumeType != types.VolumeTypeGp3 {
			t.Errorf("%s: root volume %s is %d GiB %s, want %d GiB gp3", id, awssdk.ToString(m.Ebs.VolumeId), awssdk.ToInt32(v.Size), v.VolumeType, diskGB)
		}
	}
	tags := tagMap(n.inst.Tags)
	if tags[providers.TagBootstrap] != "0123456789ab" {
		t.Errorf("%s: tag %s = %q, want the bootstrap file's digest", id, providers.TagBootstrap, tags[providers.TagBootstrap])
	}
	for k, v := range tags {
		if strings.Contains(k+v, canary) {
			t.Errorf("%s: tag %s carries the secret", id, k)
		}
	}
}

// A node launched with a bootstrap file, an instance profile and IMDSv2
// carries all of them, as EC2 reports them to anyone who looks.
func TestLaunchCarriesBootstrapProfileAndIMDS(t *testing.T) {
	for name, b := range map[string]func(*testing.T) backend{
		"emulator": func(t *testing.T) backend { return emulator(t, catalog.Default()) },
		"moto":     moto,
	} {
		t.Run(name, func(t *testing.T) {
			b := b(t)
			if b.world == nil {
				// moto checks that the profile exists, as EC2 and the
				// emulator do.
				createInstanceProfile(t, b, "gpu-node")
			}
			p := launchProvider(t, b, nil)
			offer := testOffer
			req := request(offer, "gf1-bootstrap")
			req.Bootstrap = bootstrap(cloudConfig)
			inst, err := p.Create(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			checkLaunched(t, readNode(t, b, offer.Region, inst.ID), req.Bootstrap.Data, b.config().Launch.DiskGB)
		})
	}
}

// createInstanceProfile creates an IAM instance profile on moto, which
// serves IAM on the same endpoint, told apart by the credential scope.
func createInstanceProfile(t *testing.T, b backend, name string) {
	t.Helper()
	form := url.Values{"Action": {"CreateInstanceProfile"}, "Version": {"2010-05-08"}, "InstanceProfileName": {name}}
	req, err := http.NewRequest(http.MethodPost, b.url+"/", strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=AKIDTEST/20260101/us-east-1/iam/aws4_request, SignedHeaders=host, Signature=00")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("creating instance profile %s on moto: %d %s", name, resp.StatusCode, body)
	}
}

// Every node of a batch gets the batch's bootstrap file, profile and
// settings: one RunInstances carries them for all.
func TestCreateBatchCarriesBootstrapToEveryNode(t *testing.T) {
	b := emulator(t, catalog.Default())
	p := launchProvider(t, b, nil)
	req := batch(testOffer, 0, 5)
	req.Bootstrap = bootstrap("#!/bin/bash\nexport JOIN_TOKEN=" + canary + "\n/opt/gpufleet/join\n")
	insts, err := p.CreateBatch(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if len(insts) != 5 {
		t.Fatalf("launched %d, want 5", len(insts))
	}
	for _, inst := range insts {
		checkLaunched(t, readNode(t, b, testOffer.Region, inst.ID), req.Bootstrap.Data, b.config().Launch.DiskGB)
	}
}

// A bootstrap file over EC2's limit is an invalid request, refused before
// any launch, and the error never quotes the file.
func TestOversizeUserDataIsInvalidAndNotQuoted(t *testing.T) {
	b := emulator(t, catalog.Default())
	p := launchProvider(t, b, nil)
	data := strings.Repeat(canary+"\n", 17000/(len(canary)+1)+1)[:17000]
	req := request(testOffer, "gf1-oversize")
	req.Bootstrap = bootstrap(data)
	before := b.world.Calls()["aws RunInstances"]
	_, err := p.Create(context.Background(), req)
	if !errors.Is(err, providers.ErrInvalid) {
		t.Fatalf("got %v, want an invalid request", err)
	}
	if strings.Contains(err.Error(), canary) {
		t.Errorf("the error quotes the bootstrap file: %v", err)
	}
	if n := b.world.Calls()["aws RunInstances"] - before; n != 0 {
		t.Errorf("%d RunInstances calls sent the file, want none", n)
	}
	if n := len(b.world.List(catalog.AWS, nil)); n != 0 {
		t.Errorf("%d instances launched", n)
	}

	// Should the file reach EC2 all the same, its refusal is classified as
	// invalid too, and EC2's message does not quote it either.
	_, err = b.raw(testOffer.Region).RunInstances(context.Background(), &ec2.RunInstancesInput{
		ImageId: awssdk.String(b.image), InstanceType: types.InstanceType(testOffer.InstanceType),
		MinCount: awssdk.Int32(1), MaxCount: awssdk.Int32(1),
		UserData: awssdk.String(base64.StdEncoding.EncodeToString([]byte(data))),
	})
	err = classify("create", testOffer, err)
	if !errors.Is(err, providers.ErrInvalid) || strings.Contains(err.Error(), canary) {
		t.Errorf("EC2's refusal reads %v, want an invalid request that does not quote the file", err)
	}
}

// The root volume is sized on the device the image boots from, which
// DescribeImages gives once per image and region; an image named by SSM
// parameter is taken to be rooted at /dev/sda1 without a look-up.
func TestRootDeviceIsTheImages(t *testing.T) {
	b := emulator(t, catalog.Default())
	const sda1Image = "ami-0fedcba9876543211" // an odd last digit: rooted at /dev/sda1 in the emulator
	west := planner.OfferKey{Cloud: catalog.AWS, Region: "us-west-2", Zone: "us-west-2a", InstanceType: "g4dn.xlarge", Market: catalog.OnDemand}
	p := launchProvider(t, b, func(cfg *schema.AWS) {
		cfg.Launch.ImageByRegion = map[string]string{"us-west-2": sda1Image}
	})
	ctx := context.Background()
	roots := map[string]string{}
	for i, offer := range []planner.OfferKey{testOffer, testOffer, west, west} {
		inst, err := p.Create(ctx, request(offer, "gf1-root-"+string(rune('a'+i))))
		if err != nil {
			t.Fatal(err)
		}
		n := readNode(t, b, offer.Region, inst.ID)
		roots[offer.Region] = n.root
		if len(n.inst.BlockDeviceMappings) != 1 || awssdk.ToString(n.inst.BlockDeviceMappings[0].DeviceName) != n.root {
			t.Errorf("%s in %s: block devices %+v, want the root %s only", inst.ID, offer.Region, n.inst.BlockDeviceMappings, n.root)
		}
	}
	if roots["us-east-1"] != "/dev/xvda" || roots["us-west-2"] != "/dev/sda1" {
		t.Errorf("roots %v: want the two kinds of image", roots)
	}
	// Two images, one look-up each, although readNode described them too.
	before := b.world.Calls()["aws DescribeImages"]
	if _, err := p.Create(ctx, request(west, "gf1-root-cached")); err != nil {
		t.Fatal(err)
	}
	if n := b.world.Calls()["aws DescribeImages"] - before; n != 0 {
		t.Errorf("a create of a known image made %d DescribeImages calls, want none", n)
	}

	ssm := launchProvider(t, b, func(cfg *schema.AWS) {
		cfg.Launch.Image = "resolve:ssm:/aws/service/deeplearning/ami/x86_64/base-oss-nvidia-driver-gpu-ubuntu-22.04/latest/ami-id"
	})
	before = b.world.Calls()["aws DescribeImages"]
	inst, err := ssm.Create(ctx, request(testOffer, "gf1-root-ssm"))
	if err != nil {
		t.Fatal(err)
	}
	if n := b.world.Calls()["aws DescribeImages"] - before; n != 0 {
		t.Errorf("an SSM image cost %d DescribeImages calls, want none", n)
	}
	out, err := b.raw(testOffer.Region).DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{inst.ID}})
	if err != nil {
		t.Fatal(err)
	}
	got := out.Reservations[0].Instances[0]
	if awssdk.ToString(got.RootDeviceName) != "/dev/sda1" || len(got.BlockDeviceMappings) != 1 || awssdk.ToString(got.BlockDeviceMappings[0].DeviceName) != "/dev/sda1" {
		t.Errorf("root %s, block devices %+v", awssdk.ToString(got.RootDeviceName), got.BlockDeviceMappings)
	}
}

// An image that cannot be read fails the create as an invalid request,
// naming the image, before anything launches.
func TestUnreadableImageIsInvalid(t *testing.T) {
	b := emulator(t, catalog.Default())
	p := launchProvider(t, b, func(cfg *schema.AWS) { cfg.Launch.Image = "ami-nope" })
	_, err := p.Create(context.Background(), request(testOffer, "gf1-bad-image"))
	if !errors.Is(err, providers.ErrInvalid) || !strings.Contains(err.Error(), "ami-nope") {
		t.Errorf("got %v, want an invalid request naming the image", err)
	}
	if n := b.world.Calls()["aws RunInstances"]; n != 0 {
		t.Errorf("%d RunInstances calls", n)
	}
}

func TestRunInputLaunchSettings(t *testing.T) {
	b := backend{regions: []string{"us-east-1"}, image: "ami-0123456789abcdef0"}
	for _, tt := range []struct {
		name, profile, imds string
		bootstrap           *providers.Bootstrap
		wantArn, wantName   string
		wantTokens          types.HttpTokensState
		wantErr             bool
	}{
		{name: "defaults", wantTokens: types.HttpTokensStateRequired},
		{name: "profile by name", profile: "gpu-node", imds: "required", wantName: "gpu-node", wantTokens: types.HttpTokensStateRequired},
		{name: "profile by ARN", profile: "arn:aws:iam::123456789012:instance-profile/ml/gpu-node", wantArn: "arn:aws:iam::123456789012:instance-profile/ml/gpu-node", wantTokens: types.HttpTokensStateRequired},
		{name: "IMDSv1 allowed", imds: "optional", wantTokens: types.HttpTokensStateOptional},
		{name: "unknown IMDS setting", imds: "v1", wantErr: true},
		{name: "script", bootstrap: &providers.Bootstrap{Format: schema.BootstrapScript, Data: []byte("#!/bin/sh\ntrue\n")}, wantTokens: types.HttpTokensStateRequired},
		{name: "empty file", bootstrap: &providers.Bootstrap{Format: schema.BootstrapScript}, wantTokens: types.HttpTokensStateRequired},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := b.config()
			cfg.Launch.InstanceProfile, cfg.Launch.IMDS = tt.profile, tt.imds
			p := &Provider{cfg: cfg}
			req := request(testOffer, "tok")
			req.Bootstrap = tt.bootstrap
			in, err := p.runInput(req, 1, "/dev/xvda")
			if tt.wantErr {
				if err == nil {
					t.Fatal("no error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			m := in.MetadataOptions
			if m == nil || m.HttpTokens != tt.wantTokens || m.HttpEndpoint != types.InstanceMetadataEndpointStateEnabled || awssdk.ToInt32(m.HttpPutResponseHopLimit) != 2 {
				t.Errorf("metadata options %+v", m)
			}
			switch {
			case tt.wantArn == "" && tt.wantName == "":
				if in.IamInstanceProfile != nil {
					t.Errorf("instance profile %+v, want none", in.IamInstanceProfile)
				}
			case in.IamInstanceProfile == nil || awssdk.ToString(in.IamInstanceProfile.Arn) != tt.wantArn || awssdk.ToString(in.IamInstanceProfile.Name) != tt.wantName:
				t.Errorf("instance profile %+v, want arn %q name %q", in.IamInstanceProfile, tt.wantArn, tt.wantName)
			}
			want := ""
			if tt.bootstrap != nil && len(tt.bootstrap.Data) > 0 {
				want = base64.StdEncoding.EncodeToString(tt.bootstrap.Data)
			}
			if got := awssdk.ToString(in.UserData); got != want || (want == "") != (in.UserData == nil) {
				t.Errorf("user data %q, want %q", got, want)
			}
		})
	}
}
