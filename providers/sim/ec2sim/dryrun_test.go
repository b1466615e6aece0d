// SPDX-License-Identifier: Apache-2.0

package ec2sim_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/gpufleet/gpufleet/providers/sim"
)

// Every call that changes something, made as a dry run where it would
// succeed, answers DryRunOperation and leaves the world byte for byte as it
// was: its saved state is compared before and after. The same calls with a
// resource that does not exist answer that resource's error.
func TestADryRunChangesNothing(t *testing.T) {
	state := filepath.Join(t.TempDir(), "world.json")
	f := newFixture(t, sim.Config{StatePath: state})
	c := f.client("us-east-1", 1)
	ctx := context.Background()

	vpc, err := c.CreateVpc(ctx, &ec2.CreateVpcInput{CidrBlock: aws.String("10.7.0.0/16")})
	if err != nil {
		t.Fatal(err)
	}
	vpcID := vpc.Vpc.VpcId
	subnet, err := c.CreateSubnet(ctx, &ec2.CreateSubnetInput{VpcId: vpcID, CidrBlock: aws.String("10.7.1.0/24"), AvailabilityZone: aws.String("us-east-1b")})
	if err != nil {
		t.Fatal(err)
	}
	group, err := c.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{VpcId: vpcID, GroupName: aws.String("train"), Description: aws.String("train")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreatePlacementGroup(ctx, &ec2.CreatePlacementGroupInput{GroupName: aws.String("pack"), Strategy: types.PlacementStrategyCluster}); err != nil {
		t.Fatal(err)
	}
	run, err := c.RunInstances(ctx, &ec2.RunInstancesInput{ImageId: aws.String("ami-0123456789abcdef0"), InstanceType: types.InstanceTypeG4dnXlarge,
		MinCount: aws.Int32(1), MaxCount: aws.Int32(1), SubnetId: subnet.Subnet.SubnetId})
	if err != nil {
		t.Fatal(err)
	}
	instance := run.Instances[0].InstanceId

	yes := aws.Bool(true)
	calls := []struct {
		name string
		call func() error
	}{
		{"RunInstances", func() error {
			_, err := c.RunInstances(ctx, &ec2.RunInstancesInput{DryRun: yes, ImageId: aws.String("ami-0123456789abcdef0"), InstanceType: types.InstanceTypeG4dnXlarge, MinCount: aws.Int32(2), MaxCount: aws.Int32(2), ClientToken: aws.String("dry")})
			return err
		}},
		{"TerminateInstances", func() error {
			_, err := c.TerminateInstances(ctx, &ec2.TerminateInstancesInput{DryRun: yes, InstanceIds: []string{*instance}})
			return err
		}},
		{"CreateTags", func() error {
			_, err := c.CreateTags(ctx, &ec2.CreateTagsInput{DryRun: yes, Resources: []string{*instance, *vpcID}, Tags: []types.Tag{{Key: aws.String("team"), Value: aws.String("ml")}}})
			return err
		}},
		{"CreatePlacementGroup", func() error {
			_, err := c.CreatePlacementGroup(ctx, &ec2.CreatePlacementGroupInput{DryRun: yes, GroupName: aws.String("spread"), Strategy: types.PlacementStrategySpread})
			return err
		}},
		{"DeletePlacementGroup", func() error {
			_, err := c.DeletePlacementGroup(ctx, &ec2.DeletePlacementGroupInput{DryRun: yes, GroupName: aws.String("pack")})
			return err
		}},
		{"CreateVpc", func() error {
			_, err := c.CreateVpc(ctx, &ec2.CreateVpcInput{DryRun: yes, CidrBlock: aws.String("10.8.0.0/16")})
			return err
		}},
		{"CreateSubnet", func() error {
			_, err := c.CreateSubnet(ctx, &ec2.CreateSubnetInput{DryRun: yes, VpcId: vpcID, CidrBlock: aws.String("10.7.2.0/24"), AvailabilityZone: aws.String("us-east-1b")})
			return err
		}},
		{"CreateSecurityGroup", func() error {
			_, err := c.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{DryRun: yes, VpcId: vpcID, GroupName: aws.String("serve"), Description: aws.String("serve")})
			return err
		}},
		{"AuthorizeSecurityGroupIngress", func() error {
			_, err := c.AuthorizeSecurityGroupIngress(ctx, &ec2.AuthorizeSecurityGroupIngressInput{DryRun: yes, GroupId: group.GroupId, IpProtocol: aws.String("tcp"), FromPort: aws.Int32(22), ToPort: aws.Int32(22), CidrIp: aws.String("10.0.0.0/8")})
			return err
		}},
		{"AuthorizeSecurityGroupEgress", func() error {
			_, err := c.AuthorizeSecurityGroupEgress(ctx, &ec2.AuthorizeSecurityGroupEgressInput{DryRun: yes, GroupId: group.GroupId, IpPermissions: []types.IpPermission{{IpProtocol: aws.String("udp"), FromPort: aws.Int32(53), ToPort: aws.Int32(53), IpRanges: []types.IpRange{{CidrIp: aws.String("10.0.0.0/8")}}}}})
			return err
		}},
		{"DeleteSecurityGroup", func() error {
			_, err := c.DeleteSecurityGroup(ctx, &ec2.DeleteSecurityGroupInput{DryRun: yes, GroupId: aws.String("sg-0123456789abcdef0")})
			return err
		}},
		{"DeleteSubnet", func() error {
			_, err := c.DeleteSubnet(ctx, &ec2.DeleteSubnetInput{DryRun: yes, SubnetId: aws.String("subnet-0123456789abcdef0")})
			return err
		}},
		{"DeleteVpc", func() error {
			_, err := c.DeleteVpc(ctx, &ec2.DeleteVpcInput{DryRun: yes, VpcId: aws.String("vpc-0123456789abcdef0")})
			return err
		}},
	}
	// The deletes name what does not exist: a dry run finds that out as
	// the call would.
	want := map[string]string{"DeleteSecurityGroup": "InvalidGroup.NotFound", "DeleteSubnet": "InvalidSubnetID.NotFound", "DeleteVpc": "InvalidVpcID.NotFound"}
	saved := func() []byte {
		t.Helper()
		if err := f.world.Save(); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(state)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	before := saved()
	for _, tc := range calls {
		code, status := "DryRunOperation", 412
		if w, ok := want[tc.name]; ok {
			code, status = w, 400
		}
		wantAPIError(t, tc.call(), code, status)
		if after := saved(); !bytes.Equal(before, after) {
			t.Fatalf("a dry run of %s changed the world", tc.name)
		}
	}
}
