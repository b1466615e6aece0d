// SPDX-License-Identifier: Apache-2.0

package azure

import (
	"context"
	"maps"
	"net/http"
	"slices"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

var _ providers.Adopter = (*Provider)(nil)

// Unowned lists the VMs of the resource group, in the configured regions,
// that carry no ownership tags: the resource group is where List looks,
// so a VM adopted from anywhere else would never be seen again. Compute
// filters VM lists by nothing but scale set, so the selector is read
// here, page by page, until a Limit is reached.
func (p *Provider) Unowned(ctx context.Context, sel providers.UnownedSelector) ([]providers.Unowned, error) {
	pager := p.vms.NewListPager(p.cfg.ResourceGroup, &armcompute.VirtualMachinesClientListOptions{
		Expand: to.Ptr(armcompute.ExpandTypeForListVMsInstanceView),
	})
	var out []providers.Unowned
	for pager.More() && !sel.Full(len(out)) {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return nil, classify("list", planner.OfferKey{}, err)
		}
		for _, vm := range page.Value {
			if vm == nil || !p.configured(deref(vm.Location)) {
				continue
			}
			tags := tagValues(vm.Tags)
			if _, _, _, owned := providers.Owned(tags); owned || !sel.Selects(deref(vm.Name), tags) {
				continue
			}
			u := p.unownedOf(vm)
			if u.State == planner.StateTerminated {
				continue
			}
			out = append(out, u)
		}
	}
	providers.SortUnowned(out)
	if sel.Full(len(out)) {
		out = out[:sel.Limit+1]
	}
	return out, nil
}

func (p *Provider) unownedOf(vm *armcompute.VirtualMachine) providers.Unowned {
	region := normalizeLocation(deref(vm.Location))
	u := providers.Unowned{
		ID:      deref(vm.Name),
		Offer:   planner.OfferKey{Cloud: catalog.Azure, Region: region, Market: marketOf(vm)},
		State:   stateOf(vm),
		Tags:    tagValues(vm.Tags),
		Account: p.cfg.Subscription,
	}
	if len(vm.Zones) > 0 && deref(vm.Zones[0]) != "" {
		u.Offer.Zone = region + "-" + deref(vm.Zones[0])
	}
	if props := vm.Properties; props != nil {
		if props.HardwareProfile != nil {
			u.Offer.InstanceType = string(deref(props.HardwareProfile.VMSize))
		}
		if props.TimeCreated != nil {
			u.LaunchedAt = *props.TimeCreated
		}
	}
	return u
}

// Adopt tags an unowned VM with the ownership tags of req, keeping the
// tags it has: an ARM PATCH replaces a VM's tags whole, so it sends them
// all. The VM is read first; one owned by now is refused, unless it
// carries these very tags (an adoption repeated).
func (p *Provider) Adopt(ctx context.Context, u providers.Unowned, req providers.CreateRequest) (providers.Instance, error) {
	const op = "adopt"
	if u.ID == "" || req.Fleet == "" || req.Workload == "" || req.Token == "" {
		return providers.Instance{}, invalid(op, u.Offer, "an adoption needs a VM name, a fleet, a workload and a token")
	}
	got, err := p.vms.Get(ctx, p.cfg.ResourceGroup, u.ID, nil)
	if isStatus(err, http.StatusNotFound) {
		return providers.Instance{}, &providers.Error{Kind: providers.KindNotFound, Cloud: catalog.Azure, Op: op, Offer: u.Offer, Message: "VM " + u.ID + " not found in resource group " + p.cfg.ResourceGroup}
	}
	if err != nil {
		return providers.Instance{}, classify(op, u.Offer, err)
	}
	want := providers.OwnershipTags(req)
	done, err := providers.CheckAdoptable(u.ID, tagValues(got.Tags), want)
	switch {
	case err != nil:
		return providers.Instance{}, invalid(op, u.Offer, "%v", err)
	case done:
		return p.adopted(ctx, u)
	}
	tags := tagValues(got.Tags)
	maps.Copy(tags, want)
	update := armcompute.VirtualMachineUpdate{Tags: map[string]*string{}}
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		update.Tags[k] = to.Ptr(tags[k])
	}
	poller, err := p.vms.BeginUpdate(ctx, p.cfg.ResourceGroup, u.ID, update, nil)
	if err == nil {
		_, err = poller.PollUntilDone(ctx, &runtime.PollUntilDoneOptions{Frequency: p.poll})
	}
	if err != nil {
		return providers.Instance{}, classify(op, u.Offer, err)
	}
	return p.adopted(ctx, u)
}

// adopted reads a VM as List returns it once tagged.
func (p *Provider) adopted(ctx context.Context, u providers.Unowned) (providers.Instance, error) {
	got, err := p.vms.Get(ctx, p.cfg.ResourceGroup, u.ID, &armcompute.VirtualMachinesClientGetOptions{Expand: to.Ptr(armcompute.InstanceViewTypesInstanceView)})
	if err != nil {
		return providers.Instance{}, classify("adopt", u.Offer, err)
	}
	inst, ok := instanceOf(&got.VirtualMachine)
	if !ok {
		return providers.Instance{}, &providers.Error{Kind: providers.KindUnavailable, Cloud: catalog.Azure, Op: "adopt", Offer: u.Offer, Message: "VM " + u.ID + " does not show its ownership tags after tagging"}
	}
	return inst, nil
}
