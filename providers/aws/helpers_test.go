// SPDX-License-Identifier: Apache-2.0

package aws

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/providers/sim/ec2sim"
	"github.com/gpufleet/gpufleet/schema"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// testCredentials are what the emulators accept; no real account is ever
// reached from the tests.
var testCredentials = credentials.NewStaticCredentialsProvider("AKIDTEST", "test-secret", "")

// backend is an EC2 endpoint the tests run the provider against.
type backend struct {
	url     string
	regions []string
	image   string
	world   *sim.World // nil for moto
}

// emulator starts our EC2 front on loopback over a fresh world in which
// instances run at once and capacity and quota are ample, so only the
// faults a case injects stand in its way.
func emulator(t testing.TB, cat *catalog.Catalog) backend {
	t.Helper()
	world, err := sim.New(sim.Config{Catalog: cat, Capacity: 1 << 20, Quota: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(ec2sim.New(world, ec2sim.Options{}))
	t.Cleanup(srv.Close)
	return backend{url: srv.URL, regions: []string{"us-east-1", "us-west-2"}, image: "ami-0123456789abcdef0", world: world}
}

// config is the provider's configuration for a backend.
func (b backend) config() *schema.AWS {
	cfg := &schema.AWS{Enabled: true, Regions: b.regions}
	cfg.Launch.Image = b.image
	cfg.Launch.DiskGB = 200
	return cfg
}

// options point the provider at the backend, with retries that cost the
// tests no real time. Calls have the provider's own time limit: moto, a
// Python process, can take tens of seconds for a call on a loaded machine.
func (b backend) options() Options {
	return Options{
		Endpoint:    b.url,
		Credentials: testCredentials,
		HTTPClient:  LoopbackHTTPClient(),
		MaxBackoff:  5 * time.Millisecond,
	}
}

func (b backend) provider(t testing.TB, cat *catalog.Catalog) *Provider {
	t.Helper()
	p, err := New(context.Background(), b.config(), cat, b.options())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// raw is the SDK's own client on the backend, for what the provider must
// not do itself: seed instances, launch foreign ones, look behind it.
func (b backend) raw(region string) *ec2.Client {
	return ec2.New(ec2.Options{
		Region:       region,
		BaseEndpoint: awssdk.String(b.url),
		Credentials:  testCredentials,
		HTTPClient:   LoopbackHTTPClient(),
		Retryer: retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxBackoff = 5 * time.Millisecond
		}),
	})
}

// seed launches n instances owned by fleet in one place, in reservations
// of at most 1,000 (EC2's largest launch).
func (b backend) seed(ctx context.Context, offer planner.OfferKey, fleet string, n int) error {
	c := b.raw(offer.Region)
	for batch := 0; n > 0; batch++ {
		count := min(n, 1000)
		_, err := c.RunInstances(ctx, &ec2.RunInstancesInput{
			ImageId:      awssdk.String(b.image),
			InstanceType: types.InstanceType(offer.InstanceType),
			MinCount:     awssdk.Int32(int32(count)),
			MaxCount:     awssdk.Int32(int32(count)),
			Placement:    &types.Placement{AvailabilityZone: awssdk.String(offer.Zone)},
			TagSpecifications: []types.TagSpecification{{ResourceType: types.ResourceTypeInstance, Tags: []types.Tag{
				{Key: awssdk.String(providers.TagFleet), Value: awssdk.String(fleet)},
				{Key: awssdk.String(providers.TagWorkload), Value: awssdk.String("seeded")},
				{Key: awssdk.String(providers.TagToken), Value: awssdk.String(fmt.Sprintf("seed-%s-%d", fleet, batch))},
			}}},
		})
		if err != nil {
			return fmt.Errorf("seeding %d instances, %w", count, err)
		}
		n -= count
	}
	return nil
}

// foreign launches an instance that carries tags, but not gpufleet's.
func (b backend) foreign(ctx context.Context, offer planner.OfferKey) (string, error) {
	out, err := b.raw(offer.Region).RunInstances(ctx, &ec2.RunInstancesInput{
		ImageId:      awssdk.String(b.image),
		InstanceType: types.InstanceType(offer.InstanceType),
		MinCount:     awssdk.Int32(1),
		MaxCount:     awssdk.Int32(1),
		Placement:    &types.Placement{AvailabilityZone: awssdk.String(offer.Zone)},
		TagSpecifications: []types.TagSpecification{{ResourceType: types.ResourceTypeInstance, Tags: []types.Tag{
			{Key: awssdk.String("team"), Value: awssdk.String("someone-else")},
		}}},
	})
	if err != nil {
		return "", err
	}
	return awssdk.ToString(out.Instances[0].InstanceId), nil
}

// alive reports whether an instance exists and has not begun to end.
func (b backend) alive(ctx context.Context, region, id string) (bool, error) {
	out, err := b.raw(region).DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	if err != nil {
		return false, err
	}
	for _, r := range out.Reservations {
		for _, inst := range r.Instances {
			switch inst.State.Name {
			case types.InstanceStateNamePending, types.InstanceStateNameRunning:
				return true, nil
			}
		}
	}
	return false, nil
}

// network creates, through the backend as a client would, a VPC with one
// subnet in zone and one security group, for launches that name their
// own network: EC2 refuses a subnet or group it does not have.
func (b backend) network(t testing.TB, region, zone string) (subnet, group string) {
	t.Helper()
	ctx := context.Background()
	c := b.raw(region)
	vpc, err := c.CreateVpc(ctx, &ec2.CreateVpcInput{CidrBlock: awssdk.String("10.20.0.0/16")})
	if err != nil {
		t.Fatalf("CreateVpc: %v", err)
	}
	sn, err := c.CreateSubnet(ctx, &ec2.CreateSubnetInput{VpcId: vpc.Vpc.VpcId, CidrBlock: awssdk.String("10.20.0.0/20"), AvailabilityZone: awssdk.String(zone)})
	if err != nil {
		t.Fatalf("CreateSubnet: %v", err)
	}
	g, err := c.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{GroupName: awssdk.String("gpufleet-nodes"), Description: awssdk.String("gpufleet's nodes"), VpcId: vpc.Vpc.VpcId})
	if err != nil {
		t.Fatalf("CreateSecurityGroup: %v", err)
	}
	return awssdk.ToString(sn.Subnet.SubnetId), awssdk.ToString(g.GroupId)
}

// providerInNetwork is a provider configured to launch offer's nodes into
// a network made for them (see network), with that subnet and group.
func (b backend) providerInNetwork(t testing.TB, offer planner.OfferKey) (p *Provider, subnet, group string) {
	t.Helper()
	subnet, group = b.network(t, offer.Region, offer.Zone)
	cfg := b.config()
	cfg.Launch.SubnetByZone = map[string]string{offer.Zone: subnet}
	cfg.Launch.SecurityGroups = []string{group}
	p, err := New(context.Background(), cfg, catalog.Default(), b.options())
	if err != nil {
		t.Fatal(err)
	}
	return p, subnet, group
}
