// SPDX-License-Identifier: Apache-2.0

package armsim

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7"

	"github.com/gpufleet/gpufleet/providers/sim"
)

const (
	netQ    = "?api-version=2022-07-01"
	netPath = "/subscriptions/" + testSub + "/resourceGroups/" + testRG + "/providers/Microsoft.Network/"
)

func vnetBody(location, space string, subnets ...string) map[string]any {
	var sns []any
	for i := 0; i+1 < len(subnets); i += 2 {
		sns = append(sns, map[string]any{"name": subnets[i], "properties": map[string]any{"addressPrefix": subnets[i+1]}})
	}
	return map[string]any{"location": location, "properties": map[string]any{
		"addressSpace": map[string]any{"addressPrefixes": []string{space}}, "subnets": sns}}
}

func nicBody(location, subnetID string) map[string]any {
	return map[string]any{"location": location, "properties": map[string]any{
		"ipConfigurations": []any{map[string]any{"name": "ipconfig1", "properties": map[string]any{"subnet": map[string]any{"id": subnetID}}}}}}
}

// attachNIC makes a VM use an existing network interface instead of
// making its own.
func attachNIC(id string) vmOption {
	return func(vm *armcompute.VirtualMachine) {
		vm.Properties.NetworkProfile = &armcompute.NetworkProfile{NetworkInterfaces: []*armcompute.NetworkInterfaceReference{{
			ID: to.Ptr(id), Properties: &armcompute.NetworkInterfaceReferenceProperties{Primary: to.Ptr(true)}}}}
	}
}

// Networks and subnets: Network's long-running writes, its checks of
// address prefixes, subnets as child resources, and subnets a NIC uses
// that cannot be deleted.
func TestVirtualNetworks(t *testing.T) {
	f := newFront(t, frontConfig{manual: true, world: sim.Config{OperationTime: 20 * time.Second}})
	vnet := netPath + "virtualNetworks/ml"
	put := f.call(t, "PUT", vnet+netQ, vnetBody("eastus", "10.5.0.0/16", "a", "10.5.0.0/24"))
	put.want(t, "create", http.StatusCreated, "")
	op := put.header.Get("Azure-AsyncOperation")
	if !strings.Contains(op, "/providers/Microsoft.Network/locations/eastus/operations/") || put.header.Get("Retry-After") != "20" ||
		put.get("properties.provisioningState") != "Updating" || put.get("etag") == "" || put.get("properties.resourceGuid") == "" {
		t.Fatalf("create: %v %v", put.header, put.body)
	}
	if a := f.call(t, "GET", op, nil); a.get("status") != "InProgress" {
		t.Fatalf("operation while running: %v", a.body)
	}
	f.clock.Advance(20 * time.Second)
	if a := f.call(t, "GET", op, nil); a.get("status") != "Succeeded" {
		t.Fatalf("operation after its time: %v", a.body)
	}
	if a := f.call(t, "GET", vnet+netQ, nil); a.get("properties.provisioningState") != "Succeeded" {
		t.Fatalf("network after its time: %v", a.body)
	}
	f.call(t, "PUT", netPath+"networkInterfaces/n1"+netQ, nicBody("eastus", vnet+"/subnets/a")).want(t, "nic", http.StatusCreated, "")
	f.clock.Advance(20 * time.Second)

	tests := []struct {
		name       string
		method     string
		path       string
		body       any
		wantStatus int
		wantCode   string
		wantText   string
	}{
		{"subnet outside the space", "PUT", vnet + "/subnets/out" + netQ, map[string]any{"properties": map[string]any{"addressPrefix": "10.6.0.0/24"}}, 400, "NetcfgInvalidSubnet",
			"Subnet 'out' is not valid in virtual network 'ml'."},
		{"overlapping subnet", "PUT", vnet + "/subnets/b" + netQ, map[string]any{"properties": map[string]any{"addressPrefix": "10.5.0.128/25"}}, 400, "NetcfgSubnetRangesOverlap", ""},
		{"subnet without a prefix", "PUT", vnet + "/subnets/b" + netQ, map[string]any{"properties": map[string]any{}}, 400, "NoAddressPrefixOrPoolProvided", ""},
		{"unparsable prefix", "PUT", vnet + "/subnets/b" + netQ, map[string]any{"properties": map[string]any{"addressPrefix": "10.5.1/24"}}, 400, "InvalidRequestFormat", ""},
		{"a second subnet", "PUT", vnet + "/subnets/b" + netQ, map[string]any{"properties": map[string]any{"addressPrefix": "10.5.1.0/24"}}, 201, "", ""},
		{"a subnet read", "GET", vnet + "/subnets/A" + netQ, nil, 200, "", ""},
		{"a subnet not there", "GET", vnet + "/subnets/c" + netQ, nil, 404, "NotFound", "/virtualNetworks/ml/subnets/c not found."},
		{"a subnet of no network", "GET", netPath + "virtualNetworks/none/subnets/a" + netQ, nil, 404, "ResourceNotFound",
			"The Resource 'Microsoft.Network/virtualNetworks/none' under resource group 'gpufleet' was not found."},
		{"a network not there", "GET", netPath + "virtualNetworks/none" + netQ, nil, 404, "ResourceNotFound", ""},
		{"a subnet in use", "DELETE", vnet + "/subnets/a" + netQ, nil, 400, "InUseSubnetCannotBeDeleted",
			"Subnet a is in use by /subscriptions/" + testSub + "/resourceGroups/gpufleet/providers/Microsoft.Network/networkInterfaces/n1/ipConfigurations/ipconfig1 and cannot be deleted."},
		{"a network in use", "DELETE", vnet + netQ, nil, 400, "InUseSubnetCannotBeDeleted", ""},
		{"a PUT dropping a subnet in use", "PUT", vnet + netQ, vnetBody("eastus", "10.5.0.0/16", "b", "10.5.1.0/24"), 400, "InUseSubnetCannotBeDeleted", ""},
		{"a network moved", "PUT", vnet + netQ, vnetBody("westus", "10.5.0.0/16", "a", "10.5.0.0/24"), 409, "InvalidResourceLocation", ""},
		{"a network of no location", "PUT", netPath + "virtualNetworks/x" + netQ, map[string]any{}, 400, "LocationRequired", ""},
		{"a network in an unknown location", "PUT", netPath + "virtualNetworks/x" + netQ, vnetBody("marsnorth", "10.0.0.0/16"), 400, "LocationNotAvailableForResourceType", ""},
		{"a network delete of none", "DELETE", netPath + "virtualNetworks/none" + netQ, nil, 204, "", ""},
		{"a subnet delete of none", "DELETE", vnet + "/subnets/none" + netQ, nil, 204, "", ""},
		{"a network of an unknown api-version", "GET", vnet + "?api-version=2099-01-01", nil, 400, "NoRegisteredProviderFound",
			"for location 'eastus' and API version '2099-01-01' for type 'virtualNetworks'. The supported api-versions are '2020-11-01, "},
		{"an unknown Network type", "GET", netPath + "loadBalancers/lb" + netQ, nil, 404, "InvalidResourceType", "'loadBalancers' could not be found in the namespace 'Microsoft.Network'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := f.call(t, tt.method, tt.path, tt.body)
			a.want(t, tt.method, tt.wantStatus, tt.wantCode)
			if !strings.Contains(a.message(), tt.wantText) {
				t.Errorf("message %q, want %q", a.message(), tt.wantText)
			}
		})
	}

	t.Run("listed with their users", func(t *testing.T) {
		a := f.call(t, "GET", vnet+"/subnets"+netQ, nil)
		a.want(t, "list", 200, "")
		var names []string
		var users int
		for _, v := range a.body["value"].([]any) {
			sn := v.(map[string]any)
			names = append(names, sn["name"].(string))
			if ipc, ok := sn["properties"].(map[string]any)["ipConfigurations"].([]any); ok {
				users += len(ipc)
			}
		}
		if strings.Join(names, ",") != "a,b" || users != 1 {
			t.Errorf("subnets %v with %d users", names, users)
		}
	})
	t.Run("deleted when unused", func(t *testing.T) {
		del := f.call(t, "DELETE", netPath+"networkInterfaces/n1"+netQ, nil)
		del.want(t, "NIC", http.StatusAccepted, "")
		if del.header.Get("Location") == "" || del.header.Get("Azure-AsyncOperation") == "" {
			t.Fatalf("delete headers %v", del.header)
		}
		if a := f.call(t, "GET", netPath+"networkInterfaces/n1"+netQ, nil); a.get("properties.provisioningState") != "Deleting" {
			t.Fatalf("NIC while deleting %v", a.body)
		}
		f.call(t, "GET", del.header.Get("Location"), nil).want(t, "the delete's Location while running", http.StatusAccepted, "")
		f.clock.Advance(20 * time.Second)
		f.call(t, "GET", del.header.Get("Location"), nil).want(t, "the delete's Location when done", http.StatusNoContent, "")
		f.call(t, "DELETE", vnet+"/subnets/a"+netQ, nil).want(t, "subnet", http.StatusAccepted, "")
		f.clock.Advance(20 * time.Second)
		f.call(t, "GET", vnet+"/subnets/a"+netQ, nil).want(t, "subnet after", http.StatusNotFound, "NotFound")
		f.call(t, "DELETE", vnet+netQ, nil).want(t, "network", http.StatusAccepted, "")
		f.clock.Advance(20 * time.Second)
		f.call(t, "GET", vnet+netQ, nil).want(t, "network after", http.StatusNotFound, "ResourceNotFound")
	})
}

// Network interfaces get the first free address of their subnet after the
// four Azure reserves, keep it across PUTs, and must be in their subnet's
// region.
func TestNetworkInterfaces(t *testing.T) {
	f := newFront(t, frontConfig{})
	subnet := fixtureSubnetID("westus3")
	ips := map[string]string{}
	for _, name := range []string{"n1", "n2", "n1"} {
		a := f.call(t, "PUT", netPath+"networkInterfaces/"+name+netQ, nicBody("westus3", subnet))
		if a.status != http.StatusCreated && a.status != http.StatusOK {
			a.want(t, name, http.StatusCreated, "")
		}
		ipcs := a.body["properties"].(map[string]any)["ipConfigurations"].([]any)
		ip := ipcs[0].(map[string]any)["properties"].(map[string]any)["privateIPAddress"].(string)
		if old, ok := ips[name]; ok && old != ip {
			t.Errorf("%s moved from %s to %s", name, old, ip)
		}
		ips[name] = ip
	}
	if !strings.HasSuffix(ips["n1"], ".0.4") || !strings.HasSuffix(ips["n2"], ".0.5") {
		t.Errorf("addresses %v, want .4 and .5", ips)
	}
	tests := []struct {
		name     string
		body     any
		wantCode string
		wantText string
	}{
		{"a subnet in another region", nicBody("eastus", subnet), "InvalidResourceReference",
			"Resource " + subnet + " referenced by resource /subscriptions/" + testSub + "/resourceGroups/gpufleet/providers/Microsoft.Network/networkInterfaces/x was not found. Please make sure that the referenced resource exists, and that both resources are in the same region."},
		{"a subnet not there", nicBody("westus3", strings.Replace(subnet, "/nodes", "/none", 1)), "InvalidResourceReference", ""},
		{"not a subnet id", nicBody("westus3", "subnet-1"), "LinkedInvalidPropertyId",
			"Property id 'subnet-1' at path 'properties.ipConfigurations[0].properties.subnet.id' is invalid."},
		{"no subnet", map[string]any{"location": "westus3", "properties": map[string]any{"ipConfigurations": []any{map[string]any{"name": "c"}}}}, "InvalidParameter", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := f.call(t, "PUT", netPath+"networkInterfaces/x"+netQ, tt.body)
			a.want(t, "PUT", http.StatusBadRequest, tt.wantCode)
			if !strings.Contains(a.message(), tt.wantText) {
				t.Errorf("message %q", a.message())
			}
		})
	}
	a := f.call(t, "GET", netPath+"networkInterfaces"+netQ, nil)
	if len(a.body["value"].([]any)) != 2 {
		t.Errorf("listed %v", a.body)
	}
}

// A VM's references are checked when it is created: the interfaces it
// attaches and the subnets of the interfaces it makes must exist in its
// location; an interface a VM uses, or a subnet its own interfaces are in,
// cannot be deleted until the VM is gone.
func TestVMReferences(t *testing.T) {
	f := newFront(t, frontConfig{world: sim.Config{Catalog: withNV6()}})
	nic := netPath + "networkInterfaces/"
	f.call(t, "PUT", nic+"east"+netQ, nicBody("eastus", fixtureSubnetID("eastus"))).want(t, "nic", 201, "")
	accel := nicBody("eastus", fixtureSubnetID("eastus"))
	accel["properties"].(map[string]any)["enableAcceleratedNetworking"] = true
	f.call(t, "PUT", nic+"fast"+netQ, accel).want(t, "nic", 201, "")
	vmID := "/subscriptions/" + testSub + "/resourceGroups/" + testRG + "/providers/Microsoft.Compute/virtualMachines/"
	tests := []struct {
		name     string
		vm       armcompute.VirtualMachine
		wantCode string
		wantText string
	}{
		{"an interface not there", vmRequest("eastus", t4, inZone("1"), attachNIC(nic+"none")), "InvalidResourceReference",
			"Resource " + nic + "none referenced by resource " + vmID + "x was not found."},
		{"an interface in another region", vmRequest("westus3", a100, attachNIC(nic+"east")), "InvalidResourceReference", ""},
		{"not an interface id", vmRequest("eastus", t4, inZone("1"), attachNIC(netPath+"virtualNetworks/gpu-eastus")), "LinkedInvalidPropertyId",
			"at path 'properties.networkProfile.networkInterfaces[0].id'"},
		{"a subnet not there", vmRequest("eastus", t4, inZone("1"), func(vm *armcompute.VirtualMachine) {
			ipc := vm.Properties.NetworkProfile.NetworkInterfaceConfigurations[0].Properties.IPConfigurations[0]
			ipc.Properties.Subnet.ID = to.Ptr(strings.Replace(fixtureSubnetID("eastus"), "/nodes", "/none", 1))
		}), "InvalidResourceReference", "referenced by resource /subscriptions/" + testSub + "/resourceGroups/gpufleet/providers/Microsoft.Network/networkInterfaces/nic0 was not found."},
		{"a subnet in another region", vmRequest("eastus", t4, inZone("1"), func(vm *armcompute.VirtualMachine) {
			ipc := vm.Properties.NetworkProfile.NetworkInterfaceConfigurations[0].Properties.IPConfigurations[0]
			ipc.Properties.Subnet.ID = to.Ptr(fixtureSubnetID("westus3"))
		}), "InvalidResourceReference", ""},
		{"accelerated networking on a size without it", vmRequest("eastus", nv6, inZone("1"), attachNIC(nic+"fast")), "VMSizeIsNotPermittedToEnableAcceleratedNetworking",
			"on Network Interface /subscriptions/" + testSub + "/resourceGroups/gpufleet/providers/Microsoft.Network/networkInterfaces/fast."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := f.create(t, "x", tt.vm)
			re := responseError(t, err, tt.wantCode, http.StatusBadRequest)
			if !strings.Contains(re.Error(), tt.wantText) {
				t.Errorf("error %v, want %q", err, tt.wantText)
			}
		})
	}

	f.mustCreate(t, "attached", vmRequest("eastus", t4, inZone("1"), attachNIC(nic+"east")))
	if a := f.call(t, "GET", nic+"east"+netQ, nil); a.get("properties.virtualMachine.id") != vmID+"attached" {
		t.Errorf("interface of a VM: %v", a.body["properties"])
	}
	f.call(t, "DELETE", nic+"east"+netQ, nil).want(t, "an interface in use", http.StatusBadRequest, "NicInUse")
	f.mustCreate(t, "own", vmRequest("westus3", a100))
	f.call(t, "DELETE", fixtureSubnetID("westus3")+netQ, nil).want(t, "a subnet a VM's own interface is in", http.StatusBadRequest, "InUseSubnetCannotBeDeleted")
	for _, name := range []string{"attached", "own"} {
		f.delete(t, name)
	}
	f.call(t, "DELETE", nic+"east"+netQ, nil).want(t, "the interface once its VM is gone", http.StatusAccepted, "")
	f.call(t, "DELETE", fixtureSubnetID("westus3")+netQ, nil).want(t, "the subnet once its VM is gone", http.StatusAccepted, "")
}

// An interface belongs to one VM at a time: a second VM naming it is
// refused with NicInUse naming both, while the VM that has it may be put
// again with it, and once that VM is deleted another may take it.
func TestNICAttachedOnce(t *testing.T) {
	f := newFront(t, frontConfig{})
	nic := netPath + "networkInterfaces/"
	f.call(t, "PUT", nic+"shared"+netQ, nicBody("eastus", fixtureSubnetID("eastus"))).want(t, "nic", 201, "")
	vm := vmRequest("eastus", t4, inZone("1"), attachNIC(nic+"shared"))
	f.mustCreate(t, "first", vm)

	_, err := f.create(t, "second", vm)
	re := responseError(t, err, "NicInUse", http.StatusBadRequest)
	vmID := "/subscriptions/" + testSub + "/resourceGroups/" + testRG + "/providers/Microsoft.Compute/virtualMachines/"
	want := "Network interface " + nic + "shared is used by existing resource " + vmID + "first. In order to use this network interface for a new virtual machine, please detach it from the existing one."
	if !strings.Contains(re.Error(), want) {
		t.Errorf("error %v, want %q", err, want)
	}
	if _, err := f.get(t, "second"); err == nil {
		t.Error("the refused VM exists")
	}
	if _, err := f.create(t, "first", vm); err != nil {
		t.Errorf("a re-PUT of the VM with its own interface: %v", err)
	}
	f.delete(t, "first")
	if _, err := f.create(t, "second", vm); err != nil {
		t.Errorf("the interface once its VM is gone: %v", err)
	}
}
