// SPDX-License-Identifier: Apache-2.0

package azure

import (
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// vmIn builds a listed VM: its provisioning state, its power state ("" for
// no instance view) and its priority ("" for Regular).
func vmIn(provisioning, power string, priority armcompute.VirtualMachinePriorityTypes) *armcompute.VirtualMachine {
	vm := &armcompute.VirtualMachine{
		Name:     to.Ptr("gf-demo-w-0123456789abcdef"),
		Location: to.Ptr("eastus"),
		Zones:    []*string{to.Ptr("2")},
		Tags: map[string]*string{
			providers.TagFleet: to.Ptr("demo"), providers.TagWorkload: to.Ptr("w"), providers.TagToken: to.Ptr("gf1-0123456789abcdef0123456789abcdef"),
		},
		Properties: &armcompute.VirtualMachineProperties{
			ProvisioningState: to.Ptr(provisioning),
			HardwareProfile:   &armcompute.HardwareProfile{VMSize: to.Ptr(armcompute.VirtualMachineSizeTypes(t4))},
			TimeCreated:       to.Ptr(time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)),
		},
	}
	if priority != "" {
		vm.Properties.Priority = to.Ptr(priority)
	}
	if power != "" {
		vm.Properties.InstanceView = &armcompute.VirtualMachineInstanceView{Statuses: []*armcompute.InstanceViewStatus{
			{Code: to.Ptr("ProvisioningState/" + provisioning)},
			{Code: to.Ptr("PowerState/" + power)},
		}}
	}
	return vm
}

func TestStateOf(t *testing.T) {
	const (
		regular = ""
		spotVM  = armcompute.VirtualMachinePriorityTypesSpot
		lowVM   = armcompute.VirtualMachinePriorityTypesLow
	)
	tests := []struct {
		name         string
		provisioning string
		power        string
		priority     armcompute.VirtualMachinePriorityTypes
		want         planner.State
	}{
		{"creating", "Creating", "starting", regular, planner.StatePending},
		{"creating without a view", "Creating", "", regular, planner.StatePending},
		{"succeeded and starting", "Succeeded", "starting", regular, planner.StatePending},
		{"running", "Succeeded", "running", regular, planner.StateRunning},
		{"succeeded without a view", "Succeeded", "", regular, planner.StateRunning},
		{"updating a running VM", "Updating", "running", regular, planner.StateRunning},
		{"spot running", "Succeeded", "running", spotVM, planner.StateRunning},
		{"failed creation", "Failed", "", regular, planner.StateFailed},
		{"failed spot creation", "Failed", "", spotVM, planner.StateFailed},
		{"canceled creation", "Canceled", "", regular, planner.StateFailed},
		{"regular being deleted", "Deleting", "deallocating", regular, planner.StateTerminated},
		{"spot evicted under the Delete policy", "Deleting", "deallocating", spotVM, planner.StatePreempted},
		{"spot being deleted, no view", "Deleting", "", spotVM, planner.StatePreempted},
		{"spot evicted under the Deallocate policy", "Succeeded", "deallocated", spotVM, planner.StatePreempted},
		{"spot being deallocated", "Succeeded", "deallocating", spotVM, planner.StatePreempted},
		{"low priority evicted", "Succeeded", "deallocated", lowVM, planner.StatePreempted},
		{"regular stopping", "Succeeded", "stopping", regular, planner.StateStopping},
		{"regular stopped", "Succeeded", "stopped", regular, planner.StateStopping},
		{"regular deallocated", "Succeeded", "deallocated", regular, planner.StateStopping},
		{"spot stopped by someone", "Succeeded", "stopped", spotVM, planner.StateStopping},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := stateOf(vmIn(tt.provisioning, tt.power, tt.priority)); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}

func TestInstanceOf(t *testing.T) {
	vm := vmIn("Succeeded", "running", armcompute.VirtualMachinePriorityTypesSpot)
	vm.Location = to.Ptr("East US")
	inst, ok := instanceOf(vm)
	want := planner.Instance{
		ID:         "gf-demo-w-0123456789abcdef",
		OfferKey:   planner.OfferKey{Cloud: catalog.Azure, Region: "eastus", Zone: "eastus-2", InstanceType: t4, Market: catalog.Spot},
		Fleet:      "demo",
		Workload:   "w",
		Token:      "gf1-0123456789abcdef0123456789abcdef",
		State:      planner.StateRunning,
		LaunchedAt: time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC),
	}
	if !ok || inst != want {
		t.Errorf("got %+v (%v)\nwant %+v", inst, ok, want)
	}

	delete(vm.Tags, providers.TagWorkload)
	if _, ok := instanceOf(vm); ok {
		t.Error("a VM without the workload tag is read as owned")
	}
}

func TestFailureCode(t *testing.T) {
	vm := vmIn("Failed", "", "")
	vm.Properties.InstanceView = &armcompute.VirtualMachineInstanceView{Statuses: []*armcompute.InstanceViewStatus{
		{Code: to.Ptr("ProvisioningState/failed/ZonalAllocationFailed"), Message: to.Ptr("Allocation failed.")},
	}}
	if code, msg := failureCode(vm); code != "ZonalAllocationFailed" || msg != "Allocation failed." {
		t.Errorf("got %q %q", code, msg)
	}
}
