// SPDX-License-Identifier: Apache-2.0

package armsim

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// Every subscription has the fixture's group and networks without anyone
// making them: the example's subnets are there in each region. They are
// changed and deleted like anything else, and what was done to them stays.
func TestFixture(t *testing.T) {
	f := newFront(t, frontConfig{})
	other := "/subscriptions/11111111-2222-3333-4444-555555555555/resourceGroups/GpuFleet/providers/Microsoft.Network/virtualNetworks/"
	t.Run("in every subscription", func(t *testing.T) {
		a := f.call(t, "GET", other+"gpu-swedencentral/subnets/nodes"+netQ, nil)
		a.want(t, "subnet", http.StatusOK, "")
		if !strings.HasSuffix(a.get("properties.addressPrefix"), ".0.0/20") || a.get("properties.provisioningState") != "Succeeded" {
			t.Errorf("subnet %v", a.body)
		}
		g := f.call(t, "GET", "/subscriptions/11111111-2222-3333-4444-555555555555/resourcegroups/gpufleet"+groupsQ, nil)
		if g.get("location") != "eastus" || g.get("name") != "gpufleet" {
			t.Errorf("group %v", g.body)
		}
	})
	t.Run("a network per region, and gpu in eastus", func(t *testing.T) {
		a := f.call(t, "GET", netPath+"virtualNetworks"+netQ, nil)
		a.want(t, "list", http.StatusOK, "")
		var names, prefixes []string
		for _, v := range a.body["value"].([]any) {
			vn := v.(map[string]any)
			names = append(names, vn["name"].(string)+"@"+vn["location"].(string))
			prefixes = append(prefixes, vn["properties"].(map[string]any)["addressSpace"].(map[string]any)["addressPrefixes"].([]any)[0].(string))
		}
		want := []string{"gpu@eastus"}
		for _, r := range catalog.Default().RegionsOf(catalog.Azure) {
			want = append(want, "gpu-"+r.Name+"@"+r.Name)
		}
		slices.Sort(names)
		slices.Sort(want)
		if !slices.Equal(names, want) {
			t.Errorf("networks %v, want %v", names, want)
		}
		slices.Sort(prefixes)
		if len(slices.Compact(prefixes)) != len(want) {
			t.Errorf("address spaces overlap: %v", prefixes)
		}
	})
	t.Run("changed and deleted", func(t *testing.T) {
		space := f.call(t, "GET", netPath+"virtualNetworks/gpu-westus3"+netQ, nil)
		space.want(t, "the network", http.StatusOK, "")
		prefix := space.body["properties"].(map[string]any)["addressSpace"].(map[string]any)["addressPrefixes"].([]any)[0].(string)
		// Past the fixture's /20 of nodes, inside the network's /16.
		extra := strings.Replace(prefix, ".0.0/16", ".16.0/24", 1)
		f.call(t, "PUT", netPath+"virtualNetworks/gpu-westus3/subnets/extra"+netQ, map[string]any{"properties": map[string]any{"addressPrefix": extra}}).
			want(t, "a subnet added", http.StatusCreated, "")
		f.call(t, "DELETE", netPath+"virtualNetworks/gpu-westeurope"+netQ, nil).want(t, "a network deleted", http.StatusAccepted, "")
		f.call(t, "GET", netPath+"virtualNetworks/gpu-westeurope"+netQ, nil).want(t, "the deleted network", http.StatusNotFound, "ResourceNotFound")
		f.call(t, "PUT", netPath+"virtualNetworks/gpu-westeurope"+netQ, vnetBody("westeurope", "10.200.0.0/16", "mine", "10.200.0.0/24")).
			want(t, "made again", http.StatusCreated, "")
		a := f.call(t, "GET", netPath+"virtualNetworks/gpu-westeurope/subnets/nodes"+netQ, nil)
		a.want(t, "the fixture's subnet of the network made again", http.StatusNotFound, "NotFound")
	})
	t.Run("the group is kept while another group's VM uses its subnets", func(t *testing.T) {
		f.createGroup(t, "users", "eastus")
		path := "/subscriptions/" + testSub + "/resourceGroups/users/providers/Microsoft.Compute/virtualMachines/u?api-version=" + APIVersion
		f.call(t, "PUT", path, vmRequest("eastus", t4, inZone("1"))).want(t, "a VM in the fixture's subnet", http.StatusCreated, "")
		a := f.call(t, "DELETE", groupPath+"gpufleet"+groupsQ, nil)
		a.want(t, "delete", http.StatusBadRequest, "InUseSubnetCannotBeDeleted")
		if !strings.Contains(a.message(), "/resourceGroups/users/providers/Microsoft.Compute/virtualMachines/u") {
			t.Errorf("message %q", a.message())
		}
	})
	t.Run("the group deleted stays deleted", func(t *testing.T) {
		sub := "/subscriptions/22222222-2222-3333-4444-555555555555/resourcegroups/gpufleet"
		f.call(t, "DELETE", sub+groupsQ, nil).want(t, "delete", http.StatusAccepted, "")
		f.call(t, "GET", sub+groupsQ, nil).want(t, "after", http.StatusNotFound, "ResourceGroupNotFound")
		f.call(t, "PUT", sub+groupsQ, map[string]any{"location": "eastus"}).want(t, "made again", http.StatusCreated, "")
		f.call(t, "GET", sub+"/providers/Microsoft.Network/virtualNetworks/gpu-eastus"+netQ, nil).
			want(t, "its networks", http.StatusNotFound, "ResourceNotFound")
		f.call(t, "GET", other+"gpu-eastus"+netQ, nil).want(t, "another subscription's", http.StatusOK, "")
	})
}

// What clients made, and what they did to the fixture, is in the world's
// state file: an emulator restarted from it serves the same groups,
// networks and interfaces.
func TestResourcesPersist(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state.json")
	start := func() (*sim.World, *front) {
		world, err := sim.New(sim.Config{Catalog: catalog.Default(), StatePath: state})
		if err != nil {
			t.Fatal(err)
		}
		ts := httptest.NewServer(New(world, Options{}))
		t.Cleanup(ts.Close)
		return world, &front{world: world, url: ts.URL}
	}
	world, f := start()
	f.createGroup(t, "kept", "westus3")
	kept := "/subscriptions/" + testSub + "/resourceGroups/kept/providers/Microsoft.Network/"
	f.call(t, "PUT", kept+"virtualNetworks/v"+netQ, vnetBody("westus3", "10.1.0.0/16", "s", "10.1.0.0/24")).want(t, "vnet", 201, "")
	nic := f.call(t, "PUT", kept+"networkInterfaces/n"+netQ, nicBody("westus3", kept+"virtualNetworks/v/subnets/s"))
	nic.want(t, "nic", 201, "")
	f.call(t, "DELETE", netPath+"virtualNetworks/gpu-japaneast"+netQ, nil).want(t, "a fixture network", http.StatusAccepted, "")
	if err := world.Save(); err != nil {
		t.Fatal(err)
	}

	_, f = start()
	f.call(t, "GET", groupPath+"kept"+groupsQ, nil).want(t, "group", http.StatusOK, "")
	f.call(t, "GET", kept+"virtualNetworks/v/subnets/s"+netQ, nil).want(t, "subnet", http.StatusOK, "")
	again := f.call(t, "GET", kept+"networkInterfaces/n"+netQ, nil)
	again.want(t, "nic", http.StatusOK, "")
	if again.get("etag") != nic.get("etag") || again.get("properties.resourceGuid") != nic.get("properties.resourceGuid") {
		t.Errorf("interface after a restart %v, before %v", again.body, nic.body)
	}
	f.call(t, "GET", netPath+"virtualNetworks/gpu-japaneast"+netQ, nil).want(t, "the deleted fixture network", http.StatusNotFound, "ResourceNotFound")
}
