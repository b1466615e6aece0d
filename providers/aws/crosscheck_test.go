// SPDX-License-Identifier: Apache-2.0

package aws

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"

	"github.com/gpufleet/gpufleet/schema/catalog"
)

// The cross-check asks moto and the emulator the same EC2 questions, each
// answered as a short summary of what EC2's documentation fixes (sizes,
// codes, layouts; never ids, which each invents), and compares them.
// Where they differ by design or by a known fault of moto's, the case is
// in motoDifferences.

// crossNet is the network each backend is given before the cases run: a
// VPC of the test's own with a subnet in crossZone and a group.
type crossNet struct {
	vpc, subnet, group, defaultGroup string
}

type crossCase struct {
	name  string
	probe func(ctx context.Context, c *ec2.Client, n crossNet) string
}

// code is the API error's code, or "ok".
func code(err error) string {
	if err == nil {
		return "ok"
	}
	if apiErr, ok := errors.AsType[smithy.APIError](err); ok {
		return apiErr.ErrorCode()
	}
	return "error: " + err.Error()
}

// crossZone is the first zone of us-east-1 the catalog sells the cases'
// type in, but for us-east-1a and us-east-1b, which cases name apart
// from the subnet's.
func crossZone(t *testing.T) string {
	t.Helper()
	r, _ := catalog.Default().Region(catalog.AWS, "us-east-1")
	for _, z := range r.Zones {
		if z == "us-east-1a" || z == "us-east-1b" {
			continue
		}
		for _, o := range catalog.Default().Offers {
			if o.Cloud == catalog.AWS && o.Zone == z && o.InstanceType == "g4dn.xlarge" && o.Market == catalog.OnDemand {
				return z
			}
		}
	}
	t.Fatal("no zone of us-east-1 but us-east-1a and us-east-1b sells g4dn.xlarge on demand")
	return ""
}

func crossSetup(t *testing.T, ctx context.Context, c *ec2.Client) crossNet {
	t.Helper()
	vpc, err := c.CreateVpc(ctx, &ec2.CreateVpcInput{CidrBlock: awssdk.String("10.30.0.0/16")})
	if err != nil {
		t.Fatalf("CreateVpc: %v", err)
	}
	n := crossNet{vpc: awssdk.ToString(vpc.Vpc.VpcId)}
	sn, err := c.CreateSubnet(ctx, &ec2.CreateSubnetInput{VpcId: vpc.Vpc.VpcId, CidrBlock: awssdk.String("10.30.1.0/24"), AvailabilityZone: awssdk.String(crossZone(t))})
	if err != nil {
		t.Fatalf("CreateSubnet: %v", err)
	}
	n.subnet = awssdk.ToString(sn.Subnet.SubnetId)
	g, err := c.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{GroupName: awssdk.String("crosscheck"), Description: awssdk.String("cross-check"), VpcId: vpc.Vpc.VpcId})
	if err != nil {
		t.Fatalf("CreateSecurityGroup: %v", err)
	}
	n.group = awssdk.ToString(g.GroupId)
	// moto answers GroupNames with every VPC's group of the name, where EC2
	// looks in the default VPC only: filters ask both the same.
	vpcs, err := c.DescribeVpcs(ctx, &ec2.DescribeVpcsInput{Filters: []types.Filter{{Name: awssdk.String("is-default"), Values: []string{"true"}}}})
	if err != nil || len(vpcs.Vpcs) != 1 {
		t.Fatalf("the default VPC: %v %+v", err, vpcs)
	}
	def, err := c.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{Filters: []types.Filter{
		{Name: awssdk.String("vpc-id"), Values: []string{awssdk.ToString(vpcs.Vpcs[0].VpcId)}},
		{Name: awssdk.String("group-name"), Values: []string{"default"}},
	}})
	if err != nil || len(def.SecurityGroups) != 1 {
		t.Fatalf("the default VPC's default group: %v %+v", err, def)
	}
	n.defaultGroup = awssdk.ToString(def.SecurityGroups[0].GroupId)
	return n
}

// inRange reports whether an address is in a CIDR block.
func inRange(cidr, ip string) bool {
	a, err := netip.ParseAddr(ip)
	return err == nil && netip.MustParsePrefix(cidr).Contains(a)
}

// launch is a minimal RunInstances on the image both backends have.
func launch(image string, adjust func(*ec2.RunInstancesInput)) *ec2.RunInstancesInput {
	in := &ec2.RunInstancesInput{ImageId: awssdk.String(image), InstanceType: "g4dn.xlarge", MinCount: awssdk.Int32(1), MaxCount: awssdk.Int32(1)}
	adjust(in)
	return in
}

func typeSummary(it types.InstanceTypeInfo) string {
	var gpus []string
	if it.GpuInfo != nil {
		for _, g := range it.GpuInfo.Gpus {
			gpus = append(gpus, fmt.Sprintf("%s %s x%d %dMiB", awssdk.ToString(g.Manufacturer), awssdk.ToString(g.Name), awssdk.ToInt32(g.Count), awssdk.ToInt32(g.MemoryInfo.SizeInMiB)))
		}
	}
	n := it.NetworkInfo
	efa := int32(0)
	if n.EfaInfo != nil {
		efa = awssdk.ToInt32(n.EfaInfo.MaximumEfaInterfaces)
	}
	disks := ""
	if s := it.InstanceStorageInfo; s != nil {
		for _, d := range s.Disks {
			disks += fmt.Sprintf("%dx%dGB %s ", awssdk.ToInt32(d.Count), awssdk.ToInt64(d.SizeInGB), d.Type)
		}
	}
	e := it.EbsInfo.EbsOptimizedInfo
	return fmt.Sprintf("vcpus %d cores %d mem %dMiB gpus %v | %s %.2fGHz %v | net %q nics %d cards %d efa %v/%d ipv4 %d | disks %s| ebs %d/%d Mbps %d/%d IOPS | %v boot %v",
		awssdk.ToInt32(it.VCpuInfo.DefaultVCpus), awssdk.ToInt32(it.VCpuInfo.DefaultCores), awssdk.ToInt64(it.MemoryInfo.SizeInMiB), gpus,
		awssdk.ToString(it.ProcessorInfo.Manufacturer), awssdk.ToFloat64(it.ProcessorInfo.SustainedClockSpeedInGhz), it.ProcessorInfo.SupportedArchitectures,
		awssdk.ToString(n.NetworkPerformance), awssdk.ToInt32(n.MaximumNetworkInterfaces), awssdk.ToInt32(n.MaximumNetworkCards), awssdk.ToBool(n.EfaSupported), efa,
		awssdk.ToInt32(n.Ipv4AddressesPerInterface), disks,
		awssdk.ToInt32(e.BaselineBandwidthInMbps), awssdk.ToInt32(e.MaximumBandwidthInMbps), awssdk.ToInt32(e.BaselineIops), awssdk.ToInt32(e.MaximumIops),
		it.SupportedUsageClasses, it.SupportedBootModes)
}

// crossCases are the questions; image is the AMI the backend has.
func crossCases(image string) []crossCase {
	var cases []crossCase
	var typesInRegion []string
	for _, o := range catalog.Default().Offers {
		if o.Cloud == catalog.AWS && o.Region == "us-east-1" && !slices.Contains(typesInRegion, o.InstanceType) {
			typesInRegion = append(typesInRegion, o.InstanceType)
		}
	}
	slices.Sort(typesInRegion)
	for _, name := range typesInRegion {
		cases = append(cases, crossCase{name: "instance type " + name, probe: func(ctx context.Context, c *ec2.Client, _ crossNet) string {
			out, err := c.DescribeInstanceTypes(ctx, &ec2.DescribeInstanceTypesInput{InstanceTypes: []types.InstanceType{types.InstanceType(name)}})
			if err != nil || len(out.InstanceTypes) != 1 {
				return code(err)
			}
			return typeSummary(out.InstanceTypes[0])
		}})
	}
	cases = append(cases,
		crossCase{name: "zones of us-east-1", probe: func(ctx context.Context, c *ec2.Client, _ crossNet) string {
			out, err := c.DescribeAvailabilityZones(ctx, &ec2.DescribeAvailabilityZonesInput{})
			if err != nil {
				return code(err)
			}
			var zones []string
			for _, z := range out.AvailabilityZones {
				zones = append(zones, fmt.Sprintf("%s %s %s %s", awssdk.ToString(z.ZoneName), z.State, awssdk.ToString(z.RegionName), awssdk.ToString(z.ZoneType)))
			}
			return strings.Join(zones, "; ")
		}},
		crossCase{name: "zone ids of us-east-1", probe: func(ctx context.Context, c *ec2.Client, _ crossNet) string {
			out, err := c.DescribeAvailabilityZones(ctx, &ec2.DescribeAvailabilityZonesInput{})
			if err != nil {
				return code(err)
			}
			var ids []string
			for _, z := range out.AvailabilityZones {
				ids = append(ids, awssdk.ToString(z.ZoneName)+"="+awssdk.ToString(z.ZoneId))
			}
			return strings.Join(ids, " ")
		}},
		crossCase{name: "a region by name", probe: func(ctx context.Context, c *ec2.Client, _ crossNet) string {
			out, err := c.DescribeRegions(ctx, &ec2.DescribeRegionsInput{RegionNames: []string{"eu-west-1"}})
			if err != nil || len(out.Regions) != 1 {
				return code(err)
			}
			r := out.Regions[0]
			return fmt.Sprintf("%s %s %s", awssdk.ToString(r.RegionName), awssdk.ToString(r.Endpoint), awssdk.ToString(r.OptInStatus))
		}},
		crossCase{name: "the default VPC", probe: func(ctx context.Context, c *ec2.Client, _ crossNet) string {
			out, err := c.DescribeVpcs(ctx, &ec2.DescribeVpcsInput{Filters: []types.Filter{{Name: awssdk.String("is-default"), Values: []string{"true"}}}})
			if err != nil || len(out.Vpcs) != 1 {
				return code(err)
			}
			v := out.Vpcs[0]
			return fmt.Sprintf("%s %s %s", awssdk.ToString(v.CidrBlock), v.State, v.InstanceTenancy)
		}},
		crossCase{name: "the default subnets", probe: func(ctx context.Context, c *ec2.Client, _ crossNet) string {
			out, err := c.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: []types.Filter{{Name: awssdk.String("default-for-az"), Values: []string{"true"}}}})
			if err != nil {
				return code(err)
			}
			var subnets []string
			for _, sn := range out.Subnets {
				subnets = append(subnets, fmt.Sprintf("%s %s public %v free %d", awssdk.ToString(sn.AvailabilityZone), awssdk.ToString(sn.CidrBlock),
					awssdk.ToBool(sn.MapPublicIpOnLaunch), awssdk.ToInt32(sn.AvailableIpAddressCount)))
			}
			slices.Sort(subnets)
			return strings.Join(subnets, "; ")
		}},
		crossCase{name: "the default group's rules", probe: func(ctx context.Context, c *ec2.Client, n crossNet) string {
			out, err := c.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{GroupIds: []string{n.defaultGroup}})
			if err != nil {
				return code(err)
			}
			g := out.SecurityGroups[0]
			rules := func(perms []types.IpPermission) string {
				var out []string
				for _, p := range perms {
					self := slices.ContainsFunc(p.UserIdGroupPairs, func(pair types.UserIdGroupPair) bool { return awssdk.ToString(pair.GroupId) == n.defaultGroup })
					var cidrs []string
					for _, r := range p.IpRanges {
						cidrs = append(cidrs, awssdk.ToString(r.CidrIp))
					}
					out = append(out, fmt.Sprintf("%s self %v %v", awssdk.ToString(p.IpProtocol), self, cidrs))
				}
				return strings.Join(out, ", ")
			}
			return fmt.Sprintf("%s %q in [%s] out [%s]", awssdk.ToString(g.GroupName), awssdk.ToString(g.Description), rules(g.IpPermissions), rules(g.IpPermissionsEgress))
		}},
		crossCase{name: "a subnet of a new VPC", probe: func(ctx context.Context, c *ec2.Client, n crossNet) string {
			out, err := c.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{SubnetIds: []string{n.subnet}})
			if err != nil {
				return code(err)
			}
			sn := out.Subnets[0]
			return fmt.Sprintf("%s %s default %v public %v free %d", awssdk.ToString(sn.AvailabilityZone), awssdk.ToString(sn.CidrBlock),
				awssdk.ToBool(sn.DefaultForAz), awssdk.ToBool(sn.MapPublicIpOnLaunch), awssdk.ToInt32(sn.AvailableIpAddressCount))
		}},
		crossCase{name: "a launch into a subnet goes to its zone", probe: func(ctx context.Context, c *ec2.Client, n crossNet) string {
			out, err := c.RunInstances(ctx, launch(image, func(in *ec2.RunInstancesInput) {
				in.SubnetId, in.SecurityGroupIds = awssdk.String(n.subnet), []string{n.group}
			}))
			if err != nil {
				return code(err)
			}
			inst := out.Instances[0]
			inSubnet := inRange("10.30.1.0/24", awssdk.ToString(inst.PrivateIpAddress))
			return fmt.Sprintf("%s in subnet %v vpc %v groups %d", awssdk.ToString(inst.Placement.AvailabilityZone), inSubnet,
				awssdk.ToString(inst.VpcId) == n.vpc, len(inst.SecurityGroups))
		}},
		crossCase{name: "a launch names an unknown subnet", probe: func(ctx context.Context, c *ec2.Client, _ crossNet) string {
			_, err := c.RunInstances(ctx, launch(image, func(in *ec2.RunInstancesInput) { in.SubnetId = awssdk.String("subnet-0123456789abcdef0") }))
			return code(err)
		}},
		crossCase{name: "a launch names an unknown group", probe: func(ctx context.Context, c *ec2.Client, _ crossNet) string {
			_, err := c.RunInstances(ctx, launch(image, func(in *ec2.RunInstancesInput) { in.SecurityGroupIds = []string{"sg-0123456789abcdef0"} }))
			return code(err)
		}},
		crossCase{name: "a launch's subnet is in another zone", probe: func(ctx context.Context, c *ec2.Client, n crossNet) string {
			_, err := c.RunInstances(ctx, launch(image, func(in *ec2.RunInstancesInput) {
				in.SubnetId, in.Placement = awssdk.String(n.subnet), &types.Placement{AvailabilityZone: awssdk.String("us-east-1a")}
			}))
			return code(err)
		}},
		crossCase{name: "a launch's group is of another VPC", probe: func(ctx context.Context, c *ec2.Client, n crossNet) string {
			_, err := c.RunInstances(ctx, launch(image, func(in *ec2.RunInstancesInput) {
				in.SubnetId, in.SecurityGroupIds = awssdk.String(n.subnet), []string{n.defaultGroup}
			}))
			return code(err)
		}},
		crossCase{name: "a subnet outside its VPC", probe: func(ctx context.Context, c *ec2.Client, n crossNet) string {
			_, err := c.CreateSubnet(ctx, &ec2.CreateSubnetInput{VpcId: awssdk.String(n.vpc), CidrBlock: awssdk.String("10.31.0.0/24")})
			return code(err)
		}},
		crossCase{name: "a subnet overlapping another", probe: func(ctx context.Context, c *ec2.Client, n crossNet) string {
			_, err := c.CreateSubnet(ctx, &ec2.CreateSubnetInput{VpcId: awssdk.String(n.vpc), CidrBlock: awssdk.String("10.30.1.0/25")})
			return code(err)
		}},
		crossCase{name: "a group's name taken", probe: func(ctx context.Context, c *ec2.Client, n crossNet) string {
			_, err := c.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{GroupName: awssdk.String("crosscheck"), Description: awssdk.String("again"), VpcId: awssdk.String(n.vpc)})
			return code(err)
		}},
		crossCase{name: "deleting a subnet in use", probe: func(ctx context.Context, c *ec2.Client, n crossNet) string {
			_, err := c.DeleteSubnet(ctx, &ec2.DeleteSubnetInput{SubnetId: awssdk.String(n.subnet)})
			return code(err)
		}},
		crossCase{name: "deleting the default group", probe: func(ctx context.Context, c *ec2.Client, n crossNet) string {
			_, err := c.DeleteSecurityGroup(ctx, &ec2.DeleteSecurityGroupInput{GroupId: awssdk.String(n.defaultGroup)})
			return code(err)
		}},
		crossCase{name: "an unknown instance type", probe: func(ctx context.Context, c *ec2.Client, _ crossNet) string {
			_, err := c.DescribeInstanceTypes(ctx, &ec2.DescribeInstanceTypesInput{InstanceTypes: []types.InstanceType{"p9.96xlarge"}})
			return code(err)
		}},
		crossCase{name: "an unknown region", probe: func(ctx context.Context, c *ec2.Client, _ crossNet) string {
			_, err := c.DescribeRegions(ctx, &ec2.DescribeRegionsInput{RegionNames: []string{"mars-north-1"}})
			return code(err)
		}},
		crossCase{name: "terminating answers shutting-down", probe: func(ctx context.Context, c *ec2.Client, _ crossNet) string {
			out, err := c.RunInstances(ctx, launch(image, func(*ec2.RunInstancesInput) {}))
			if err != nil {
				return code(err)
			}
			term, err := c.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{awssdk.ToString(out.Instances[0].InstanceId)}})
			if err != nil {
				return code(err)
			}
			s := term.TerminatingInstances[0]
			return fmt.Sprintf("%s %d -> %s %d", s.PreviousState.Name, awssdk.ToInt32(s.PreviousState.Code), s.CurrentState.Name, awssdk.ToInt32(s.CurrentState.Code))
		}},
		crossCase{name: "an instance in a default subnet has a public address", probe: func(ctx context.Context, c *ec2.Client, _ crossNet) string {
			out, err := c.RunInstances(ctx, launch(image, func(in *ec2.RunInstancesInput) {
				in.Placement = &types.Placement{AvailabilityZone: awssdk.String("us-east-1b")}
			}))
			if err != nil {
				return code(err)
			}
			desc, err := c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{awssdk.ToString(out.Instances[0].InstanceId)}})
			if err != nil {
				return code(err)
			}
			inst := desc.Reservations[0].Instances[0]
			return fmt.Sprintf("public %v dns %v private in the subnet %v", inst.PublicIpAddress != nil, strings.HasPrefix(awssdk.ToString(inst.PublicDnsName), "ec2-"),
				inRange("172.31.16.0/20", awssdk.ToString(inst.PrivateIpAddress)))
		}},
	)
	return cases
}

// TestMotoCrossCheck asks moto and the emulator the same questions.
func TestMotoCrossCheck(t *testing.T) {
	mb := moto(t)
	eb := emulator(t, catalog.Default())
	ctx := context.Background()
	mc, ec := mb.raw("us-east-1"), eb.raw("us-east-1")
	mn, en := crossSetup(t, ctx, mc), crossSetup(t, ctx, ec)
	motoCases, emuCases := crossCases(mb.image), crossCases(eb.image)
	// The catalog has types EC2 no longer describes, which moto's copy of
	// EC2's answers lacks: those are compared with nothing.
	motoKnows := map[string]bool{}
	pages := ec2.NewDescribeInstanceTypesPaginator(mc, &ec2.DescribeInstanceTypesInput{})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			t.Fatalf("listing moto's instance types: %v", err)
		}
		for _, it := range page.InstanceTypes {
			motoKnows[string(it.InstanceType)] = true
		}
	}
	for i, c := range emuCases {
		t.Run(c.name, func(t *testing.T) {
			if name, ok := strings.CutPrefix(c.name, "instance type "); ok && !motoKnows[name] {
				t.Skipf("moto does not describe %s", name)
			}
			want := c.probe(ctx, ec, en)
			got := motoCases[i].probe(ctx, mc, mn)
			why, known := motoDifferences[c.name]
			switch {
			case got == want && known:
				t.Errorf("known difference %q no longer shows (both answer %s): remove it from motoDifferences", why, got)
			case got == want:
			case known:
				t.Skipf("known difference: %s\nemulator: %s\nmoto:     %s", why, want, got)
			default:
				t.Errorf("emulator and moto differ:\nemulator: %s\nmoto:     %s", want, got)
			}
		})
	}
}
