// SPDX-License-Identifier: Apache-2.0

package oci

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/oracle/oci-go-sdk/v65/identity"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
)

// zoneOf is the catalog's zone of an availability domain: its name after
// the tenancy's prefix (PHX-AD-1 of Uocm:PHX-AD-1), which is the same in
// every tenancy, where the prefix is not.
func zoneOf(ad string) string {
	if _, zone, ok := strings.Cut(ad, ":"); ok {
		return zone
	}
	return ad
}

// adNamed is the availability domain of ads that is the catalog's zone,
// by name.
func adNamed(ads []identity.AvailabilityDomain, zone string) (string, bool) {
	for _, ad := range ads {
		if ad.Name != nil && strings.EqualFold(zoneOf(*ad.Name), zone) {
			return *ad.Name, true
		}
	}
	return "", false
}

// availabilityDomains are a region's availability domains, read once.
func (p *Provider) availabilityDomains(ctx context.Context, op string, offer planner.OfferKey, region string) ([]identity.AvailabilityDomain, error) {
	c, err := p.client(op, offer, region)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ads != nil {
		return c.ads, nil
	}
	callCtx, md := p.call(ctx)
	resp, err := c.identity.ListAvailabilityDomains(callCtx, identity.ListAvailabilityDomainsRequest{
		CompartmentId:   &p.cfg.Compartment,
		RequestMetadata: md,
	})
	if err != nil {
		return nil, p.classify(op, offer, err)
	}
	if len(resp.Items) == 0 {
		return nil, &providers.Error{Kind: providers.KindUnavailable, Cloud: Name, Op: op, Offer: offer,
			Message: fmt.Sprintf("OCI lists no availability domains in %s", region)}
	}
	c.ads = resp.Items
	return c.ads, nil
}

// adOf is the availability domain of an offer's zone, by its name in the
// tenancy. A zone that is none of the region's is an invalid error.
func (p *Provider) adOf(ctx context.Context, op string, offer planner.OfferKey) (string, error) {
	ads, err := p.availabilityDomains(ctx, op, offer, offer.Region)
	if err != nil {
		return "", err
	}
	if name, ok := adNamed(ads, offer.Zone); ok {
		return name, nil
	}
	var zones []string
	for _, ad := range ads {
		if ad.Name != nil {
			zones = append(zones, zoneOf(*ad.Name))
		}
	}
	slices.Sort(zones)
	return "", &providers.Error{Kind: providers.KindInvalid, Cloud: Name, Op: op, Offer: offer,
		Message: fmt.Sprintf("zone %q is none of region %s's availability domains (%s)", offer.Zone, offer.Region, strings.Join(zones, ", "))}
}
