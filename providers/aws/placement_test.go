// SPDX-License-Identifier: Apache-2.0

package aws

import (
	"context"
	"errors"
	"testing"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

func testGroup(offer planner.OfferKey, fleet, workload string) providers.PlacementGroup {
	return providers.PlacementGroup{Name: providers.PlacementGroupName(fleet, workload, offer.Zone), Region: offer.Region, Zone: offer.Zone, Fleet: fleet, Workload: workload}
}

// rawGroup creates a group behind the provider's back, with these tags.
func (b backend) rawGroup(ctx context.Context, region, name string, kv ...string) error {
	in := &ec2.CreatePlacementGroupInput{GroupName: awssdk.String(name), Strategy: types.PlacementStrategyCluster}
	if len(kv) > 0 {
		spec := types.TagSpecification{ResourceType: types.ResourceTypePlacementGroup}
		for i := 0; i+1 < len(kv); i += 2 {
			spec.Tags = append(spec.Tags, types.Tag{Key: awssdk.String(kv[i]), Value: awssdk.String(kv[i+1])})
		}
		in.TagSpecifications = []types.TagSpecification{spec}
	}
	_, err := b.raw(region).CreatePlacementGroup(ctx, in)
	return err
}

func TestRunInputPlacementGroup(t *testing.T) {
	b := backend{regions: []string{"us-east-1"}, image: "ami-0123456789abcdef0"}
	p := &Provider{cfg: b.config()}
	req := request(testOffer, "gf1-0123456789abcdef0123456789abcdef")
	in, err := p.runInput(req, 1, "/dev/xvda")
	if err != nil {
		t.Fatal(err)
	}
	if in.Placement.GroupName != nil {
		t.Errorf("a node of no group is launched into %q", awssdk.ToString(in.Placement.GroupName))
	}
	req.PlacementGroup = "gf-f-w-us-east-1a"
	if in, err = p.runInput(req, 8, "/dev/xvda"); err != nil {
		t.Fatal(err)
	}
	if got := awssdk.ToString(in.Placement.GroupName); got != req.PlacementGroup || awssdk.ToString(in.Placement.AvailabilityZone) != testOffer.Zone {
		t.Errorf("placement %q in %q", got, awssdk.ToString(in.Placement.AvailabilityZone))
	}
}

// A zone gang's group, from its creation to its removal: ensured twice, a
// batch launched into it, listed, kept while its nodes live, removed once
// they have ended, and removed again as a success.
func TestPlacementGroupLifecycle(t *testing.T) {
	b := emulator(t, catalog.Default())
	p := b.provider(t, catalog.Default())
	ctx := context.Background()
	g := testGroup(testOffer, "f", "w")
	for range 2 {
		if err := p.EnsurePlacementGroup(ctx, g); err != nil {
			t.Fatalf("ensuring %s: %v", g.Name, err)
		}
	}
	out, err := b.raw(g.Region).DescribePlacementGroups(ctx, &ec2.DescribePlacementGroupsInput{})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.PlacementGroups) != 1 {
		t.Fatalf("%d groups after two ensures, want 1", len(out.PlacementGroups))
	}
	made := out.PlacementGroups[0]
	tags := tagMap(made.Tags)
	if made.Strategy != types.PlacementStrategyCluster || tags[providers.TagFleet] != "f" || tags[providers.TagWorkload] != "w" || tags[tagZone] != g.Zone {
		t.Errorf("group made with strategy %q and tags %v", made.Strategy, tags)
	}

	// Beside it, groups the listing must leave out: one without
	// gpufleet's tags, and one of another region it lists apart.
	if err := b.rawGroup(ctx, "us-east-1", "theirs", "team", "ml"); err != nil {
		t.Fatal(err)
	}
	west := testGroup(planner.OfferKey{Cloud: catalog.AWS, Region: "us-west-2", Zone: "us-west-2a"}, "f", "w")
	if err := p.EnsurePlacementGroup(ctx, west); err != nil {
		t.Fatal(err)
	}
	listed, err := p.PlacementGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(listed) != 2 || listed[0] != g || listed[1] != west {
		t.Errorf("PlacementGroups = %+v, want %+v and %+v", listed, g, west)
	}

	req := batch(testOffer, 0, 4)
	req.PlacementGroup = g.Name
	insts, err := p.CreateBatch(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	described, err := b.raw(g.Region).DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: instanceIDs(insts)})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range described.Reservations {
		for _, inst := range r.Instances {
			n++
			if got := awssdk.ToString(inst.Placement.GroupName); got != g.Name {
				t.Errorf("%s launched into group %q, want %q", awssdk.ToString(inst.InstanceId), got, g.Name)
			}
		}
	}
	if n != 4 {
		t.Errorf("described %d nodes, want 4", n)
	}

	err = p.DeletePlacementGroup(ctx, g)
	var pe *providers.Error
	if !errors.As(err, &pe) || pe.Kind != providers.KindUnavailable || pe.Code != codeGroupInUse {
		t.Fatalf("deleting a group in use: %v, want unavailable with %s", err, codeGroupInUse)
	}
	for _, inst := range insts {
		if err := p.Delete(ctx, inst); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		if err := p.DeletePlacementGroup(ctx, g); err != nil {
			t.Fatalf("deleting the emptied group: %v", err)
		}
	}
	if listed, err := p.PlacementGroups(ctx); err != nil || len(listed) != 1 || listed[0] != west {
		t.Errorf("after the delete, PlacementGroups = %+v, %v", listed, err)
	}
}

// A group of the name that is not this workload's is never taken for its
// own, nor removed.
func TestPlacementGroupOfAnotherIsRefused(t *testing.T) {
	b := emulator(t, catalog.Default())
	p := b.provider(t, catalog.Default())
	ctx := context.Background()
	untagged := testGroup(testOffer, "f", "untagged")
	other := testGroup(testOffer, "f", "other")
	if err := b.rawGroup(ctx, untagged.Region, untagged.Name, "team", "ml"); err != nil {
		t.Fatal(err)
	}
	if err := b.rawGroup(ctx, other.Region, other.Name, providers.TagFleet, "f", providers.TagWorkload, "someone"); err != nil {
		t.Fatal(err)
	}
	for _, g := range []providers.PlacementGroup{untagged, other} {
		if err := p.EnsurePlacementGroup(ctx, g); !errors.Is(err, providers.ErrInvalid) {
			t.Errorf("ensuring %s over a foreign group: %v, want invalid", g.Name, err)
		}
		if err := p.DeletePlacementGroup(ctx, g); !errors.Is(err, providers.ErrInvalid) {
			t.Errorf("deleting foreign group %s: %v, want invalid", g.Name, err)
		}
	}
	out, err := b.raw(testOffer.Region).DescribePlacementGroups(ctx, &ec2.DescribePlacementGroupsInput{})
	if err != nil || len(out.PlacementGroups) != 2 {
		t.Errorf("the foreign groups: %d, %v; want both kept", len(out.PlacementGroups), err)
	}

	bad := testGroup(testOffer, "f", "w")
	bad.Name = "gf-f-w-elsewhere"
	if err := p.EnsurePlacementGroup(ctx, bad); !errors.Is(err, providers.ErrInvalid) {
		t.Errorf("a group not named for its workload and zone: %v, want invalid", err)
	}
}

// A launch into a group that does not exist fails as invalid, not as a
// stock-out the planner would fail over from.
func TestCreateIntoUnknownPlacementGroup(t *testing.T) {
	b := emulator(t, catalog.Default())
	p := b.provider(t, catalog.Default())
	req := request(testOffer, planner.Token("f", "w", testOffer, "rev", 0))
	req.PlacementGroup = "gf-f-w-us-east-1a"
	_, err := p.Create(context.Background(), req)
	var pe *providers.Error
	if !errors.As(err, &pe) || pe.Kind != providers.KindInvalid || pe.Code != codeGroupUnknown {
		t.Errorf("got %v, want invalid with %s", err, codeGroupUnknown)
	}
}

func instanceIDs(insts []providers.Instance) []string {
	out := make([]string, len(insts))
	for i, inst := range insts {
		out[i] = inst.ID
	}
	return out
}
