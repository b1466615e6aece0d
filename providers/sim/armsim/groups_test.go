// SPDX-License-Identifier: Apache-2.0

package armsim

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/providers/sim"
)

const (
	groupsQ   = "?api-version=2022-09-01"
	groupPath = "/subscriptions/" + testSub + "/resourcegroups/"
)

// Resource groups are ARM's own: a synchronous PUT that keeps the group's
// location and name, HEAD for existence, ARM's codes for what it refuses,
// and a group that does not exist refused before Compute sees a request
// for a VM in it.
func TestResourceGroups(t *testing.T) {
	f := newFront(t, frontConfig{})
	f.call(t, "PUT", groupPath+"ml-Team"+groupsQ, map[string]any{"location": "West US 3", "tags": map[string]string{"team": "ml"}}).
		want(t, "create", http.StatusCreated, "")
	tests := []struct {
		name       string
		method     string
		path       string
		body       any
		wantStatus int
		wantCode   string
		check      func(t *testing.T, a armResponse)
	}{
		{name: "PUT again updates", method: "PUT", path: groupPath + "ML-TEAM" + groupsQ, body: map[string]any{"location": "westus3"}, wantStatus: 200,
			check: func(t *testing.T, a armResponse) {
				if a.get("name") != "ml-Team" || a.get("id") != "/subscriptions/"+testSub+"/resourceGroups/ml-Team" || a.get("location") != "westus3" ||
					a.get("type") != "Microsoft.Resources/resourceGroups" || a.get("properties.provisioningState") != "Succeeded" {
					t.Errorf("group %v", a.body)
				}
			}},
		{name: "GET in another case", method: "GET", path: groupPath + "ML-team" + groupsQ, wantStatus: 200},
		{name: "HEAD of a group", method: "HEAD", path: groupPath + "ml-team" + groupsQ, wantStatus: 204},
		{name: "HEAD of none", method: "HEAD", path: groupPath + "absent" + groupsQ, wantStatus: 404},
		{name: "GET of none", method: "GET", path: groupPath + "absent" + groupsQ, wantStatus: 404, wantCode: "ResourceGroupNotFound",
			check: func(t *testing.T, a armResponse) {
				if a.message() != "Resource group 'absent' could not be found." {
					t.Errorf("message %q", a.message())
				}
			}},
		{name: "DELETE of none", method: "DELETE", path: groupPath + "absent" + groupsQ, wantStatus: 404, wantCode: "ResourceGroupNotFound"},
		{name: "another location", method: "PUT", path: groupPath + "ml-team" + groupsQ, body: map[string]any{"location": "eastus"}, wantStatus: 409, wantCode: "InvalidResourceGroupLocation"},
		{name: "no location", method: "PUT", path: groupPath + "x" + groupsQ, body: map[string]any{}, wantStatus: 400, wantCode: "LocationRequired"},
		{name: "unknown location", method: "PUT", path: groupPath + "x" + groupsQ, body: map[string]any{"location": "marsnorth"}, wantStatus: 400, wantCode: "LocationNotAvailableForResourceGroup"},
		{name: "unknown api-version", method: "GET", path: groupPath + "ml-team?api-version=2099-01-01", wantStatus: 400, wantCode: "InvalidApiVersionParameter",
			check: func(t *testing.T, a armResponse) {
				if !strings.HasPrefix(a.message(), "The api-version '2099-01-01' is invalid. The supported versions are '2025-04-01,2025-03-01,") {
					t.Errorf("message %q", a.message())
				}
			}},
		{name: "PATCH not served", method: "PATCH", path: groupPath + "ml-team" + groupsQ, body: map[string]any{}, wantStatus: 405, wantCode: "MethodNotAllowed"},
		{name: "list", method: "GET", path: strings.TrimSuffix(groupPath, "/") + groupsQ, wantStatus: 200,
			check: func(t *testing.T, a armResponse) {
				var names []string
				for _, v := range a.body["value"].([]any) {
					names = append(names, v.(map[string]any)["name"].(string))
				}
				if strings.Join(names, ",") != "gpufleet,ml-Team" {
					t.Errorf("groups %v", names)
				}
			}},
		{name: "VM in no group", method: "PUT", path: "/subscriptions/" + testSub + "/resourceGroups/absent/providers/Microsoft.Compute/virtualMachines/x?api-version=" + APIVersion,
			body: mutate(), wantStatus: 404, wantCode: "ResourceGroupNotFound"},
		{name: "VM GET in no group", method: "GET", path: "/subscriptions/" + testSub + "/resourceGroups/absent/providers/Microsoft.Compute/virtualMachines/x?api-version=" + APIVersion,
			wantStatus: 404, wantCode: "ResourceGroupNotFound"},
		{name: "VMs listed in no group", method: "GET", path: "/subscriptions/" + testSub + "/resourceGroups/absent/providers/Microsoft.Compute/virtualMachines?api-version=" + APIVersion,
			wantStatus: 404, wantCode: "ResourceGroupNotFound"},
		{name: "VM DELETE in no group", method: "DELETE", path: "/subscriptions/" + testSub + "/resourceGroups/absent/providers/Microsoft.Compute/virtualMachines/x?api-version=" + APIVersion,
			wantStatus: 404, wantCode: "ResourceGroupNotFound"},
		{name: "VM in a new group", method: "PUT", path: "/subscriptions/" + testSub + "/resourceGroups/ml-team/providers/Microsoft.Compute/virtualMachines/x?api-version=" + APIVersion,
			body: vmRequest("westus3", a100), wantStatus: 201},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := f.call(t, tt.method, tt.path, tt.body)
			a.want(t, tt.method, tt.wantStatus, tt.wantCode)
			if tt.check != nil {
				tt.check(t, a)
			}
		})
	}
}

// Deleting a group deletes what is in it, as Azure does, in one
// long-running operation: the group shows Deleting and takes nothing new
// until it is gone with its VMs, interfaces, networks and placement
// groups; a group made again with its name is empty.
func TestGroupDeleteDeletesContents(t *testing.T) {
	f := newFront(t, frontConfig{manual: true, world: sim.Config{OperationTime: time.Minute}})
	f.createGroup(t, "doomed", "eastus")
	rg := "/subscriptions/" + testSub + "/resourceGroups/doomed"
	net := rg + "/providers/Microsoft.Network/"
	nq := "?api-version=2022-07-01"
	f.call(t, "PUT", net+"virtualNetworks/v"+nq, vnetBody("eastus", "10.1.0.0/16", "s", "10.1.0.0/24")).want(t, "vnet", 201, "")
	f.call(t, "PUT", net+"networkInterfaces/n"+nq, nicBody("eastus", net+"virtualNetworks/v/subnets/s")).want(t, "nic", 201, "")
	f.clock.Advance(time.Minute)
	vm := vmRequest("eastus", t4, inZone("1"), attachNIC(net+"networkInterfaces/n"))
	vmURL := rg + "/providers/Microsoft.Compute/virtualMachines/vm?api-version=" + APIVersion
	f.call(t, "PUT", vmURL, vm).want(t, "vm", 201, "")
	f.call(t, "PUT", rg+"/providers/Microsoft.Compute/proximityPlacementGroups/g?api-version="+APIVersion, ppgRequest("eastus", "1")).want(t, "ppg", 201, "")
	f.clock.Advance(time.Minute)

	del := f.call(t, "DELETE", groupPath+"doomed"+groupsQ, nil)
	del.want(t, "delete", http.StatusAccepted, "")
	poll := del.header.Get("Location")
	if !strings.Contains(poll, "/subscriptions/"+testSub+"/operationresults/") || del.header.Get("Retry-After") != "60" {
		t.Fatalf("delete headers %v", del.header)
	}
	if a := f.call(t, "GET", groupPath+"doomed"+groupsQ, nil); a.get("properties.provisioningState") != "Deleting" {
		t.Fatalf("group while deleting %v", a.body)
	}
	f.call(t, "PUT", rg+"/providers/Microsoft.Compute/virtualMachines/late?api-version="+APIVersion, vmRequest("eastus", t4, inZone("1"))).
		want(t, "a VM in a group being deleted", http.StatusConflict, "ResourceGroupBeingDeleted")
	f.call(t, "PUT", groupPath+"doomed"+groupsQ, map[string]any{"location": "eastus"}).
		want(t, "the group again while it is deleted", http.StatusConflict, "ResourceGroupBeingDeleted")
	if a := f.call(t, "GET", vmURL, nil); a.get("properties.provisioningState") != "Deleting" {
		t.Fatalf("VM while its group is deleted %v", a.body)
	}
	f.call(t, "GET", poll, nil).want(t, "poll while deleting", http.StatusAccepted, "")
	f.call(t, "DELETE", groupPath+"doomed"+groupsQ, nil).want(t, "a repeated delete", http.StatusAccepted, "")

	f.clock.Advance(time.Minute)
	f.call(t, "GET", poll, nil).want(t, "poll when done", http.StatusOK, "")
	f.call(t, "GET", groupPath+"doomed"+groupsQ, nil).want(t, "group after", http.StatusNotFound, "ResourceGroupNotFound")
	f.call(t, "GET", vmURL, nil).want(t, "VM after", http.StatusNotFound, "ResourceGroupNotFound")
	if n := len(f.world.List(cloud, nil)); n != 0 {
		t.Errorf("%d VMs left in the world", n)
	}
	f.createGroup(t, "doomed", "eastus")
	for _, path := range []string{net + "virtualNetworks/v" + nq, net + "networkInterfaces/n" + nq, vmURL,
		rg + "/providers/Microsoft.Compute/proximityPlacementGroups/g?api-version=" + APIVersion} {
		f.call(t, "GET", path, nil).want(t, path+" in the group made again", http.StatusNotFound, "ResourceNotFound")
	}
}
