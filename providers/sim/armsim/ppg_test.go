// SPDX-License-Identifier: Apache-2.0

package armsim

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	azfake "github.com/Azure/azure-sdk-for-go/sdk/azcore/fake"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7"
)

const ppgPath = "/subscriptions/" + testSub + "/resourceGroups/" + testRG + "/providers/Microsoft.Compute/proximityPlacementGroups/"

func (f *front) ppgClient(t *testing.T) *armcompute.ProximityPlacementGroupsClient {
	t.Helper()
	c, err := armcompute.NewProximityPlacementGroupsClient(testSub, &azfake.TokenCredential{}, clientOptions(f.url, f.retry))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func ppgRequest(location string, zones ...string) armcompute.ProximityPlacementGroup {
	g := armcompute.ProximityPlacementGroup{
		Location: to.Ptr(location),
		Tags:     map[string]*string{"gpufleet-fleet": to.Ptr("demo")},
		Properties: &armcompute.ProximityPlacementGroupProperties{
			ProximityPlacementGroupType: to.Ptr(armcompute.ProximityPlacementGroupTypeStandard),
		},
	}
	for _, z := range zones {
		g.Zones = append(g.Zones, to.Ptr(z))
	}
	return g
}

func inPPG(name string) vmOption {
	return func(vm *armcompute.VirtualMachine) {
		vm.Properties.ProximityPlacementGroup = &armcompute.SubResource{ID: to.Ptr(ppgPath + name)}
	}
}

// A group's life on the wire: created (201) and updated (200) by PUT, read
// with its VMs, listed a page at a time, refused deletion while a VM is in
// it, deleted (200) once it is empty, and 204 for a delete of one gone.
func TestPPGLifecycle(t *testing.T) {
	f := newFront(t, frontConfig{options: Options{PageSize: 1}})
	ctx := context.Background()
	ppgs := f.ppgClient(t)
	q := "?api-version=" + APIVersion

	resp := rawRequest(t, "PUT", f.url+ppgPath+"Gang"+q, mustJSON(t, ppgRequest("East US", "1")), http.Header{"Content-Type": {"application/json"}})
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d", resp.StatusCode)
	}
	update := ppgRequest("eastus", "1")
	update.Tags["team"] = to.Ptr("ml")
	res, err := ppgs.CreateOrUpdate(ctx, testRG, "gang", update, nil)
	if err != nil {
		t.Fatal(err)
	}
	if deref(res.Name) != "Gang" || deref(res.Tags["team"]) != "ml" {
		t.Fatalf("update: name %q tags %v", deref(res.Name), res.Tags)
	}
	if _, err := ppgs.CreateOrUpdate(ctx, testRG, "other", ppgRequest("westus3"), nil); err != nil {
		t.Fatal(err)
	}

	got, err := ppgs.Get(ctx, testRG, "GANG", nil)
	if err != nil {
		t.Fatal(err)
	}
	wantID := ppgPath + "Gang"
	switch g := got.ProximityPlacementGroup; {
	case deref(g.ID) != wantID || deref(g.Type) != "Microsoft.Compute/proximityPlacementGroups" || deref(g.Location) != "eastus":
		t.Fatalf("id %q type %q location %q", deref(g.ID), deref(g.Type), deref(g.Location))
	case len(g.Zones) != 1 || deref(g.Zones[0]) != "1":
		t.Fatalf("zones %v", g.Zones)
	case deref(g.Properties.ProximityPlacementGroupType) != armcompute.ProximityPlacementGroupTypeStandard || len(g.Properties.VirtualMachines) != 0:
		t.Fatalf("properties %+v", g.Properties)
	}

	vm := f.mustCreate(t, "member", vmRequest("eastus", t4, inZone("1"), func(vm *armcompute.VirtualMachine) {
		// Named in another casing: ARM matches ids case-insensitively.
		vm.Properties.ProximityPlacementGroup = &armcompute.SubResource{ID: to.Ptr(strings.ToLower(ppgPath) + "gang")}
	}))
	if pg := vm.Properties.ProximityPlacementGroup; pg == nil || deref(pg.ID) != wantID {
		t.Fatalf("create answered proximityPlacementGroup %+v", pg)
	}
	read, err := f.get(t, "member")
	if err != nil {
		t.Fatal(err)
	}
	if pg := read.Properties.ProximityPlacementGroup; pg == nil || deref(pg.ID) != wantID {
		t.Fatalf("GET answered proximityPlacementGroup %+v", pg)
	}
	got, err = ppgs.Get(ctx, testRG, "gang", nil)
	if err != nil {
		t.Fatal(err)
	}
	if vms := got.Properties.VirtualMachines; len(vms) != 1 || deref(vms[0].ID) != deref(vm.ID) {
		t.Fatalf("virtualMachines %v, want %s", vms, deref(vm.ID))
	}

	var names []string
	pager := ppgs.NewListByResourceGroupPager(testRG, nil)
	pages := 0
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, g := range page.Value {
			names = append(names, deref(g.Name))
		}
	}
	if strings.Join(names, ",") != "Gang,other" || pages != 2 {
		t.Fatalf("listed %v in %d pages", names, pages)
	}

	_, err = ppgs.Delete(ctx, testRG, "gang", nil)
	re := responseError(t, err, "OperationNotAllowed", http.StatusConflict)
	if !strings.Contains(re.Error(), deref(vm.ID)) {
		t.Fatalf("the refusal does not name the VM: %v", re)
	}

	poller, err := f.vms.BeginDelete(ctx, testRG, "member", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := poller.PollUntilDone(ctx, pollFast); err != nil {
		t.Fatal(err)
	}
	if _, err := ppgs.Delete(ctx, testRG, "gang", nil); err != nil {
		t.Fatalf("delete of an empty group: %v", err)
	}
	_, err = ppgs.Get(ctx, testRG, "gang", nil)
	responseError(t, err, "ResourceNotFound", http.StatusNotFound)
	resp = rawRequest(t, "DELETE", f.url+ppgPath+"gang"+q, nil, nil)
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete of a group gone: %d", resp.StatusCode)
	}
}

// A VM joins a group only if the group exists, in the VM's location and,
// for a zonal group, in the VM's zone; and it stays in the group it was
// created in.
func TestPPGMembershipRules(t *testing.T) {
	f := newFront(t, frontConfig{})
	ctx := context.Background()
	ppgs := f.ppgClient(t)
	if _, err := ppgs.CreateOrUpdate(ctx, testRG, "zone1", ppgRequest("eastus", "1"), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := ppgs.CreateOrUpdate(ctx, testRG, "regional", ppgRequest("eastus"), nil); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		vm       armcompute.VirtualMachine
		code     string
		status   int
		wantText string
	}{
		{"an unknown group", vmRequest("eastus", t4, inZone("1"), inPPG("nope")), "NotFound", 404, "was not found"},
		{"an id that is no group id", vmRequest("eastus", t4, inZone("1"), func(vm *armcompute.VirtualMachine) {
			vm.Properties.ProximityPlacementGroup = &armcompute.SubResource{ID: to.Ptr("zone1")}
		}), "LinkedInvalidPropertyId", 400, "properties.proximityPlacementGroup.id"},
		{"another zone", vmRequest("eastus", t4, inZone("2"), inPPG("zone1")), "InvalidParameter", 400, "pinned to zone(s) '1'"},
		{"a regional VM in a zonal group", vmRequest("eastus", t4, inPPG("zone1")), "InvalidParameter", 400, "pinned to zone(s) '1'"},
		{"another location", vmRequest("westus3", t4, inZone("1"), inPPG("zone1")), "InvalidParameter", 400, "in location 'eastus'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := f.create(t, "vm-"+strings.ReplaceAll(tt.name, " ", "-"), tt.vm)
			re := responseError(t, err, tt.code, tt.status)
			if !strings.Contains(re.Error(), tt.wantText) {
				t.Fatalf("message: %v", re)
			}
		})
	}
	if n := len(f.world.Instances()); n != 0 {
		t.Fatalf("refused creates left %d instances", n)
	}

	// Any zone may join a regional group.
	f.mustCreate(t, "in-regional", vmRequest("eastus", t4, inZone("3"), inPPG("regional")))
	f.mustCreate(t, "in-zone1", vmRequest("eastus", t4, inZone("1"), inPPG("zone1")))
	for _, change := range []vmOption{inPPG("regional"), func(vm *armcompute.VirtualMachine) { vm.Properties.ProximityPlacementGroup = nil }} {
		_, err := f.create(t, "in-zone1", vmRequest("eastus", t4, inZone("1"), change))
		responseError(t, err, "PropertyChangeNotAllowed", http.StatusConflict)
	}
	// The same group again is an update like any other.
	f.mustCreate(t, "in-zone1", vmRequest("eastus", t4, inZone("1"), inPPG("zone1"), withTags(map[string]string{"a": "b"})))
}

// Group requests the SDK would not send are answered in ARM's shape.
func TestPPGBadInput(t *testing.T) {
	f := newFront(t, frontConfig{})
	if _, err := f.ppgClient(t).CreateOrUpdate(context.Background(), testRG, "exists", ppgRequest("eastus", "1"), nil); err != nil {
		t.Fatal(err)
	}
	q := "?api-version=" + APIVersion
	ultra := ppgRequest("eastus", "1")
	ultra.Properties.ProximityPlacementGroupType = to.Ptr(armcompute.ProximityPlacementGroupTypeUltra)
	bogus := ppgRequest("eastus")
	bogus.Properties.ProximityPlacementGroupType = to.Ptr(armcompute.ProximityPlacementGroupType("Tight"))
	tests := []struct {
		name, method, path string
		body               []byte
		header             http.Header
		wantStatus         int
		wantCode           string
	}{
		{"unknown api-version", "GET", ppgPath + "exists?api-version=2099-01-01", nil, nil, 400, "NoRegisteredProviderFound"},
		{"PATCH", "PATCH", ppgPath + "exists" + q, []byte(`{}`), nil, 405, "MethodNotAllowed"},
		{"POST to the list", "POST", ppgPath[:len(ppgPath)-1] + q, nil, nil, 405, "MethodNotAllowed"},
		{"an empty body", "PUT", ppgPath + "x" + q, nil, nil, 400, "InvalidRequestContent"},
		{"no location", "PUT", ppgPath + "x" + q, []byte(`{}`), nil, 400, "LocationRequired"},
		{"an unknown location", "PUT", ppgPath + "x" + q, mustJSON(t, ppgRequest("mars")), nil, 400, "LocationNotAvailableForResourceType"},
		{"an unknown zone", "PUT", ppgPath + "x" + q, mustJSON(t, ppgRequest("eastus", "9")), nil, 400, "InvalidParameter"},
		{"two zones", "PUT", ppgPath + "x" + q, mustJSON(t, ppgRequest("eastus", "1", "2")), nil, 400, "InvalidParameter"},
		{"an unknown type", "PUT", ppgPath + "x" + q, mustJSON(t, bogus), nil, 400, "InvalidParameter"},
		{"a bad name", "PUT", ppgPath + "-x" + q, mustJSON(t, ppgRequest("eastus")), nil, 400, "InvalidResourceName"},
		{"If-None-Match on an existing group", "PUT", ppgPath + "exists" + q, mustJSON(t, ppgRequest("eastus", "1")), http.Header{"If-None-Match": {"*"}}, 412, "PreconditionFailed"},
		{"If-Match on a new group", "PUT", ppgPath + "new" + q, mustJSON(t, ppgRequest("eastus", "1")), http.Header{"If-Match": {"*"}}, 412, "PreconditionFailed"},
		{"another location", "PUT", ppgPath + "exists" + q, mustJSON(t, ppgRequest("westus3", "1")), nil, 409, "InvalidResourceLocation"},
		{"another zone", "PUT", ppgPath + "exists" + q, mustJSON(t, ppgRequest("eastus", "2")), nil, 409, "PropertyChangeNotAllowed"},
		{"another type", "PUT", ppgPath + "exists" + q, mustJSON(t, ultra), nil, 409, "PropertyChangeNotAllowed"},
		{"a missing group", "GET", ppgPath + "missing" + q, nil, nil, 404, "ResourceNotFound"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := rawRequest(t, tt.method, f.url+tt.path, tt.body, tt.header)
			raw, _ := io.ReadAll(resp.Body)
			var got errorBody
			if err := json.Unmarshal(raw, &got); err != nil {
				t.Fatalf("body %q: %v", raw, err)
			}
			if resp.StatusCode != tt.wantStatus || got.Error.Code != tt.wantCode || resp.Header.Get("x-ms-error-code") != tt.wantCode || got.Error.Message == "" {
				t.Fatalf("got %d %s (header %q) %q, want %d %s", resp.StatusCode, got.Error.Code, resp.Header.Get("x-ms-error-code"), got.Error.Message, tt.wantStatus, tt.wantCode)
			}
		})
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
