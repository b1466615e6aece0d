// SPDX-License-Identifier: Apache-2.0

package gcp

import (
	"context"
	"fmt"
	"slices"

	"cloud.google.com/go/compute/apiv1/computepb"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// codeNotInZone is the code gpufleet gives an insert GCE refused because
// the zone has no such machine type. GCE answers it as any invalid field
// (400, reason invalid); the planner must see it as the offer not
// existing there, a stock-out that lasts, so the run fails over to
// another zone rather than reporting a broken request.
const codeNotInZone = "machineTypeNotInZone"

// insertError classifies a refused insert. An invalid insert of a type
// the catalog sells in the region is checked against the zone's machine
// types: when the zone has none of that name, the type is not sold
// there. GCE answers a name it has nowhere the same way, so a type the
// catalog does not know stays an invalid request. A check that fails
// itself leaves the refusal as GCE gave it.
func (p *Provider) insertError(ctx context.Context, err error, o planner.OfferKey) *providers.Error {
	e := withOffer(classify("create", err), o)
	if e.Kind != providers.KindInvalid || !p.sellsInRegion(o) {
		return e
	}
	_, gerr := p.machineTypes.Get(ctx, &computepb.GetMachineTypeRequest{Project: p.cfg.Project, Zone: o.Zone, MachineType: o.InstanceType}, p.callOptions()...)
	if gerr == nil || classify("create", gerr).Kind != providers.KindNotFound {
		return e
	}
	return &providers.Error{Kind: providers.KindCapacity, Cloud: Name, Op: "create", Offer: o, Code: codeNotInZone,
		Message: fmt.Sprintf("zone %s does not offer machine type %s: %s", o.Zone, o.InstanceType, e.Message), Err: err}
}

// sellsInRegion reports whether the catalog has the offer's type in its
// region, in any zone.
func (p *Provider) sellsInRegion(o planner.OfferKey) bool {
	return slices.ContainsFunc(p.cat.Offers, func(c catalog.Offer) bool {
		return c.Cloud == Name && c.Region == o.Region && c.InstanceType == o.InstanceType
	})
}
