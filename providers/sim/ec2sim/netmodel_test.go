// SPDX-License-Identifier: Apache-2.0

package ec2sim_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/providers/sim/ec2sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// A new account's network: one default VPC a region, a default /20
// subnet in each zone that maps public addresses, and the VPC's default
// group, which admits its own members and lets everything out.
func TestDefaultNetwork(t *testing.T) {
	f := newFixture(t, sim.Config{})
	c := f.client("us-east-1", 1)
	ctx := context.Background()
	vpcs, err := c.DescribeVpcs(ctx, &ec2.DescribeVpcsInput{})
	if err != nil {
		t.Fatal(err)
	}
	if len(vpcs.Vpcs) != 1 || !aws.ToBool(vpcs.Vpcs[0].IsDefault) || aws.ToString(vpcs.Vpcs[0].CidrBlock) != "172.31.0.0/16" || vpcs.Vpcs[0].State != types.VpcStateAvailable {
		t.Fatalf("VPCs %+v", vpcs.Vpcs)
	}
	vpc := aws.ToString(vpcs.Vpcs[0].VpcId)
	subnets, err := c.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: []types.Filter{{Name: aws.String("default-for-az"), Values: []string{"true"}}}})
	if err != nil {
		t.Fatal(err)
	}
	region, _ := f.world.Region(catalog.AWS, "us-east-1")
	if len(subnets.Subnets) != len(region.Zones) {
		t.Fatalf("%d default subnets for %d zones", len(subnets.Subnets), len(region.Zones))
	}
	vpcRange := netip.MustParsePrefix("172.31.0.0/16")
	var ranges []netip.Prefix
	for i, sn := range subnets.Subnets {
		p := netip.MustParsePrefix(aws.ToString(sn.CidrBlock))
		for _, other := range ranges {
			if other.Overlaps(p) {
				t.Errorf("subnets %s and %s overlap", other, p)
			}
		}
		ranges = append(ranges, p)
		if aws.ToString(sn.AvailabilityZone) != region.Zones[i] || aws.ToString(sn.VpcId) != vpc || p.Bits() != 20 || !vpcRange.Contains(p.Addr()) ||
			!aws.ToBool(sn.MapPublicIpOnLaunch) || aws.ToInt32(sn.AvailableIpAddressCount) != 4091 || !strings.HasPrefix(aws.ToString(sn.SubnetArn), "arn:aws:ec2:us-east-1:123456789012:subnet/") {
			t.Errorf("subnet %+v", sn)
		}
	}
	groups, err := c.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{GroupNames: []string{"default"}})
	if err != nil {
		t.Fatal(err)
	}
	g := groups.SecurityGroups[0]
	if aws.ToString(g.VpcId) != vpc || len(g.IpPermissions) != 1 || len(g.IpPermissions[0].UserIdGroupPairs) != 1 ||
		aws.ToString(g.IpPermissions[0].UserIdGroupPairs[0].GroupId) != aws.ToString(g.GroupId) || len(g.IpPermissionsEgress) != 1 ||
		aws.ToString(g.IpPermissionsEgress[0].IpProtocol) != "-1" || aws.ToString(g.IpPermissionsEgress[0].IpRanges[0].CidrIp) != "0.0.0.0/0" ||
		aws.ToString(g.GroupId) == vpc[len("vpc-"):] {
		t.Errorf("default group %+v", g)
	}
	// Another region has a network of its own.
	west, err := f.client("us-west-2", 1).DescribeVpcs(ctx, &ec2.DescribeVpcsInput{})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(west.Vpcs[0].VpcId) == vpc {
		t.Errorf("us-west-2's default VPC is us-east-1's")
	}
}

// RunInstances checks every reference against the model with EC2's code
// and wording, and a launch into a subnet lands in the subnet's zone.
func TestRunInstancesChecksTheNetwork(t *testing.T) {
	f := newFixture(t, sim.Config{})
	c := f.client("us-east-1", 1)
	ctx := context.Background()
	// The subnet is in a zone that sells the test's type, other than the
	// ones the launches name.
	other := zoneSelling(t, f.world, "us-east-1", "g4dn.xlarge", catalog.OnDemand, "us-east-1a", "us-east-1b")
	own := newNetwork(t, c, other)
	defaults, err := c.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{GroupNames: []string{"default"}})
	if err != nil {
		t.Fatal(err)
	}
	defaultGroup := aws.ToString(defaults.SecurityGroups[0].GroupId)

	tests := []struct {
		name     string
		in       func(in *ec2.RunInstancesInput)
		wantCode string
		wantMsg  string
		wantZone string
	}{
		{name: "unknown subnet", in: func(in *ec2.RunInstancesInput) { in.SubnetId = aws.String("subnet-0123456789abcdef0") },
			wantCode: "InvalidSubnetID.NotFound", wantMsg: "The subnet ID 'subnet-0123456789abcdef0' does not exist"},
		{name: "unknown group", in: func(in *ec2.RunInstancesInput) { in.SecurityGroupIds = []string{"sg-0123456789abcdef0"} },
			wantCode: "InvalidGroup.NotFound", wantMsg: "The security group 'sg-0123456789abcdef0' does not exist in VPC '"},
		{name: "unknown group name", in: func(in *ec2.RunInstancesInput) { in.SecurityGroups = []string{"web"} },
			wantCode: "InvalidGroup.NotFound", wantMsg: "The security group 'web' does not exist in default VPC '"},
		{name: "subnet in another zone", in: func(in *ec2.RunInstancesInput) {
			in.SubnetId = aws.String(own.subnet)
			in.Placement = &types.Placement{AvailabilityZone: aws.String("us-east-1a")}
		}, wantCode: "InvalidParameterValue", wantMsg: "Value (us-east-1a) for parameter availabilityZone is invalid. Subnet '" + own.subnet + "' is in the availability zone " + other},
		{name: "group of another VPC", in: func(in *ec2.RunInstancesInput) {
			in.Placement, in.SubnetId, in.SecurityGroupIds = nil, aws.String(own.subnet), []string{defaultGroup}
		}, wantCode: "InvalidParameter", wantMsg: "Security group " + defaultGroup + " and subnet " + own.subnet + " belong to different networks."},
		{name: "group names with a subnet", in: func(in *ec2.RunInstancesInput) {
			in.Placement, in.SubnetId, in.SecurityGroups = nil, aws.String(own.subnet), []string{"nodes"}
		}, wantCode: "InvalidParameterCombination", wantMsg: "The parameter groupName cannot be used with the parameter subnet"},
		{name: "a subnet's interface in another zone", in: func(in *ec2.RunInstancesInput) {
			in.Placement = &types.Placement{AvailabilityZone: aws.String("us-east-1b")}
			in.NetworkInterfaces = []types.InstanceNetworkInterfaceSpecification{{DeviceIndex: aws.Int32(0), SubnetId: aws.String(own.subnet)}}
		}, wantCode: "InvalidParameterValue"},
		{name: "the subnet's zone when none is named", in: func(in *ec2.RunInstancesInput) {
			in.Placement, in.SubnetId, in.SecurityGroupIds = nil, aws.String(own.subnet), []string{own.group}
		}, wantZone: other},
		{name: "the primary interface's subnet's zone", in: func(in *ec2.RunInstancesInput) {
			in.Placement = nil
			in.NetworkInterfaces = []types.InstanceNetworkInterfaceSpecification{{DeviceIndex: aws.Int32(0), SubnetId: aws.String(own.subnet), Groups: []string{own.group}}}
		}, wantZone: other},
		{name: "a group by name in the default VPC", in: func(in *ec2.RunInstancesInput) { in.SecurityGroups = []string{"default"} }, wantZone: "us-east-1a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := runInput("g4dn.xlarge", "us-east-1a", "")
			tt.in(in)
			out, err := c.RunInstances(ctx, in)
			if tt.wantCode != "" {
				if msg := wantAPIError(t, err, tt.wantCode, http.StatusBadRequest); !strings.HasPrefix(msg, tt.wantMsg) {
					t.Errorf("message %q, want %q", msg, tt.wantMsg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := aws.ToString(out.Instances[0].Placement.AvailabilityZone); got != tt.wantZone {
				t.Errorf("launched in %s, want %s", got, tt.wantZone)
			}
		})
	}
}

// Addresses come from the subnet, each once, and a subnet that runs out
// launches what fits or nothing below MinCount, as EC2 does.
func TestAddressesComeFromTheSubnet(t *testing.T) {
	f := newFixture(t, sim.Config{})
	c := f.client("us-east-1", 1)
	ctx := context.Background()
	own := newNetwork(t, c, "us-east-1b")
	small, err := c.CreateSubnet(ctx, &ec2.CreateSubnetInput{VpcId: aws.String(own.vpc), CidrBlock: aws.String("10.0.9.0/28"), AvailabilityZone: aws.String("us-east-1b")})
	if err != nil {
		t.Fatal(err)
	}
	subnet := aws.ToString(small.Subnet.SubnetId)
	if n := aws.ToInt32(small.Subnet.AvailableIpAddressCount); n != 11 {
		t.Fatalf("a /28 has %d addresses, want 11", n)
	}
	launch := func(minCount, maxCount int32, token string) (*ec2.RunInstancesOutput, error) {
		in := runInput("g4dn.xlarge", "", token)
		in.SubnetId, in.SecurityGroupIds = aws.String(subnet), []string{own.group}
		in.MinCount, in.MaxCount = aws.Int32(minCount), aws.Int32(maxCount)
		return c.RunInstances(ctx, in)
	}
	_, err = launch(12, 12, "too-many")
	wantAPIError(t, err, "InsufficientFreeAddressesInSubnet", http.StatusBadRequest)
	out, err := launch(1, 20, "what-fits")
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Instances) != 11 {
		t.Fatalf("launched %d into 11 free addresses", len(out.Instances))
	}
	block := netip.MustParsePrefix("10.0.9.0/28")
	seen := map[string]bool{}
	for _, inst := range out.Instances {
		ip := aws.ToString(inst.PrivateIpAddress)
		a, err := netip.ParseAddr(ip)
		if err != nil || !block.Contains(a) || seen[ip] || a.As4()[3] < 4 || a.As4()[3] == 15 {
			t.Errorf("address %s: outside the subnet, repeated or one AWS keeps", ip)
		}
		seen[ip] = true
	}
	_, err = launch(1, 1, "full")
	wantAPIError(t, err, "InsufficientFreeAddressesInSubnet", http.StatusBadRequest)
	// A terminated instance gives its address back.
	if _, err := c.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{aws.ToString(out.Instances[3].InstanceId)}}); err != nil {
		t.Fatal(err)
	}
	again, err := launch(1, 1, "after-terminate")
	if err != nil {
		t.Fatal(err)
	}
	if got := aws.ToString(again.Instances[0].PrivateIpAddress); got != aws.ToString(out.Instances[3].PrivateIpAddress) {
		t.Errorf("took %s, want the freed %s", got, aws.ToString(out.Instances[3].PrivateIpAddress))
	}
}

// The default subnet maps public addresses: an instance there has one,
// with EC2's DNS name, once launched; a subnet of the client's own maps
// none unless the launch asks.
func TestPublicAddresses(t *testing.T) {
	f := newFixture(t, sim.Config{})
	c := f.client("us-east-1", 1)
	own := newNetwork(t, c, "us-east-1a")
	public := mustRun(t, c, runInput("g4dn.xlarge", "us-east-1a", ""))
	if aws.ToString(public.Instances[0].PublicIpAddress) != "" {
		t.Errorf("RunInstances answers with public address %s before the instance has one", aws.ToString(public.Instances[0].PublicIpAddress))
	}
	inst := describeOne(t, c, aws.ToString(public.Instances[0].InstanceId))
	ip := aws.ToString(inst.PublicIpAddress)
	nic := inst.NetworkInterfaces[0]
	if ip == "" || aws.ToString(inst.PublicDnsName) != "ec2-"+strings.ReplaceAll(ip, ".", "-")+".compute-1.amazonaws.com" ||
		nic.Association == nil || aws.ToString(nic.Association.PublicIp) != ip || aws.ToString(nic.Association.IpOwnerId) != "amazon" {
		t.Errorf("public %q %q, association %+v", ip, aws.ToString(inst.PublicDnsName), nic.Association)
	}
	if again := describeOne(t, c, aws.ToString(inst.InstanceId)); aws.ToString(again.PublicIpAddress) != ip || aws.ToString(again.PrivateIpAddress) != aws.ToString(inst.PrivateIpAddress) {
		t.Errorf("addresses changed between describes")
	}

	private := runInput("g4dn.xlarge", "us-east-1a", "")
	private.SubnetId, private.SecurityGroupIds = aws.String(own.subnet), []string{own.group}
	if got := describeOne(t, c, aws.ToString(mustRun(t, c, private).Instances[0].InstanceId)); got.PublicIpAddress != nil || got.NetworkInterfaces[0].Association != nil {
		t.Errorf("an instance in a subnet that maps none has %q", aws.ToString(got.PublicIpAddress))
	}
	asked := runInput("g4dn.xlarge", "us-east-1a", "")
	asked.NetworkInterfaces = []types.InstanceNetworkInterfaceSpecification{{DeviceIndex: aws.Int32(0), SubnetId: aws.String(own.subnet), Groups: []string{own.group}, AssociatePublicIpAddress: aws.Bool(true)}}
	got := describeOne(t, c, aws.ToString(mustRun(t, c, asked).Instances[0].InstanceId))
	if aws.ToString(got.PublicIpAddress) == "" || aws.ToString(got.PublicDnsName) != "" {
		t.Errorf("asked for one in a VPC without DNS hostnames: %q %q", aws.ToString(got.PublicIpAddress), aws.ToString(got.PublicDnsName))
	}
}

func TestNetworkCreateErrors(t *testing.T) {
	f := newFixture(t, sim.Config{})
	c := f.client("us-east-1", 1)
	ctx := context.Background()
	own := newNetwork(t, c, "us-east-1a")
	tests := []struct {
		name     string
		call     func() error
		wantCode string
	}{
		{name: "VPC range too large", wantCode: "InvalidVpc.Range", call: func() error {
			_, err := c.CreateVpc(ctx, &ec2.CreateVpcInput{CidrBlock: aws.String("10.0.0.0/8")})
			return err
		}},
		{name: "VPC CIDR with host bits", wantCode: "InvalidParameterValue", call: func() error {
			_, err := c.CreateVpc(ctx, &ec2.CreateVpcInput{CidrBlock: aws.String("10.0.0.1/16")})
			return err
		}},
		{name: "subnet outside its VPC", wantCode: "InvalidSubnet.Range", call: func() error {
			_, err := c.CreateSubnet(ctx, &ec2.CreateSubnetInput{VpcId: aws.String(own.vpc), CidrBlock: aws.String("10.9.0.0/24")})
			return err
		}},
		{name: "subnet overlapping another", wantCode: "InvalidSubnet.Conflict", call: func() error {
			_, err := c.CreateSubnet(ctx, &ec2.CreateSubnetInput{VpcId: aws.String(own.vpc), CidrBlock: aws.String("10.0.1.128/25")})
			return err
		}},
		{name: "subnet in an unknown VPC", wantCode: "InvalidVpcID.NotFound", call: func() error {
			_, err := c.CreateSubnet(ctx, &ec2.CreateSubnetInput{VpcId: aws.String("vpc-0123456789abcdef0"), CidrBlock: aws.String("10.0.2.0/24")})
			return err
		}},
		{name: "subnet in another region's zone", wantCode: "InvalidParameterValue", call: func() error {
			_, err := c.CreateSubnet(ctx, &ec2.CreateSubnetInput{VpcId: aws.String(own.vpc), CidrBlock: aws.String("10.0.2.0/24"), AvailabilityZone: aws.String("us-west-2a")})
			return err
		}},
		{name: "group name taken in the VPC", wantCode: "InvalidGroup.Duplicate", call: func() error {
			_, err := c.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{GroupName: aws.String("nodes"), Description: aws.String("again"), VpcId: aws.String(own.vpc)})
			return err
		}},
		{name: "group named default", wantCode: "InvalidGroup.Reserved", call: func() error {
			_, err := c.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{GroupName: aws.String("default"), Description: aws.String("d")})
			return err
		}},
		{name: "group named like an id", wantCode: "InvalidParameterValue", call: func() error {
			_, err := c.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{GroupName: aws.String("sg-web"), Description: aws.String("d")})
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantAPIError(t, tt.call(), tt.wantCode, http.StatusBadRequest)
		})
	}
	// EC2 allows five VPCs a region; the default and the test's are two.
	for range 3 {
		if _, err := c.CreateVpc(ctx, &ec2.CreateVpcInput{CidrBlock: aws.String("10.1.0.0/16")}); err != nil {
			t.Fatal(err)
		}
	}
	_, err := c.CreateVpc(ctx, &ec2.CreateVpcInput{CidrBlock: aws.String("10.2.0.0/16")})
	wantAPIError(t, err, "VpcLimitExceeded", http.StatusBadRequest)
}

// A deleted default subnet is gone for good: a launch into its zone that
// names no subnet has nowhere to go.
func TestDeletedDefaultSubnet(t *testing.T) {
	f := newFixture(t, sim.Config{})
	c := f.client("us-east-1", 1)
	ctx := context.Background()
	out, err := c.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: []types.Filter{{Name: aws.String("availability-zone"), Values: []string{"us-east-1d"}}}})
	if err != nil {
		t.Fatal(err)
	}
	id := aws.ToString(out.Subnets[0].SubnetId)
	if _, err := c.DeleteSubnet(ctx, &ec2.DeleteSubnetInput{SubnetId: aws.String(id)}); err != nil {
		t.Fatal(err)
	}
	_, err = c.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{SubnetIds: []string{id}})
	wantAPIError(t, err, "InvalidSubnetID.NotFound", http.StatusBadRequest)
	_, err = c.RunInstances(ctx, runInput("g4dn.xlarge", "us-east-1d", ""))
	wantAPIError(t, err, "MissingInput", http.StatusBadRequest)
	_, err = c.DeleteSubnet(ctx, &ec2.DeleteSubnetInput{SubnetId: aws.String(id)})
	wantAPIError(t, err, "InvalidSubnetID.NotFound", http.StatusBadRequest)
}

// Tags go on the network's objects as on instances, defaults included,
// and filter them.
func TestTaggingTheNetwork(t *testing.T) {
	f := newFixture(t, sim.Config{})
	c := f.client("us-east-1", 1)
	ctx := context.Background()
	own := newNetwork(t, c, "us-east-1a")
	vpcs, err := c.DescribeVpcs(ctx, &ec2.DescribeVpcsInput{Filters: []types.Filter{{Name: aws.String("is-default"), Values: []string{"true"}}}})
	if err != nil {
		t.Fatal(err)
	}
	def := aws.ToString(vpcs.Vpcs[0].VpcId)
	if _, err := c.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{def, own.subnet, own.group}, Tags: []types.Tag{{Key: aws.String("team"), Value: aws.String("ml")}}}); err != nil {
		t.Fatal(err)
	}
	tagged, err := c.DescribeVpcs(ctx, &ec2.DescribeVpcsInput{Filters: []types.Filter{{Name: aws.String("tag:team"), Values: []string{"ml"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(tagged.Vpcs) != 1 || aws.ToString(tagged.Vpcs[0].VpcId) != def || !aws.ToBool(tagged.Vpcs[0].IsDefault) {
		t.Errorf("tagged VPCs %+v", tagged.Vpcs)
	}
	subnets, err := c.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: []types.Filter{{Name: aws.String("tag-key"), Values: []string{"team"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(subnets.Subnets) != 1 || aws.ToString(subnets.Subnets[0].SubnetId) != own.subnet {
		t.Errorf("tagged subnets %+v", subnets.Subnets)
	}
	_, err = c.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{"subnet-0123456789abcdef0"}, Tags: []types.Tag{{Key: aws.String("a"), Value: aws.String("b")}}})
	wantAPIError(t, err, "InvalidSubnetID.NotFound", http.StatusBadRequest)
}

// What a client made outlives the front: it is in the world's store and
// its state file. Placement groups are kept the same way.
func TestNetworkOutlivesTheFront(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	f := newFixture(t, sim.Config{StatePath: path})
	own := newNetwork(t, f.client("us-east-1", 1), "us-east-1b")
	if _, err := f.client("us-east-1", 1).CreatePlacementGroup(context.Background(), &ec2.CreatePlacementGroupInput{GroupName: aws.String("gang"), Strategy: types.PlacementStrategyCluster}); err != nil {
		t.Fatal(err)
	}
	if err := f.world.Save(); err != nil {
		t.Fatal(err)
	}
	world, err := sim.New(sim.Config{StatePath: path, Clock: f.clock})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(ec2sim.New(world, ec2sim.Options{}))
	t.Cleanup(srv.Close)
	again := &fixture{world: world, clock: f.clock, url: srv.URL}
	c := again.client("us-east-1", 1)
	out, err := c.DescribeSubnets(context.Background(), &ec2.DescribeSubnetsInput{SubnetIds: []string{own.subnet}})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(out.Subnets[0].VpcId) != own.vpc || aws.ToString(out.Subnets[0].AvailabilityZone) != "us-east-1b" {
		t.Errorf("subnet after a restart %+v", out.Subnets[0])
	}
	in := runInput("g4dn.xlarge", "", "")
	in.SubnetId, in.SecurityGroupIds = aws.String(own.subnet), []string{own.group}
	in.Placement = &types.Placement{GroupName: aws.String("gang")}
	if got := mustRun(t, c, in).Instances[0]; aws.ToString(got.Placement.GroupName) != "gang" || aws.ToString(got.Placement.AvailabilityZone) != "us-east-1b" {
		t.Errorf("placement after a restart %+v", got.Placement)
	}
}
