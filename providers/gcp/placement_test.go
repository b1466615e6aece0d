// SPDX-License-Identifier: Apache-2.0

package gcp

import (
	"errors"
	"slices"
	"testing"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"

	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/providers/sim"
)

func group(fleet, workload, region, zone string) providers.PlacementGroup {
	return providers.PlacementGroup{Name: providers.PlacementGroupName(fleet, workload, zone), Region: region, Zone: zone, Fleet: fleet, Workload: workload}
}

func wantKind(t *testing.T, err error, kind providers.Kind, code string) {
	t.Helper()
	var pe *providers.Error
	if !errors.As(err, &pe) {
		t.Fatalf("error %v (%T), want a %s *providers.Error", err, err, kind)
	}
	if pe.Kind != kind || (code != "" && pe.Code != code) {
		t.Fatalf("error %+v, want kind %s code %q", pe, kind, code)
	}
}

// A zone gang's placement group, through its life: made once and found
// again, never confused with a policy gpufleet did not make, filled by a
// batch and a single create whose instances carry it, kept while they
// live, and removed, idempotently, once they are gone.
func TestPlacementGroupLifecycle(t *testing.T) {
	b := newBackend(t, sim.Config{}, nil)
	ctx := testCtx(t)
	p := b.provider
	g := group("pg", "w", "us-central1", testZone)

	if err := p.EnsurePlacementGroup(ctx, g); err != nil {
		t.Fatal(err)
	}
	if err := p.EnsurePlacementGroup(ctx, g); err != nil {
		t.Fatalf("ensuring it again: %v", err)
	}
	if n := b.calls("resourcePolicies.insert"); n != 2 {
		t.Errorf("%d inserts, want 2", n)
	}
	if n := b.calls("regionOperations.wait"); n != 1 {
		t.Errorf("%d regional waits, want 1 (the second insert is answered by the name)", n)
	}
	rp, err := p.policies.Get(ctx, &computepb.GetResourcePolicyRequest{Project: testProject, Region: g.Region, ResourcePolicy: g.Name})
	if err != nil {
		t.Fatal(err)
	}
	if got := rp.GetGroupPlacementPolicy().GetCollocation(); got != "COLLOCATED" {
		t.Errorf("collocation %q, want COLLOCATED", got)
	}
	if got, want := rp.GetDescription(), "gpufleet fleet=pg workload=w zone="+testZone; got != want {
		t.Errorf("description %q, want %q", got, want)
	}

	// A policy of a gang's name that gpufleet did not make is refused, not
	// adopted, and neither listed nor deleted.
	foreign := group("pg", "other", "us-central1", testZone)
	op, err := p.policies.Insert(ctx, &computepb.InsertResourcePolicyRequest{Project: testProject, Region: foreign.Region,
		ResourcePolicyResource: &computepb.ResourcePolicy{
			Name:                 proto.String(foreign.Name),
			Description:          proto.String("the team's own"),
			GroupPlacementPolicy: &computepb.ResourcePolicyGroupPlacementPolicy{Collocation: proto.String("COLLOCATED")},
		}})
	if err != nil {
		t.Fatal(err)
	}
	if err := op.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	wantKind(t, p.EnsurePlacementGroup(ctx, foreign), providers.KindInvalid, "alreadyExists")
	wantKind(t, p.DeletePlacementGroup(ctx, foreign), providers.KindInvalid, "")

	// A batch and a single create go into the group.
	req := batchRequest(onDemand, 0, 3)
	req.Fleet, req.Workload, req.PlacementGroup = "pg", "w", g.Name
	made, err := p.CreateBatch(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	one := testRequest(onDemand, "pg", 10)
	one.PlacementGroup = g.Name
	single, err := p.Create(ctx, one)
	if err != nil {
		t.Fatal(err)
	}
	members := append(made, single)
	// The emulator writes links under the base it was called on.
	want := []string{b.url + "/compute/v1/projects/" + testProject + "/regions/us-central1/resourcePolicies/" + g.Name}
	for _, inst := range members {
		vm, err := p.instances.Get(ctx, &computepb.GetInstanceRequest{Project: testProject, Zone: testZone, Instance: inst.ID})
		if err != nil {
			t.Fatal(err)
		}
		if got := vm.GetResourcePolicies(); !slices.Equal(got, want) {
			t.Errorf("%s: resource policies %q, want %q", inst.ID, got, want)
		}
	}

	// A compact policy's instances share a zone: one elsewhere is refused.
	elsewhere := testRequest(onDemand, "pg", 20)
	elsewhere.Offer.Zone = "us-central1-b"
	elsewhere.PlacementGroup = g.Name
	if _, err := p.Create(ctx, elsewhere); err == nil {
		t.Fatal("an instance of another zone went into the compact policy")
	} else {
		wantKind(t, err, providers.KindInvalid, "invalid")
	}

	other := group("pg", "w", "europe-west4", "europe-west4-a")
	if err := p.EnsurePlacementGroup(ctx, other); err != nil {
		t.Fatal(err)
	}
	listed, err := p.PlacementGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := []providers.PlacementGroup{other, g}; !slices.Equal(listed, want) {
		t.Errorf("listed %+v, want %+v", listed, want)
	}

	// GCE keeps a policy its instances use.
	wantKind(t, p.DeletePlacementGroup(ctx, g), providers.KindInvalid, "resourceInUseByAnotherResource")
	for _, inst := range members {
		if err := p.Delete(ctx, inst); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.DeletePlacementGroup(ctx, g); err != nil {
		t.Fatalf("deleting the emptied group: %v", err)
	}
	if err := p.DeletePlacementGroup(ctx, g); err != nil {
		t.Fatalf("deleting it again: %v", err)
	}
	listed, err = p.PlacementGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := []providers.PlacementGroup{other}; !slices.Equal(listed, want) {
		t.Errorf("after the delete, listed %+v, want %+v", listed, want)
	}
}

// A group the provider cannot place is refused before any call.
func TestPlacementGroupChecks(t *testing.T) {
	b := newBackend(t, sim.Config{}, nil)
	ctx := testCtx(t)
	for name, g := range map[string]providers.PlacementGroup{
		"region not configured":  group("pg", "w", "asia-east1", "asia-east1-a"),
		"zone of another region": {Name: providers.PlacementGroupName("pg", "w", "europe-west4-a"), Region: "us-central1", Zone: "europe-west4-a", Fleet: "pg", Workload: "w"},
		"name not the gang's":    {Name: "gf-something-else", Region: "us-central1", Zone: testZone, Fleet: "pg", Workload: "w"},
	} {
		t.Run(name, func(t *testing.T) {
			wantKind(t, b.provider.EnsurePlacementGroup(ctx, g), providers.KindInvalid, "")
		})
	}
	if n := b.calls("resourcePolicies.insert"); n != 0 {
		t.Errorf("%d inserts, want none", n)
	}
	req := testRequest(onDemand, "pg", 0)
	req.PlacementGroup = "Not_A_Name"
	if _, err := b.provider.Create(ctx, req); err == nil {
		t.Error("a create named a placement group GCE cannot name")
	}
	// A group that does not exist fails the create with GCE's 404.
	req.PlacementGroup = providers.PlacementGroupName("pg", "w", testZone)
	_, err := b.provider.Create(ctx, req)
	wantKind(t, err, providers.KindNotFound, "notFound")
}
