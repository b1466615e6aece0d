// SPDX-License-Identifier: Apache-2.0

package azure

import (
	"context"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
)

// List returns the owned VMs of the resource group in the configured
// regions.
//
// A resource group's VMs are one listing across all regions, so where the
// other clouds list each region concurrently (bounded), Azure makes one
// paged call and has nothing to run in parallel. Compute filters VM lists
// by scale set only, not by tag, so ownership is checked here. The
// instance view comes with each page, so the power state costs no call
// per VM.
func (p *Provider) List(ctx context.Context, sel providers.Selector) ([]providers.Instance, error) {
	pager := p.vms.NewListPager(p.cfg.ResourceGroup, &armcompute.VirtualMachinesClientListOptions{
		Expand: to.Ptr(armcompute.ExpandTypeForListVMsInstanceView),
	})
	var out []providers.Instance
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return nil, classify("list", planner.OfferKey{}, err)
		}
		for _, vm := range page.Value {
			if vm == nil || !p.configured(deref(vm.Location)) {
				continue
			}
			if inst, ok := instanceOf(vm); ok && sel.Matches(inst) {
				out = append(out, inst)
			}
		}
	}
	return out, nil
}
