// SPDX-License-Identifier: Apache-2.0

package armsim

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/gpufleet/gpufleet/providers/sim"
)

// An account whose role lacks an action (sim.Account.Denied) is refused
// it with ARM's 403 AuthorizationFailed naming the action, through the
// Azure SDK for Python; what the role may still do, it does.
func TestPythonSDKDenied(t *testing.T) {
	py := pythonWithAzure(t)
	if testing.Short() {
		t.Skip("drives the Azure SDK for Python")
	}
	f := newFront(t, frontConfig{})
	f.mustCreate(t, "running", vmRequest("eastus", t4, inZone("1")))
	if err := f.world.SetAccount(sim.Account{Denied: []string{
		"azure:virtualMachines/write",
		"azure:Microsoft.Compute/virtualMachines/deallocate/action",
	}}); err != nil {
		t.Fatal(err)
	}
	results := runScript(t, py, f.server, "denied.py")
	var names []string
	results.value(t, "list", &names)
	if !slices.Equal(names, []string{"running"}) {
		t.Errorf("the VMs listed are %v", names)
	}
	scope := "/subscriptions/" + testSub + "/resourceGroups/" + testRG + "/providers/Microsoft.Compute/virtualMachines/running"
	for step, action := range map[string]string{
		"write":      "Microsoft.Compute/virtualMachines/write",
		"deallocate": "Microsoft.Compute/virtualMachines/deallocate/action",
	} {
		r := results[step]
		if r.OK || r.Status != http.StatusForbidden || r.Code != "AuthorizationFailed" ||
			!strings.Contains(r.Message, "does not have authorization to perform action '"+action+"' over scope '"+scope+"'") {
			t.Errorf("%s: %+v, want 403 AuthorizationFailed naming %s", step, r, action)
		}
	}
	if r := results["powerOff"]; !r.OK {
		t.Errorf("powerOff, which the role may do: %+v", r)
	}
	inst, ok := f.world.ByName(cloud, strings.ToLower("/subscriptions/"+testSub+"/resourceGroups/"+testRG), "running")
	if !ok || inst.Tags["team"] == "ml" {
		t.Errorf("the denied write changed the VM: %+v", inst)
	}
}
