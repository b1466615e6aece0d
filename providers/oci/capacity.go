// SPDX-License-Identifier: Apache-2.0

package oci

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/oracle/oci-go-sdk/v65/core"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
)

// limitsNotRead is Capacity's one warning about quotas, whatever else it
// reads.
const limitsNotRead = "oci: service limits are not read (gpufleet does not call OCI's Limits service): a launch over one is refused with LimitExceeded, which blocklists the region's offers of that GPU model"

// Capacity reads, for each configured region's zones, the catalog's shapes
// that the zone's availability domain offers (ListShapes). It reads no
// quotas, and says so once. A region or zone that cannot be read is left
// out, unknown, with a warning saying why; only a cancelled context fails
// the call.
func (p *Provider) Capacity(ctx context.Context) (providers.Capacity, error) {
	type regionCapacity struct {
		offerings []providers.ZoneOffering
		warnings  []string
	}
	perRegion := make([]regionCapacity, len(p.regions))
	var wg sync.WaitGroup
	for i, region := range p.regions {
		wg.Go(func() {
			perRegion[i].offerings, perRegion[i].warnings = p.regionOfferings(ctx, region)
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return providers.Capacity{}, fmt.Errorf("oci: reading capacity, %w", err)
	}
	out := providers.Capacity{Warnings: []string{limitsNotRead}}
	for _, r := range perRegion {
		out.Offerings = append(out.Offerings, r.offerings...)
		out.Warnings = append(out.Warnings, r.warnings...)
	}
	slices.SortFunc(out.Offerings, func(a, b providers.ZoneOffering) int { return cmp.Compare(a.Zone, b.Zone) })
	return out, nil
}

// regionOfferings are what a region's zones offer of the catalog's
// shapes, and warnings for those that could not be read.
func (p *Provider) regionOfferings(ctx context.Context, region string) ([]providers.ZoneOffering, []string) {
	r, ok := p.cat.Region(Name, region)
	if !ok {
		return nil, []string{fmt.Sprintf("oci: region %s is not in the catalog, so its offerings are not read", region)}
	}
	ads, err := p.availabilityDomains(ctx, "capacity", planner.OfferKey{}, region)
	if err != nil {
		return nil, []string{fmt.Sprintf("oci: region %s's availability domains not read, so none of its zones' offerings are known: %v%s", region, err, p.denial(err))}
	}
	var out []providers.ZoneOffering
	var warnings []string
	for _, zone := range r.Zones {
		ad, ok := adNamed(ads, zone)
		if !ok {
			warnings = append(warnings, fmt.Sprintf("oci: zone %s of region %s is none of the tenancy's availability domains there, so its offerings are not known", zone, region))
			continue
		}
		shapes, err := p.shapes(ctx, "capacity", planner.OfferKey{}, region, ad)
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("oci: the shapes of %s not read, so its offerings are not known: %v%s", zone, err, p.denial(err)))
			continue
		}
		offering := providers.ZoneOffering{Zone: zone, Types: []string{}}
		for _, o := range p.cat.Offers {
			if o.Cloud == Name && o.Region == region && (o.Zone == zone || o.Zone == "") && shapes[o.InstanceType] && !slices.Contains(offering.Types, o.InstanceType) {
				offering.Types = append(offering.Types, o.InstanceType)
			}
		}
		slices.Sort(offering.Types)
		out = append(out, offering)
	}
	return out, warnings
}

// denial is what a warning adds for a read OCI refused: OCI answers a
// missing permission as it answers a missing resource.
func (p *Provider) denial(err error) string {
	switch providers.KindOf(err) {
	case providers.KindAuth, providers.KindNotFound:
		return fmt.Sprintf(" (the user's IAM policies may not cover instance-family in compartment %s)", p.cfg.Compartment)
	}
	return ""
}

// shapes are the shapes availability domain ad offers the compartment,
// every page of them.
func (p *Provider) shapes(ctx context.Context, op string, offer planner.OfferKey, region, ad string) (map[string]bool, error) {
	c, err := p.client(op, offer, region)
	if err != nil {
		return nil, err
	}
	req := core.ListShapesRequest{CompartmentId: &p.cfg.Compartment, AvailabilityDomain: &ad}
	out := map[string]bool{}
	seen := map[string]bool{}
	for {
		callCtx, md := p.call(ctx)
		req.RequestMetadata = md
		resp, err := c.compute.ListShapes(callCtx, req)
		if err != nil {
			return nil, p.classify(op, offer, err)
		}
		for _, s := range resp.Items {
			if s.Shape != nil {
				out[*s.Shape] = true
			}
		}
		next := resp.OpcNextPage
		if next == nil || *next == "" {
			return out, nil
		}
		if seen[*next] {
			return nil, &providers.Error{Kind: providers.KindUnavailable, Cloud: Name, Op: op, Offer: offer,
				Message: fmt.Sprintf("ListShapes in %s answered page %q twice", ad, *next)}
		}
		seen[*next] = true
		req.Page = next
	}
}
