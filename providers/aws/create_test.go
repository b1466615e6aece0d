// SPDX-License-Identifier: Apache-2.0

package aws

import (
	"context"
	"errors"
	"slices"
	"testing"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

func request(offer planner.OfferKey, token string) providers.CreateRequest {
	return providers.CreateRequest{Token: token, Offer: offer, Fleet: "f", Workload: "w", Labels: map[string]string{"team": "ml", "b": "2", "a": "1"}}
}

func TestRunInput(t *testing.T) {
	b := backend{regions: []string{"us-east-1", "us-west-2"}, image: "resolve:ssm:/aws/service/some/ami-id"}
	cfg := b.config()
	cfg.Launch.ImageByRegion = map[string]string{"us-west-2": "ami-0fedcba9876543210"}
	cfg.Launch.SubnetByZone = map[string]string{"us-east-1a": "subnet-0123456789abcdef0"}
	cfg.Launch.SecurityGroups = []string{"sg-0123456789abcdef0"}
	cfg.Launch.DiskGB = 500
	p := &Provider{cfg: cfg}

	in, err := p.runInput(request(testOffer, "tok-1"), 1, "/dev/sda1")
	if err != nil {
		t.Fatal(err)
	}
	if awssdk.ToString(in.ClientToken) != "tok-1" || awssdk.ToString(in.ImageId) != b.image || in.InstanceType != "g4dn.xlarge" ||
		awssdk.ToInt32(in.MinCount) != 1 || awssdk.ToInt32(in.MaxCount) != 1 {
		t.Errorf("token %q image %q type %s count %d..%d", awssdk.ToString(in.ClientToken), awssdk.ToString(in.ImageId), in.InstanceType,
			awssdk.ToInt32(in.MinCount), awssdk.ToInt32(in.MaxCount))
	}
	if awssdk.ToString(in.Placement.AvailabilityZone) != "us-east-1a" || awssdk.ToString(in.SubnetId) != "subnet-0123456789abcdef0" ||
		!slices.Equal(in.SecurityGroupIds, []string{"sg-0123456789abcdef0"}) {
		t.Errorf("zone %q subnet %q groups %v", awssdk.ToString(in.Placement.AvailabilityZone), awssdk.ToString(in.SubnetId), in.SecurityGroupIds)
	}
	if len(in.BlockDeviceMappings) != 1 || awssdk.ToString(in.BlockDeviceMappings[0].DeviceName) != "/dev/sda1" ||
		awssdk.ToInt32(in.BlockDeviceMappings[0].Ebs.VolumeSize) != 500 || !awssdk.ToBool(in.BlockDeviceMappings[0].Ebs.DeleteOnTermination) {
		t.Errorf("block devices %+v", in.BlockDeviceMappings)
	}
	if in.InstanceMarketOptions != nil {
		t.Errorf("an on-demand launch has market options %+v", in.InstanceMarketOptions)
	}
	if len(in.TagSpecifications) != 2 || in.TagSpecifications[0].ResourceType != types.ResourceTypeInstance || in.TagSpecifications[1].ResourceType != types.ResourceTypeVolume {
		t.Fatalf("tag specifications %+v", in.TagSpecifications)
	}
	var keys []string
	for _, tag := range in.TagSpecifications[0].Tags {
		keys = append(keys, awssdk.ToString(tag.Key))
	}
	// Sorted, so that a repeat sends byte-identical parameters.
	if want := []string{"a", "b", providers.TagFleet, providers.TagToken, providers.TagWorkload, "team"}; !slices.Equal(keys, want) {
		t.Errorf("tag keys %v, want %v", keys, want)
	}

	west := testOffer
	west.Region, west.Zone, west.Market = "us-west-2", "us-west-2b", catalog.Spot
	in, err = p.runInput(request(west, "tok-2"), 1, "/dev/xvda")
	if err != nil {
		t.Fatal(err)
	}
	if awssdk.ToString(in.BlockDeviceMappings[0].DeviceName) != "/dev/xvda" {
		t.Errorf("root mapping on %s, want the image's root device", awssdk.ToString(in.BlockDeviceMappings[0].DeviceName))
	}
	if awssdk.ToString(in.ImageId) != "ami-0fedcba9876543210" || in.SubnetId != nil {
		t.Errorf("image %q subnet %v: want the region's image and the default subnet", awssdk.ToString(in.ImageId), in.SubnetId)
	}
	m := in.InstanceMarketOptions
	if m == nil || m.MarketType != types.MarketTypeSpot || m.SpotOptions.SpotInstanceType != types.SpotInstanceTypeOneTime ||
		m.SpotOptions.InstanceInterruptionBehavior != types.InstanceInterruptionBehaviorTerminate || m.SpotOptions.MaxPrice != nil {
		t.Errorf("spot options %+v", m)
	}
}

func TestCreateRefusesBadRequests(t *testing.T) {
	p := emulator(t, catalog.Default()).provider(t, catalog.Default())
	elsewhere := testOffer
	elsewhere.Region, elsewhere.Zone = "eu-west-1", "eu-west-1a"
	gcp := testOffer
	gcp.Cloud = catalog.GCP
	long := make([]byte, 65)
	for i := range long {
		long[i] = 'x'
	}
	for name, req := range map[string]providers.CreateRequest{
		"unconfigured region": request(elsewhere, "tok"),
		"another cloud":       request(gcp, "tok"),
		"no token":            request(testOffer, ""),
		"token too long":      request(testOffer, string(long)),
	} {
		_, err := p.Create(context.Background(), req)
		if !errors.Is(err, providers.ErrInvalid) {
			t.Errorf("%s: got %v, want an invalid-request error", name, err)
		}
	}
}

// EC2 answers a ClientToken whose instance has ended with that instance for
// a day: the token is spent, and the reconciler must retire it.
func TestCreateWithSpentTokenIsTokenReused(t *testing.T) {
	b := emulator(t, catalog.Default())
	p := b.provider(t, catalog.Default())
	ctx := context.Background()
	req := request(testOffer, "gf1-spent")
	inst, err := p.Create(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Delete(ctx, inst); err != nil {
		t.Fatal(err)
	}
	_, err = p.Create(ctx, req)
	var pe *providers.Error
	if !errors.As(err, &pe) || pe.Kind != providers.KindTokenSpent || !errors.Is(err, providers.ErrTokenSpent) || pe.Code != codeTokenReused || pe.Offer != testOffer {
		t.Fatalf("got %v, want a token-spent error with code %s", err, codeTokenReused)
	}
	if n := len(b.world.List(catalog.AWS, nil)); n != 1 {
		t.Errorf("the world holds %d instances, want the first one only", n)
	}
}

// A stock-out comes back as HTTP 500, which the SDK would retry; it must
// cost exactly one call so the reconciler fails over at once.
func TestStockOutCostsOneCall(t *testing.T) {
	b := emulator(t, catalog.Default())
	p := b.provider(t, catalog.Default())
	b.world.SetCapacity(catalog.AWS, testOffer.Zone, testOffer.InstanceType, testOffer.Market, 0)
	before := b.world.Calls()["aws RunInstances"]
	_, err := p.Create(context.Background(), request(testOffer, "gf1-stockout"))
	if !errors.Is(err, providers.ErrCapacity) {
		t.Fatalf("got %v, want a capacity error", err)
	}
	if n := b.world.Calls()["aws RunInstances"] - before; n != 1 {
		t.Errorf("a stock-out cost %d RunInstances calls, want 1", n)
	}
}

// What the provider sends reaches the instance: the configured image,
// subnet and groups, the spot market, the zone.
func TestCreateLaunchesAsConfigured(t *testing.T) {
	b := emulator(t, catalog.Default())
	p, subnet, group := b.providerInNetwork(t, testSpot)
	inst, err := p.Create(context.Background(), request(testSpot, "gf1-configured"))
	if err != nil {
		t.Fatal(err)
	}
	if inst.OfferKey != testSpot || inst.Fleet != "f" || inst.Workload != "w" || inst.Token != "gf1-configured" || inst.LaunchedAt.IsZero() {
		t.Errorf("created %+v", inst)
	}
	out, err := b.raw(testSpot.Region).DescribeInstances(context.Background(), &ec2.DescribeInstancesInput{InstanceIds: []string{inst.ID}})
	if err != nil {
		t.Fatal(err)
	}
	got := out.Reservations[0].Instances[0]
	if awssdk.ToString(got.ImageId) != b.image || awssdk.ToString(got.SubnetId) != subnet ||
		len(got.SecurityGroups) != 1 || awssdk.ToString(got.SecurityGroups[0].GroupId) != group ||
		got.InstanceLifecycle != types.InstanceLifecycleTypeSpot || awssdk.ToString(got.ClientToken) != "gf1-configured" {
		t.Errorf("launched %+v", got)
	}
	tags := tagMap(got.Tags)
	if tags[providers.TagFleet] != "f" || tags[providers.TagWorkload] != "w" || tags[providers.TagToken] != "gf1-configured" || tags["team"] != "ml" {
		t.Errorf("tags %v", tags)
	}
}

func TestMissingCredentialsAreAnAuthError(t *testing.T) {
	b := emulator(t, catalog.Default())
	opts := b.options()
	opts.Credentials = awssdk.CredentialsProviderFunc(func(context.Context) (awssdk.Credentials, error) {
		return awssdk.Credentials{}, errors.New("no credentials in this test")
	})
	p, err := New(context.Background(), b.config(), catalog.Default(), opts)
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.List(context.Background(), providers.Selector{})
	if !errors.Is(err, providers.ErrAuth) {
		t.Errorf("got %v, want an auth error", err)
	}
}
