// SPDX-License-Identifier: Apache-2.0

package azure

import (
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// instanceOf reads an owned VM as the planner sees it; ok is false for a
// VM without gpufleet's ownership tags.
func instanceOf(vm *armcompute.VirtualMachine) (planner.Instance, bool) {
	if vm == nil {
		return planner.Instance{}, false
	}
	fleet, workload, token, ok := providers.Owned(tagValues(vm.Tags))
	if !ok {
		return planner.Instance{}, false
	}
	region := normalizeLocation(deref(vm.Location))
	inst := planner.Instance{
		ID: deref(vm.Name),
		OfferKey: planner.OfferKey{
			Cloud:  catalog.Azure,
			Region: region,
			Market: marketOf(vm),
		},
		Fleet:     fleet,
		Workload:  workload,
		Token:     token,
		Bootstrap: tagValues(vm.Tags)[providers.TagBootstrap],
		State:     stateOf(vm),
	}
	// The catalog names zones "<region>-<n>" so that a zone names one
	// place; ARM names them "<n>" within the VM's location.
	if len(vm.Zones) > 0 && deref(vm.Zones[0]) != "" {
		inst.Zone = region + "-" + deref(vm.Zones[0])
	}
	if p := vm.Properties; p != nil {
		if p.HardwareProfile != nil {
			inst.InstanceType = string(deref(p.HardwareProfile.VMSize))
		}
		if p.TimeCreated != nil {
			inst.LaunchedAt = *p.TimeCreated
		}
	}
	return inst, true
}

func marketOf(vm *armcompute.VirtualMachine) catalog.Market {
	if spot(vm) {
		return catalog.Spot
	}
	return catalog.OnDemand
}

// spot reports a VM bought at spot prices: priority Spot, or Low, its
// older name.
func spot(vm *armcompute.VirtualMachine) bool {
	if vm.Properties == nil || vm.Properties.Priority == nil {
		return false
	}
	p := *vm.Properties.Priority
	return strings.EqualFold(string(p), string(armcompute.VirtualMachinePriorityTypesSpot)) ||
		strings.EqualFold(string(p), string(armcompute.VirtualMachinePriorityTypesLow))
}

// stateOf maps a VM's provisioning state and, when the instance view is
// there, its power state.
//
// Azure does not say who deletes a VM: a Spot VM evicted under the Delete
// policy shows provisioningState Deleting with PowerState deallocating, as
// does one gpufleet is deleting, so every Spot VM on its way out is read as
// preempted. The reconciler, which remembers the deletes it asked for in
// the repository's state, reads its own as such. Evicted under the
// Deallocate policy, a Spot VM stays deallocated.
func stateOf(vm *armcompute.VirtualMachine) planner.State {
	var provisioning string
	if vm.Properties != nil {
		provisioning = strings.ToLower(deref(vm.Properties.ProvisioningState))
	}
	power := powerState(vm)
	switch {
	case provisioning == "failed" || provisioning == "canceled":
		// The VM resource stays, with its NIC and disk, until deleted.
		return planner.StateFailed
	case provisioning == "deleting" && spot(vm):
		return planner.StatePreempted
	case provisioning == "deleting":
		return planner.StateTerminated
	case spot(vm) && (power == "deallocating" || power == "deallocated"):
		return planner.StatePreempted
	case power == "stopping" || power == "stopped" || power == "deallocating" || power == "deallocated":
		// Stopped by someone, not gone: not a working node, and not
		// gpufleet's to count as running.
		return planner.StateStopping
	case provisioning == "creating" || power == "starting":
		return planner.StatePending
	case power == "running" || provisioning == "succeeded" || provisioning == "updating":
		return planner.StateRunning
	}
	return planner.StatePending
}

// powerState is the VM's PowerState status ("running", "deallocated"…),
// "" without an instance view.
func powerState(vm *armcompute.VirtualMachine) string {
	if vm.Properties == nil || vm.Properties.InstanceView == nil {
		return ""
	}
	for _, s := range vm.Properties.InstanceView.Statuses {
		if s == nil {
			continue
		}
		if rest, ok := strings.CutPrefix(deref(s.Code), "PowerState/"); ok {
			return strings.ToLower(rest)
		}
	}
	return ""
}

// failureCode is the code a failed provisioning left in the instance
// view ("ProvisioningState/failed/ZonalAllocationFailed"), and its message.
func failureCode(vm *armcompute.VirtualMachine) (code, message string) {
	if vm.Properties == nil || vm.Properties.InstanceView == nil {
		return "", ""
	}
	for _, s := range vm.Properties.InstanceView.Statuses {
		if s == nil {
			continue
		}
		if rest, ok := strings.CutPrefix(strings.ToLower(deref(s.Code)), "provisioningstate/failed/"); ok {
			// Keep the code's own casing.
			return deref(s.Code)[len(deref(s.Code))-len(rest):], deref(s.Message)
		}
	}
	return "", ""
}

func tagValues(tags map[string]*string) map[string]string {
	out := make(map[string]string, len(tags))
	for k, v := range tags {
		out[k] = deref(v)
	}
	return out
}

// normalizeLocation turns a location as ARM may spell it ("East US") into
// its canonical name ("eastus").
func normalizeLocation(loc string) string {
	return strings.ToLower(strings.ReplaceAll(loc, " ", ""))
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
