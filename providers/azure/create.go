// SPDX-License-Identifier: Apache-2.0

package azure

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// Create launches one VM and waits for ARM to finish creating it.
//
// ARM has no create: a PUT of an existing name updates that VM. The VM is
// named after the token and sent with If-None-Match: *, so a repeat of the
// same create, from this process or another, is refused with 412 and
// finds the first one's VM instead of changing it or making a second.
func (p *Provider) Create(ctx context.Context, req providers.CreateRequest) (providers.Instance, error) {
	const op = "create"
	offer := req.Offer
	switch {
	case p.launchErr != nil:
		return providers.Instance{}, invalid(op, offer, "%v", p.launchErr)
	case req.Token == "" || req.Fleet == "" || req.Workload == "":
		return providers.Instance{}, invalid(op, offer, "a create needs a token, a fleet and a workload")
	case offer.Cloud != catalog.Azure:
		return providers.Instance{}, invalid(op, offer, "offer %s is not Azure's", offer)
	case !slices.Contains(p.regions, offer.Region):
		return providers.Instance{}, invalid(op, offer, "region %s is not one of the configured regions %v", offer.Region, p.regions)
	case offer.InstanceType == "":
		return providers.Instance{}, invalid(op, offer, "the offer names no VM size")
	case req.PlacementGroup != "" && !placementGroupName.MatchString(req.PlacementGroup):
		return providers.Instance{}, invalid(op, offer, "placement group %q is not a gpufleet placement group name", req.PlacementGroup)
	}
	zone, ok := armZone(offer)
	if !ok {
		return providers.Instance{}, invalid(op, offer, "zone %q is not a zone of %s (want %s-<n>)", offer.Zone, offer.Region, offer.Region)
	}
	if _, ok := p.launch.subnet(offer.Region); !ok {
		return providers.Instance{}, invalid(op, offer, "launch.subnetByRegion.%s: no subnet is configured for region %s, and a VM's NIC needs one (a subnet's resource id)", offer.Region, offer.Region)
	}
	if err := checkBootstrap(req.Bootstrap); err != nil {
		return providers.Instance{}, invalid(op, offer, "%v", err)
	}
	name := providers.InstanceName(req.Fleet, req.Workload, req.Token)
	vm := p.launch.vmFor(name, zone, req)
	if req.PlacementGroup != "" {
		vm.Properties.ProximityPlacementGroup = &armcompute.SubResource{ID: to.Ptr(p.ppgID(req.PlacementGroup))}
	}
	poller, err := p.vms.BeginCreateOrUpdate(ctx, p.cfg.ResourceGroup, name, vm,
		&armcompute.VirtualMachinesClientBeginCreateOrUpdateOptions{IfNoneMatch: to.Ptr("*")})
	if isStatus(err, http.StatusPreconditionFailed) {
		return p.existing(ctx, name, req)
	}
	if err != nil {
		return providers.Instance{}, classify(op, offer, err)
	}
	res, err := poller.PollUntilDone(ctx, &runtime.PollUntilDoneOptions{Frequency: p.poll})
	if err != nil {
		err = classify(op, offer, err)
		// A finished operation that failed (a stock-out, mostly) leaves
		// the VM behind in provisioningState Failed. One still running
		// (the poll itself failed) is left to finish: List shows it and
		// a repeated create returns it.
		if poller.Done() {
			if cerr := p.removeFailed(ctx, name, req.Token); cerr != nil {
				err = errors.Join(err, fmt.Errorf("deleting the failed VM %s, %w", name, classify("delete", planner.OfferKey{}, cerr)))
			}
		}
		return providers.Instance{}, err
	}
	inst, ok := instanceOf(&res.VirtualMachine)
	if !ok {
		return providers.Instance{}, &providers.Error{Kind: providers.KindUnavailable, Cloud: catalog.Azure, Op: op, Offer: offer,
			Message: fmt.Sprintf("ARM returned VM %s without the tags it was created with", name)}
	}
	return inst, nil
}

// existing answers a create whose VM name is taken: by this create's
// earlier run, which it returns, or by something else, which it refuses.
func (p *Provider) existing(ctx context.Context, name string, req providers.CreateRequest) (providers.Instance, error) {
	const op = "create"
	got, err := p.vms.Get(ctx, p.cfg.ResourceGroup, name, &armcompute.VirtualMachinesClientGetOptions{
		Expand: to.Ptr(armcompute.InstanceViewTypesInstanceView),
	})
	if err != nil {
		return providers.Instance{}, classify(op, req.Offer, err)
	}
	vm := &got.VirtualMachine
	if tagValues(vm.Tags)[providers.TagToken] != req.Token {
		return providers.Instance{}, &providers.Error{Kind: providers.KindInvalid, Cloud: catalog.Azure, Op: op, Offer: req.Offer,
			Code: "PreconditionFailed", Message: fmt.Sprintf("VM %s already exists and was not made by this create: its %s tag differs", name, providers.TagToken)}
	}
	if vm.Properties != nil && strings.EqualFold(deref(vm.Properties.ProvisioningState), "Failed") {
		// The earlier run failed and could not clean up (it crashed, or
		// its delete failed). Report its failure and clean up now, so
		// that the token is free to try again.
		code, message := failureCode(vm)
		var err error = &providers.Error{Kind: kindOf(http.StatusOK, code, message), Cloud: catalog.Azure, Op: op, Offer: req.Offer,
			Code: code, Message: fmt.Sprintf("an earlier create of VM %s failed: %s", name, message)}
		if derr := p.deleteVM(ctx, name); derr != nil {
			err = errors.Join(err, fmt.Errorf("deleting the failed VM %s, %w", name, classify("delete", planner.OfferKey{}, derr)))
		}
		return providers.Instance{}, err
	}
	inst, _ := instanceOf(vm)
	return inst, nil
}

// removeFailed deletes the VM a create left behind if its provisioning
// failed; a VM that exists in any other state is left alone.
func (p *Provider) removeFailed(ctx context.Context, name, token string) error {
	got, err := p.vms.Get(ctx, p.cfg.ResourceGroup, name, nil)
	if isStatus(err, http.StatusNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	vm := got.VirtualMachine
	if tagValues(vm.Tags)[providers.TagToken] != token || vm.Properties == nil ||
		!strings.EqualFold(deref(vm.Properties.ProvisioningState), "Failed") {
		return nil
	}
	return p.deleteVM(ctx, name)
}

// armZone is ARM's name for an offer's zone: "2" for "eastus-2", "" for a
// regional offer.
func armZone(offer planner.OfferKey) (string, bool) {
	if offer.Zone == "" {
		return "", true
	}
	n, ok := strings.CutPrefix(offer.Zone, offer.Region+"-")
	if !ok || n == "" {
		return "", false
	}
	return n, true
}
