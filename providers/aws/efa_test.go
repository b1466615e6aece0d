// SPDX-License-Identifier: Apache-2.0

package aws

import (
	"cmp"
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

// offerIn is an on-demand offer of the type in the first zone of
// us-east-1 the backend's world has it.
func (b backend) offerIn(t *testing.T, instanceType string) planner.OfferKey {
	t.Helper()
	region, ok := b.world.Region(catalog.AWS, "us-east-1")
	if !ok {
		t.Fatal("no us-east-1")
	}
	for _, z := range region.Zones {
		if _, ok := b.world.Type(catalog.AWS, z, instanceType, catalog.OnDemand); ok {
			return planner.OfferKey{Cloud: catalog.AWS, Region: "us-east-1", Zone: z, InstanceType: instanceType, Market: catalog.OnDemand}
		}
	}
	t.Fatalf("no zone of us-east-1 offers %s", instanceType)
	return planner.OfferKey{}
}

// interfacesOf reads an instance's network interfaces back through
// DescribeInstances, by network card and device.
func (b backend) interfacesOf(t *testing.T, region, id string) []types.InstanceNetworkInterface {
	t.Helper()
	out, err := b.raw(region).DescribeInstances(context.Background(), &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Reservations) != 1 || len(out.Reservations[0].Instances) != 1 {
		t.Fatalf("DescribeInstances of %s: %d reservations", id, len(out.Reservations))
	}
	nics := out.Reservations[0].Instances[0].NetworkInterfaces
	slices.SortFunc(nics, func(a, b types.InstanceNetworkInterface) int {
		return cmp.Or(cmp.Compare(awssdk.ToInt32(a.Attachment.NetworkCardIndex), awssdk.ToInt32(b.Attachment.NetworkCardIndex)),
			cmp.Compare(awssdk.ToInt32(a.Attachment.DeviceIndex), awssdk.ToInt32(b.Attachment.DeviceIndex)))
	})
	return nics
}

// A p5.48xlarge with 32 EFAs has them as AWS lays them out: the ENA
// primary at card 0 device 0, an EFA-only interface beside it at device 1,
// and one EFA-only interface on device 0 of each of cards 1 to 31; each in
// the zone's subnet and the configured group, and only the primary with
// an address.
func TestCreateWithEFAReadsBackItsInterfaces(t *testing.T) {
	b := emulator(t, catalog.Default())
	offer := b.offerIn(t, "p5.48xlarge")
	p, subnet, group := b.providerInNetwork(t, offer)
	req := request(offer, planner.Token("f", "w", offer, "rev", 0))
	req.EFA = 32
	inst, err := p.Create(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}

	nics := b.interfacesOf(t, offer.Region, inst.ID)
	if len(nics) != 33 {
		t.Fatalf("%d interfaces, want 33: the ENA and 32 EFA-only", len(nics))
	}
	efas := 0
	for i, nic := range nics {
		card, device := awssdk.ToInt32(nic.Attachment.NetworkCardIndex), awssdk.ToInt32(nic.Attachment.DeviceIndex)
		wantCard, wantDevice, wantType := int32(i-1), int32(0), "efa-only"
		switch i {
		case 0:
			wantCard, wantType = 0, "interface"
		case 1:
			wantCard, wantDevice = 0, 1
		}
		if card != wantCard || device != wantDevice || awssdk.ToString(nic.InterfaceType) != wantType {
			t.Errorf("interface %d: %s at card %d device %d, want %s at card %d device %d", i, awssdk.ToString(nic.InterfaceType), card, device, wantType, wantCard, wantDevice)
		}
		if awssdk.ToString(nic.InterfaceType) == "efa-only" {
			efas++
		}
		if awssdk.ToString(nic.SubnetId) != subnet || len(nic.Groups) != 1 || awssdk.ToString(nic.Groups[0].GroupId) != group {
			t.Errorf("interface %d in %s with groups %v", i, awssdk.ToString(nic.SubnetId), nic.Groups)
		}
		if !awssdk.ToBool(nic.Attachment.DeleteOnTermination) {
			t.Errorf("interface %d outlives the node", i)
		}
		if hasIP := nic.PrivateIpAddress != nil; hasIP != (i == 0) {
			t.Errorf("interface %d (%s) has address %q", i, wantType, awssdk.ToString(nic.PrivateIpAddress))
		}
	}
	if efas != 32 {
		t.Errorf("%d EFA interfaces, want 32", efas)
	}

	// A repeat sends the same interfaces, so EC2 answers with the node.
	again, err := p.Create(context.Background(), req)
	if err != nil || again.ID != inst.ID {
		t.Errorf("a repeat: %s, %v; want %s", again.ID, err, inst.ID)
	}
}

// A batch gets the interfaces as a single node does: each of its nodes
// has them.
func TestCreateBatchWithEFA(t *testing.T) {
	b := emulator(t, catalog.Default())
	p := b.provider(t, catalog.Default())
	offer := b.offerIn(t, "p4d.24xlarge")
	req := batch(offer, 0, 3)
	req.EFA = 4
	insts, err := p.CreateBatch(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	for _, inst := range insts {
		nics := b.interfacesOf(t, offer.Region, inst.ID)
		var cards []int32
		for _, nic := range nics {
			if awssdk.ToString(nic.InterfaceType) == "efa-only" {
				cards = append(cards, awssdk.ToInt32(nic.Attachment.NetworkCardIndex))
			}
		}
		if len(nics) != 5 || !slices.Equal(cards, []int32{0, 1, 2, 3}) {
			t.Errorf("%s: %d interfaces, EFA-only on cards %v", inst.ID, len(nics), cards)
		}
	}
}

// EC2 refuses EFAs on a type without them, and more than a type takes;
// the provider reports both as invalid, and launches nothing.
func TestCreateWithEFARefused(t *testing.T) {
	b := emulator(t, catalog.Default())
	p := b.provider(t, catalog.Default())
	for _, c := range []struct {
		instanceType string
		efa          int
		code         string // EC2's; none for a request refused before it is sent
	}{
		{"g6.2xlarge", 1, "InvalidParameterCombination"},
		{"p4d.24xlarge", 5, "InvalidParameterCombination"},
		{"p4d.24xlarge", -1, ""},
	} {
		offer := b.offerIn(t, c.instanceType)
		req := request(offer, planner.Token("f", "w", offer, "rev", 0))
		req.EFA = c.efa
		_, err := p.Create(context.Background(), req)
		var perr *providers.Error
		if !errors.Is(err, providers.ErrInvalid) || !errors.As(err, &perr) || perr.Code != c.code {
			t.Errorf("%d EFAs on %s: %v, want an invalid error with code %q", c.efa, c.instanceType, err, c.code)
		}
	}
	if n := len(b.world.List(catalog.AWS, nil)); n != 0 {
		t.Errorf("%d instances launched", n)
	}
}

// Without EFA the request is as before: the subnet and groups at the
// instance level, no interfaces; and the node has EC2's one interface.
func TestCreateWithoutEFAIsUnchanged(t *testing.T) {
	b := emulator(t, catalog.Default())
	p, subnet, group := b.providerInNetwork(t, testOffer)
	req := request(testOffer, planner.Token("f", "w", testOffer, "rev", 0))
	in, err := p.runInput(req, 1, "/dev/xvda")
	if err != nil {
		t.Fatal(err)
	}
	if in.NetworkInterfaces != nil || awssdk.ToString(in.SubnetId) != subnet || !slices.Equal(in.SecurityGroupIds, []string{group}) {
		t.Errorf("interfaces %v, subnet %q, groups %v", in.NetworkInterfaces, awssdk.ToString(in.SubnetId), in.SecurityGroupIds)
	}
	inst, err := p.Create(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	nics := b.interfacesOf(t, testOffer.Region, inst.ID)
	if len(nics) != 1 || awssdk.ToString(nics[0].InterfaceType) != "interface" || awssdk.ToString(nics[0].SubnetId) != subnet ||
		nics[0].PrivateIpAddress == nil {
		t.Errorf("interfaces %+v", nics)
	}
}

// With EFA, the subnet and groups go on the interfaces only: EC2 refuses
// them at both levels.
func TestRunInputEFAMovesTheNetworkToTheInterfaces(t *testing.T) {
	b := backend{regions: []string{"us-east-1"}, image: "ami-0123456789abcdef0"}
	cfg := b.config()
	cfg.Launch.SubnetByZone = map[string]string{testOffer.Zone: "subnet-0123456789abcdef0"}
	cfg.Launch.SecurityGroups = []string{"sg-0123456789abcdef0", "sg-0123456789abcdef1"}
	p := &Provider{cfg: cfg}
	req := request(testOffer, "tok-efa")
	req.EFA = 2
	in, err := p.runInput(req, 1, "/dev/xvda")
	if err != nil {
		t.Fatal(err)
	}
	if in.SubnetId != nil || in.SecurityGroupIds != nil {
		t.Errorf("instance-level subnet %q and groups %v beside interfaces", awssdk.ToString(in.SubnetId), in.SecurityGroupIds)
	}
	type slot struct {
		card, device int32
		kind         string
	}
	want := []slot{{0, 0, "interface"}, {0, 1, "efa-only"}, {1, 0, "efa-only"}}
	if len(in.NetworkInterfaces) != len(want) {
		t.Fatalf("%d interfaces, want %d", len(in.NetworkInterfaces), len(want))
	}
	for i, nic := range in.NetworkInterfaces {
		got := slot{awssdk.ToInt32(nic.NetworkCardIndex), awssdk.ToInt32(nic.DeviceIndex), awssdk.ToString(nic.InterfaceType)}
		if got != want[i] || awssdk.ToString(nic.SubnetId) != "subnet-0123456789abcdef0" || !slices.Equal(nic.Groups, cfg.Launch.SecurityGroups) ||
			!awssdk.ToBool(nic.DeleteOnTermination) {
			t.Errorf("interface %d: %+v", i, nic)
		}
	}
	// A zone without a subnet leaves each interface to the default one.
	cfg.Launch.SubnetByZone = nil
	if in, err = p.runInput(req, 1, "/dev/xvda"); err != nil {
		t.Fatal(err)
	}
	if in.NetworkInterfaces[0].SubnetId != nil {
		t.Errorf("subnet %q with none configured", awssdk.ToString(in.NetworkInterfaces[0].SubnetId))
	}
}
