// SPDX-License-Identifier: Apache-2.0

package azure

import (
	"context"
	"net/http"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
)

// Delete deletes an owned VM and waits until it is gone, with its disk and
// NIC. A VM that is already gone is success. The VM is read first, and a
// VM without gpufleet's tags is refused, whatever the caller believes.
func (p *Provider) Delete(ctx context.Context, inst providers.Instance) error {
	const op = "delete"
	if inst.ID == "" {
		return invalid(op, planner.OfferKey{}, "an instance to delete needs an ID")
	}
	got, err := p.vms.Get(ctx, p.cfg.ResourceGroup, inst.ID, nil)
	if isStatus(err, http.StatusNotFound) {
		return nil
	}
	if err != nil {
		return classify(op, planner.OfferKey{}, err)
	}
	fleet, _, _, owned := providers.Owned(tagValues(got.Tags))
	switch {
	case !owned:
		return invalid(op, planner.OfferKey{}, "VM %s is not owned by gpufleet: it lacks the %s and %s tags", inst.ID, providers.TagFleet, providers.TagWorkload)
	case inst.Fleet != "" && fleet != inst.Fleet:
		return invalid(op, planner.OfferKey{}, "VM %s belongs to fleet %q, not %q", inst.ID, fleet, inst.Fleet)
	}
	return classify(op, planner.OfferKey{}, p.deleteVM(ctx, inst.ID))
}

// deleteVM deletes a VM by name and waits for the deletion; not found is
// success.
func (p *Provider) deleteVM(ctx context.Context, name string) error {
	poller, err := p.vms.BeginDelete(ctx, p.cfg.ResourceGroup, name, nil)
	if err == nil {
		_, err = poller.PollUntilDone(ctx, &runtime.PollUntilDoneOptions{Frequency: p.poll})
	}
	if isStatus(err, http.StatusNotFound) {
		return nil
	}
	return err
}
