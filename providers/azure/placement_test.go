// SPDX-License-Identifier: Apache-2.0

package azure

import (
	"context"
	"strings"
	"testing"

	azfake "github.com/Azure/azure-sdk-for-go/sdk/azcore/fake"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7"

	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/providers/sim/armsim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// rawPPGs is a bare client on the env's front, for groups the provider
// did not make.
func (e *env) rawPPGs(t *testing.T) *armcompute.ProximityPlacementGroupsClient {
	t.Helper()
	opts, err := clientOptions(Options{Endpoint: e.url, Credential: &azfake.TokenCredential{}, Retry: testRetry})
	if err != nil {
		t.Fatal(err)
	}
	c, err := armcompute.NewProximityPlacementGroupsClient(testSub, &azfake.TokenCredential{}, opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func group(workload, zone string) providers.PlacementGroup {
	return providers.PlacementGroup{
		Name:   providers.PlacementGroupName("demo", workload, zone),
		Region: zone[:strings.LastIndexByte(zone, '-')],
		Zone:   zone, Fleet: "demo", Workload: workload,
	}
}

func TestPlacementGroupLifecycle(t *testing.T) {
	e := newEnv(t, envConfig{})
	ctx := context.Background()
	raw := e.rawPPGs(t)
	g := group("w", onDemandT4.Zone)

	for i := range 2 {
		if err := e.provider.EnsurePlacementGroup(ctx, g); err != nil {
			t.Fatalf("ensure %d: %v", i+1, err)
		}
	}
	if n := e.world.Calls()["azure "+armsim.OpPPGPut]; n != 1 {
		t.Fatalf("%d PUTs for two ensures of one group", n)
	}
	got, err := raw.Get(ctx, testRG, g.Name, nil)
	if err != nil {
		t.Fatal(err)
	}
	switch tags := tagValues(got.Tags); {
	case deref(got.Location) != "eastus" || len(got.Zones) != 1 || deref(got.Zones[0]) != "1":
		t.Fatalf("location %q zones %v", deref(got.Location), got.Zones)
	case deref(got.Properties.ProximityPlacementGroupType) != armcompute.ProximityPlacementGroupTypeStandard:
		t.Fatalf("type %v", deref(got.Properties.ProximityPlacementGroupType))
	case tags[providers.TagFleet] != "demo" || tags[providers.TagWorkload] != "w" || tags[tagZone] != g.Zone:
		t.Fatalf("tags %v", tags)
	}

	// A node launched into the group is in it, as ARM reads it back.
	req := request(onDemandT4, "demo", 0)
	req.PlacementGroup = g.Name
	inst, err := e.provider.Create(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	vm, err := e.raw.Get(ctx, testRG, inst.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantID := "/subscriptions/" + testSub + "/resourceGroups/" + testRG + "/providers/Microsoft.Compute/proximityPlacementGroups/" + g.Name
	if pg := vm.Properties.ProximityPlacementGroup; pg == nil || deref(pg.ID) != wantID {
		t.Fatalf("VM's proximityPlacementGroup %+v, want %s", pg, wantID)
	}
	got, err = raw.Get(ctx, testRG, g.Name, nil)
	if err != nil {
		t.Fatal(err)
	}
	if vms := got.Properties.VirtualMachines; len(vms) != 1 || !strings.HasSuffix(deref(vms[0].ID), "/"+inst.ID) {
		t.Fatalf("group's VMs %v", vms)
	}

	// Listed beside a second group; not beside a foreign group or an owned
	// one outside the configured regions.
	other := group("w", "westus3-2")
	if err := e.provider.EnsurePlacementGroup(ctx, other); err != nil {
		t.Fatal(err)
	}
	foreign := armcompute.ProximityPlacementGroup{Location: to.Ptr("eastus"), Zones: []*string{to.Ptr("1")}}
	if _, err := raw.CreateOrUpdate(ctx, testRG, "someone-elses", foreign, nil); err != nil {
		t.Fatal(err)
	}
	far := group("w", "eastus2-1")
	farPPG := armcompute.ProximityPlacementGroup{Location: to.Ptr("eastus2"), Zones: []*string{to.Ptr("1")},
		Tags: map[string]*string{providers.TagFleet: to.Ptr("demo"), providers.TagWorkload: to.Ptr("w"), tagZone: to.Ptr(far.Zone)}}
	if _, err := raw.CreateOrUpdate(ctx, testRG, far.Name, farPPG, nil); err != nil {
		t.Fatal(err)
	}
	groups, err := e.provider.PlacementGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(groups) != 2 || groups[0] != g || groups[1] != other {
		t.Fatalf("listed %+v, want %+v and %+v", groups, g, other)
	}

	// In use: ARM's refusal comes back.
	err = e.provider.DeletePlacementGroup(ctx, g)
	if pe := wantKind(t, err, providers.KindInvalid); pe.Code != "OperationNotAllowed" || pe.Op != "deletePlacementGroup" {
		t.Fatalf("delete of a group in use: %v", pe)
	}
	if _, err := raw.Get(ctx, testRG, g.Name, nil); err != nil {
		t.Fatalf("the group in use is gone: %v", err)
	}

	if err := e.provider.Delete(ctx, inst); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if err := e.provider.DeletePlacementGroup(ctx, g); err != nil {
			t.Fatalf("delete %d of an empty group: %v", i+1, err)
		}
	}
	if _, err := raw.Get(ctx, testRG, g.Name, nil); !isStatus(err, 404) {
		t.Fatalf("the group is still there: %v", err)
	}
	groups, err = e.provider.PlacementGroups(ctx)
	if err != nil || len(groups) != 1 || groups[0] != other {
		t.Fatalf("after the delete: %+v %v", groups, err)
	}
}

// A group's name held by a group gpufleet did not make for that fleet and
// workload is refused, and the group is left as it was.
func TestPlacementGroupNotOurs(t *testing.T) {
	e := newEnv(t, envConfig{})
	ctx := context.Background()
	raw := e.rawPPGs(t)
	g := group("w", "eastus-2")
	foreign := armcompute.ProximityPlacementGroup{Location: to.Ptr("eastus"), Zones: []*string{to.Ptr("2")},
		Tags: map[string]*string{"owner": to.Ptr("someone")}}
	if _, err := raw.CreateOrUpdate(ctx, testRG, g.Name, foreign, nil); err != nil {
		t.Fatal(err)
	}
	err := e.provider.EnsurePlacementGroup(ctx, g)
	if pe := wantKind(t, err, providers.KindInvalid); !strings.Contains(pe.Message, "is not gpufleet's") {
		t.Fatalf("ensure over a foreign group: %v", pe)
	}
	err = e.provider.DeletePlacementGroup(ctx, g)
	if pe := wantKind(t, err, providers.KindInvalid); !strings.Contains(pe.Message, "not owned by gpufleet") {
		t.Fatalf("delete of a foreign group: %v", pe)
	}
	got, err := raw.Get(ctx, testRG, g.Name, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tags := tagValues(got.Tags); len(tags) != 1 || tags["owner"] != "someone" {
		t.Fatalf("the foreign group's tags became %v", tags)
	}

	// Another workload's tags on this workload's name: not this group.
	h := group("x", "eastus-3")
	taken := armcompute.ProximityPlacementGroup{Location: to.Ptr("eastus"), Zones: []*string{to.Ptr("3")},
		Tags: map[string]*string{providers.TagFleet: to.Ptr("demo"), providers.TagWorkload: to.Ptr("y")}}
	if _, err := raw.CreateOrUpdate(ctx, testRG, h.Name, taken, nil); err != nil {
		t.Fatal(err)
	}
	err = e.provider.EnsurePlacementGroup(ctx, h)
	if pe := wantKind(t, err, providers.KindInvalid); !strings.Contains(pe.Message, `workload "y"`) {
		t.Fatalf("ensure over another workload's group: %v", pe)
	}
	if n := e.world.Calls()["azure "+armsim.OpPPGPut]; n != 2 {
		t.Fatalf("%d PUTs: the provider wrote a group it does not own", n-2)
	}
}

func TestPlacementGroupInvalid(t *testing.T) {
	e := newEnv(t, envConfig{})
	ctx := context.Background()
	ok := group("w", "eastus-1")
	tests := []struct {
		name string
		edit func(*providers.PlacementGroup)
		want string
	}{
		{"a name that is not the group's", func(g *providers.PlacementGroup) { g.Name = "gf-demo-w" }, "is not named"},
		{"no zone", func(g *providers.PlacementGroup) { g.Zone, g.Name = "", "gf-demo-w-" }, "needs a fleet, a workload and a zone"},
		{"a region not configured", func(g *providers.PlacementGroup) {
			*g = group("w", "eastus2-1")
		}, "not one of the configured regions"},
		{"a zone of another region", func(g *providers.PlacementGroup) {
			g.Zone = "westus3-1"
			g.Name = providers.PlacementGroupName("demo", "w", g.Zone)
		}, "is not a zone of eastus"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := ok
			tt.edit(&g)
			err := e.provider.EnsurePlacementGroup(ctx, g)
			if pe := wantKind(t, err, providers.KindInvalid); !strings.Contains(pe.Message, tt.want) {
				t.Fatalf("got %v, want %q", pe, tt.want)
			}
		})
	}
	req := request(onDemandT4, "demo", 0)
	req.PlacementGroup = "../other"
	_, err := e.provider.Create(ctx, req)
	wantKind(t, err, providers.KindInvalid)
	if err := e.provider.DeletePlacementGroup(ctx, providers.PlacementGroup{Name: "Gang/1"}); err == nil {
		t.Fatal("deleted a group of a name gpufleet never gives")
	}
	if n := e.world.Calls()["azure "+armsim.OpPPGPut] + e.world.Calls()["azure "+armsim.OpPut]; n != 0 {
		t.Fatalf("%d PUTs for invalid requests", n)
	}
}

// A group made by another process between the ensure's read and its PUT
// is not overwritten: the PUT is refused, and the group read again.
func TestPlacementGroupMadeMeanwhile(t *testing.T) {
	for _, tt := range []struct {
		name string
		tags map[string]*string
		ok   bool
	}{
		{"by gpufleet", map[string]*string{providers.TagFleet: to.Ptr("demo"), providers.TagWorkload: to.Ptr("w")}, true},
		{"by someone else", map[string]*string{"owner": to.Ptr("someone")}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, envConfig{})
			ctx := context.Background()
			raw := e.rawPPGs(t)
			g := group("w", "eastus-1")
			made := armcompute.ProximityPlacementGroup{Location: to.Ptr("eastus"), Zones: []*string{to.Ptr("1")}, Tags: tt.tags}
			if _, err := raw.CreateOrUpdate(ctx, testRG, g.Name, made, nil); err != nil {
				t.Fatal(err)
			}
			// The ensure's first read misses the group, as a read just
			// before it was made would.
			if err := e.world.AddFaults(&sim.Fault{Cloud: catalog.Azure, Op: armsim.OpPPGGet, Kind: sim.FaultServerError, Code: "ResourceNotFound", Times: 1}); err != nil {
				t.Fatal(err)
			}
			err := e.provider.EnsurePlacementGroup(ctx, g)
			if tt.ok && err != nil || !tt.ok && err == nil {
				t.Fatalf("ensure: %v", err)
			}
			got, err := raw.Get(ctx, testRG, g.Name, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Tags) != len(tt.tags) || deref(got.Tags[tagZone]) != "" {
				t.Fatalf("the group's tags became %v", tagValues(got.Tags))
			}
		})
	}
}
