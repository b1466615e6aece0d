// SPDX-License-Identifier: Apache-2.0

package oci

import (
	"context"
	"fmt"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
)

// Preflight checks what a launch on offer would be refused for without
// launching, as OCI has no dry run: the offer and the region's
// configuration, that the zone is one of the tenancy's availability
// domains, and that the domain offers the shape. Whether it has room, and
// whether the user may launch, are not checked.
func (p *Provider) Preflight(ctx context.Context, offer planner.OfferKey) error {
	if err := p.checkOffer("preflight", offer); err != nil {
		return err
	}
	ad, err := p.adOf(ctx, "preflight", offer)
	if err != nil {
		return err
	}
	shapes, err := p.shapes(ctx, "preflight", offer, offer.Region, ad)
	if err != nil {
		return err
	}
	if !shapes[offer.InstanceType] {
		return &providers.Error{Kind: providers.KindCapacity, Cloud: Name, Op: "preflight", Offer: offer,
			Message: fmt.Sprintf("availability domain %s does not offer shape %s", ad, offer.InstanceType)}
	}
	return nil
}
