// SPDX-License-Identifier: Apache-2.0

package ec2sim_test

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/gpufleet/gpufleet/providers/sim"
)

func nic(card, device int32, kind string) types.InstanceNetworkInterfaceSpecification {
	return types.InstanceNetworkInterfaceSpecification{
		NetworkCardIndex:    aws.Int32(card),
		DeviceIndex:         aws.Int32(device),
		InterfaceType:       aws.String(kind),
		DeleteOnTermination: aws.Bool(true),
	}
}

func withInterfaces(in *ec2.RunInstancesInput, nics ...types.InstanceNetworkInterfaceSpecification) *ec2.RunInstancesInput {
	in.NetworkInterfaces = nics
	return in
}

// efaLayout is AWS's layout for n EFAs: the ENA primary, an EFA-only
// interface beside it, and one on each further card.
func efaLayout(n int32) []types.InstanceNetworkInterfaceSpecification {
	out := []types.InstanceNetworkInterfaceSpecification{nic(0, 0, "interface"), nic(0, 1, "efa-only")}
	for card := int32(1); card < n; card++ {
		out = append(out, nic(card, 0, "efa-only"))
	}
	return out
}

// The interfaces a launch asks for come back in DescribeInstances, with
// their types, places, subnet, groups and addresses: only interfaces with
// an ENA have one, and every answer gives the same.
func TestNetworkInterfacesRoundTrip(t *testing.T) {
	f := newFixture(t, sim.Config{})
	c := f.client("us-east-1", 1)
	net := newNetwork(t, c, "us-east-1a")
	subnet, group := net.subnet, net.group
	nics := []types.InstanceNetworkInterfaceSpecification{nic(0, 0, "interface"), nic(0, 1, "efa-only"), nic(1, 0, "efa"), nic(2, 0, "efa-only")}
	for i := range nics {
		nics[i].SubnetId = aws.String(subnet)
		nics[i].Groups = []string{group}
	}
	nics[3].DeleteOnTermination = aws.Bool(false)
	out := mustRun(t, c, withInterfaces(runInput("p4d.24xlarge", "us-east-1a", "efa-rt"), nics...))
	id := aws.ToString(out.Instances[0].InstanceId)
	if n := len(out.Instances[0].NetworkInterfaces); n != 4 {
		t.Errorf("RunInstances answers with %d interfaces, want 4", n)
	}

	inst := describeOne(t, c, id)
	if aws.ToString(inst.SubnetId) != subnet || len(inst.SecurityGroups) != 1 || aws.ToString(inst.SecurityGroups[0].GroupId) != group {
		t.Errorf("the instance is in %s with %v, want the primary's", aws.ToString(inst.SubnetId), inst.SecurityGroups)
	}
	got := inst.NetworkInterfaces
	if len(got) != 4 {
		t.Fatalf("%d interfaces, want 4", len(got))
	}
	addresses := map[string]bool{}
	for i, want := range nics {
		g := got[i]
		if aws.ToString(g.InterfaceType) != aws.ToString(want.InterfaceType) ||
			aws.ToInt32(g.Attachment.NetworkCardIndex) != aws.ToInt32(want.NetworkCardIndex) ||
			aws.ToInt32(g.Attachment.DeviceIndex) != aws.ToInt32(want.DeviceIndex) ||
			aws.ToBool(g.Attachment.DeleteOnTermination) != aws.ToBool(want.DeleteOnTermination) {
			t.Errorf("interface %d: %s at card %d device %d, deleted with the instance %v", i, aws.ToString(g.InterfaceType),
				aws.ToInt32(g.Attachment.NetworkCardIndex), aws.ToInt32(g.Attachment.DeviceIndex), aws.ToBool(g.Attachment.DeleteOnTermination))
		}
		if aws.ToString(g.SubnetId) != subnet || len(g.Groups) != 1 || aws.ToString(g.Groups[0].GroupId) != group ||
			!strings.HasPrefix(aws.ToString(g.NetworkInterfaceId), "eni-") {
			t.Errorf("interface %d: %s in %s with %v", i, aws.ToString(g.NetworkInterfaceId), aws.ToString(g.SubnetId), g.Groups)
		}
		ip := aws.ToString(g.PrivateIpAddress)
		if (ip != "") == (aws.ToString(want.InterfaceType) == "efa-only") {
			t.Errorf("interface %d (%s) has address %q", i, aws.ToString(g.InterfaceType), ip)
		}
		if ip != "" {
			if addresses[ip] {
				t.Errorf("address %s given twice", ip)
			}
			addresses[ip] = true
		}
	}
	if ip := aws.ToString(got[0].PrivateIpAddress); ip != aws.ToString(inst.PrivateIpAddress) {
		t.Errorf("the primary's address %s, the instance's %s", ip, aws.ToString(inst.PrivateIpAddress))
	}
	again := describeOne(t, c, id).NetworkInterfaces
	for i := range got {
		if aws.ToString(again[i].PrivateIpAddress) != aws.ToString(got[i].PrivateIpAddress) ||
			aws.ToString(again[i].NetworkInterfaceId) != aws.ToString(got[i].NetworkInterfaceId) {
			t.Errorf("interface %d reads differently the second time", i)
		}
	}
}

// A launch without interfaces has EC2's one: an ENA at card 0 device 0,
// in the default subnet and group, with the instance's address.
func TestDefaultNetworkInterface(t *testing.T) {
	f := newFixture(t, sim.Config{})
	c := f.client("us-east-1", 1)
	inst := describeOne(t, c, aws.ToString(mustRun(t, c, runInput("g4dn.xlarge", "us-east-1a", "")).Instances[0].InstanceId))
	if len(inst.NetworkInterfaces) != 1 {
		t.Fatalf("%d interfaces, want 1", len(inst.NetworkInterfaces))
	}
	g := inst.NetworkInterfaces[0]
	if aws.ToString(g.InterfaceType) != "interface" || aws.ToInt32(g.Attachment.DeviceIndex) != 0 || aws.ToInt32(g.Attachment.NetworkCardIndex) != 0 ||
		aws.ToString(g.SubnetId) != aws.ToString(inst.SubnetId) || aws.ToString(g.PrivateIpAddress) != aws.ToString(inst.PrivateIpAddress) ||
		len(g.Groups) != 1 || aws.ToString(g.Groups[0].GroupName) != "default" {
		t.Errorf("interface %+v", g)
	}
}

// The largest layout a p5.48xlarge takes launches; one EFA more is
// refused.
func TestEFALimitOfTheType(t *testing.T) {
	f := newFixture(t, sim.Config{})
	c := f.client("us-east-1", 1)
	out := mustRun(t, c, withInterfaces(runInput("p5.48xlarge", "us-east-1a", ""), efaLayout(32)...))
	if n := len(describeOne(t, c, aws.ToString(out.Instances[0].InstanceId)).NetworkInterfaces); n != 33 {
		t.Errorf("%d interfaces, want 33", n)
	}
	_, err := c.RunInstances(context.Background(), withInterfaces(runInput("p5.48xlarge", "us-east-1a", ""), efaLayout(33)...))
	if msg := wantAPIError(t, err, "InvalidParameterCombination", 400); msg != "The instance type p5.48xlarge supports at most 32 EFA interfaces, and the request specifies 33." {
		t.Errorf("message %q", msg)
	}
}

// What EC2 refuses of a launch's interfaces, and in what words; none of
// it launches anything.
func TestNetworkInterfaceRefusals(t *testing.T) {
	f := newFixture(t, sim.Config{})
	c := f.client("us-east-1", 1)
	for _, tc := range []struct {
		name, code, message string
		in                  *ec2.RunInstancesInput
	}{
		{
			name: "with an instance-level subnet",
			in: func() *ec2.RunInstancesInput {
				in := withInterfaces(runInput("p4d.24xlarge", "us-east-1a", ""), efaLayout(2)...)
				in.SubnetId = aws.String("subnet-0123456789abcdef0")
				return in
			}(),
			code:    "InvalidParameterCombination",
			message: "Network interfaces and an instance-level subnet ID may not be specified on the same request",
		},
		{
			name: "with instance-level groups",
			in: func() *ec2.RunInstancesInput {
				in := withInterfaces(runInput("p4d.24xlarge", "us-east-1a", ""), efaLayout(2)...)
				in.SecurityGroupIds = []string{"sg-0123456789abcdef0"}
				return in
			}(),
			code:    "InvalidParameterCombination",
			message: "Network interfaces and an instance-level security groups may not be specified on the same request",
		},
		{
			name:    "EFA-only on a type without EFA",
			in:      withInterfaces(runInput("g6.2xlarge", "us-east-1a", ""), efaLayout(1)...),
			code:    "InvalidParameterCombination",
			message: "The instance type g6.2xlarge does not support Elastic Fabric Adapters (interface type efa or efa-only).",
		},
		{
			name:    "EFA on a type without EFA",
			in:      withInterfaces(runInput("g4dn.xlarge", "us-east-1a", ""), nic(0, 0, "efa")),
			code:    "InvalidParameterCombination",
			message: "The instance type g4dn.xlarge does not support Elastic Fabric Adapters (interface type efa or efa-only).",
		},
		{
			name:    "more EFAs than the type takes",
			in:      withInterfaces(runInput("p4d.24xlarge", "us-east-1a", ""), efaLayout(5)...),
			code:    "InvalidParameterCombination",
			message: "The instance type p4d.24xlarge supports at most 4 EFA interfaces, and the request specifies 5.",
		},
		{
			name:    "an EFA-only primary",
			in:      withInterfaces(runInput("p4d.24xlarge", "us-east-1a", ""), nic(0, 0, "efa-only"), nic(1, 0, "efa-only")),
			code:    "InvalidParameterCombination",
			message: "An EFA-only network interface cannot be the primary network interface (network card 0, device index 0).",
		},
		{
			name:    "no primary",
			in:      withInterfaces(runInput("p4d.24xlarge", "us-east-1a", ""), nic(0, 1, "efa-only"), nic(1, 0, "efa-only")),
			code:    "InvalidParameterCombination",
			message: "Primary network interface required when secondary network interface(s) specified",
		},
		{
			name:    "a card and device twice",
			in:      withInterfaces(runInput("p4d.24xlarge", "us-east-1a", ""), nic(0, 0, "interface"), nic(1, 0, "efa-only"), nic(1, 0, "efa")),
			code:    "InvalidParameterValue",
			message: "Each network interface requires a unique device index on its network card: network card 1, device index 0 is given more than once.",
		},
		{
			name: "a public address with several interfaces",
			in: func() *ec2.RunInstancesInput {
				in := withInterfaces(runInput("p4d.24xlarge", "us-east-1a", ""), efaLayout(2)...)
				in.NetworkInterfaces[0].AssociatePublicIpAddress = aws.Bool(true)
				return in
			}(),
			code:    "InvalidParameterCombination",
			message: "The associatePublicIPAddress parameter cannot be specified when launching with multiple network interfaces.",
		},
		{
			name:    "an unknown interface type",
			in:      withInterfaces(runInput("p4d.24xlarge", "us-east-1a", ""), nic(0, 0, "trunk")),
			code:    "InvalidParameterValue",
			message: "Value (trunk) for parameter interfaceType is invalid. Valid values: interface, efa, efa-only",
		},
		{
			name: "a malformed group on an interface",
			in: func() *ec2.RunInstancesInput {
				in := withInterfaces(runInput("p4d.24xlarge", "us-east-1a", ""), efaLayout(2)...)
				in.NetworkInterfaces[1].Groups = []string{"default"}
				return in
			}(),
			code:    "InvalidGroupId.Malformed",
			message: `Invalid id: "default" (expecting "sg-...")`,
		},
		{
			name: "no device index",
			in: func() *ec2.RunInstancesInput {
				in := withInterfaces(runInput("p4d.24xlarge", "us-east-1a", ""), nic(0, 0, "interface"))
				in.NetworkInterfaces[0].DeviceIndex = nil
				return in
			}(),
			code:    "MissingParameter",
			message: "The request must contain the parameter NetworkInterface.1.DeviceIndex",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.RunInstances(context.Background(), tc.in)
			if msg := wantAPIError(t, err, tc.code, 400); msg != tc.message {
				t.Errorf("message %q, want %q", msg, tc.message)
			}
		})
	}
	if n := len(f.world.List("aws", nil)); n != 0 {
		t.Errorf("%d instances launched", n)
	}
}

// A ClientToken replay must repeat the interfaces: another layout is
// another request.
func TestNetworkInterfacesArePartOfIdempotency(t *testing.T) {
	f := newFixture(t, sim.Config{})
	c := f.client("us-east-1", 1)
	first := mustRun(t, c, withInterfaces(runInput("p4d.24xlarge", "us-east-1a", "tok-efa"), efaLayout(4)...))
	again := mustRun(t, c, withInterfaces(runInput("p4d.24xlarge", "us-east-1a", "tok-efa"), efaLayout(4)...))
	if aws.ToString(again.Instances[0].InstanceId) != aws.ToString(first.Instances[0].InstanceId) {
		t.Error("a replay with the same interfaces launched again")
	}
	_, err := c.RunInstances(context.Background(), withInterfaces(runInput("p4d.24xlarge", "us-east-1a", "tok-efa"), efaLayout(2)...))
	wantAPIError(t, err, "IdempotentParameterMismatch", 400)
}

// A terminated instance's interfaces are released with it.
func TestTerminatedInstanceHasNoInterfaces(t *testing.T) {
	f := newFixture(t, sim.Config{})
	c := f.client("us-east-1", 1)
	id := aws.ToString(mustRun(t, c, withInterfaces(runInput("p4d.24xlarge", "us-east-1a", ""), efaLayout(4)...)).Instances[0].InstanceId)
	// The second call finds it terminated, as TestTerminateInstances shows.
	for range 2 {
		if _, err := c.TerminateInstances(context.Background(), &ec2.TerminateInstancesInput{InstanceIds: []string{id}}); err != nil {
			t.Fatal(err)
		}
	}
	inst := describeOne(t, c, id)
	if inst.State.Name != types.InstanceStateNameTerminated || len(inst.NetworkInterfaces) != 0 {
		t.Errorf("%s instance lists %d interfaces", inst.State.Name, len(inst.NetworkInterfaces))
	}
}
