// SPDX-License-Identifier: Apache-2.0

package azure

import (
	"context"
	"net/http"
	"regexp"
	"slices"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
)

// A zone gang's placement group is an Azure proximity placement group in
// the provider's resource group, pinned to the gang's zone.

var _ providers.PlacementGrouper = (*Provider)(nil)

// tagZone names the catalog zone a placement group was made for, so a
// listing gives the zone back as the catalog spells it.
const tagZone = "gpufleet-zone"

// placementGroupName is what providers.PlacementGroupName gives; anything
// else would not be a name of gpufleet's, and could not sit in a
// resource id unescaped.
var placementGroupName = regexp.MustCompile(`^[a-z][a-z0-9-]{0,62}$`)

// ppgID is the resource id of a placement group in the resource group, as
// a VM's proximityPlacementGroup names it.
func (p *Provider) ppgID(name string) string {
	return "/subscriptions/" + p.cfg.Subscription + "/resourceGroups/" + p.cfg.ResourceGroup +
		"/providers/Microsoft.Compute/proximityPlacementGroups/" + name
}

// EnsurePlacementGroup creates the group's proximity placement group
// unless gpufleet made it already. One of that name without gpufleet's
// tags for the group's fleet and workload is someone else's, and is
// refused rather than taken over.
func (p *Provider) EnsurePlacementGroup(ctx context.Context, g providers.PlacementGroup) error {
	const op = "ensurePlacementGroup"
	zone, err := p.checkGroup(op, g)
	if err != nil {
		return err
	}
	got, err := p.ppgs.Get(ctx, p.cfg.ResourceGroup, g.Name, nil)
	switch {
	case err == nil:
		return p.accept(op, g, &got.ProximityPlacementGroup)
	case !isStatus(err, http.StatusNotFound):
		return classify(op, planner.OfferKey{}, err)
	}
	ppg := armcompute.ProximityPlacementGroup{
		Location: to.Ptr(g.Region),
		Zones:    []*string{to.Ptr(zone)},
		Properties: &armcompute.ProximityPlacementGroupProperties{
			ProximityPlacementGroupType: to.Ptr(armcompute.ProximityPlacementGroupTypeStandard),
		},
		Tags: map[string]*string{
			providers.TagFleet:    to.Ptr(g.Fleet),
			providers.TagWorkload: to.Ptr(g.Workload),
			tagZone:               to.Ptr(g.Zone),
		},
	}
	// A PUT of an existing name replaces that group's tags. If-None-Match
	// keeps one made by someone else since the read from being taken
	// over: it is refused, and read again.
	put := policy.WithHTTPHeader(ctx, http.Header{"If-None-Match": []string{"*"}})
	_, err = p.ppgs.CreateOrUpdate(put, p.cfg.ResourceGroup, g.Name, ppg, nil)
	if isStatus(err, http.StatusPreconditionFailed) {
		got, err := p.ppgs.Get(ctx, p.cfg.ResourceGroup, g.Name, nil)
		if err != nil {
			return classify(op, planner.OfferKey{}, err)
		}
		return p.accept(op, g, &got.ProximityPlacementGroup)
	}
	return classify(op, planner.OfferKey{}, err)
}

// accept answers an ensure that found the group's name taken: by gpufleet
// for this group, which is success, or by anything else.
func (p *Provider) accept(op string, g providers.PlacementGroup, ppg *armcompute.ProximityPlacementGroup) error {
	tags := tagValues(ppg.Tags)
	fleet, workload := tags[providers.TagFleet], tags[providers.TagWorkload]
	switch {
	case fleet == "" || workload == "":
		return invalid(op, planner.OfferKey{}, "proximity placement group %s exists and is not gpufleet's: it lacks the %s and %s tags", g.Name, providers.TagFleet, providers.TagWorkload)
	case fleet != g.Fleet || workload != g.Workload:
		return invalid(op, planner.OfferKey{}, "proximity placement group %s belongs to fleet %q workload %q, not %q %q", g.Name, fleet, workload, g.Fleet, g.Workload)
	case normalizeLocation(deref(ppg.Location)) != g.Region:
		return invalid(op, planner.OfferKey{}, "proximity placement group %s is in %s, not %s", g.Name, normalizeLocation(deref(ppg.Location)), g.Region)
	}
	return nil
}

// checkGroup refuses a group the provider cannot make, and returns its
// zone as ARM names it.
func (p *Provider) checkGroup(op string, g providers.PlacementGroup) (string, error) {
	switch {
	case g.Fleet == "" || g.Workload == "" || g.Zone == "":
		return "", invalid(op, planner.OfferKey{}, "a placement group needs a fleet, a workload and a zone")
	case !providers.IsPlacementGroupName(g.Name, g.Fleet, g.Workload, g.Zone):
		return "", invalid(op, planner.OfferKey{}, "placement group %q is not named %q, the name of fleet %s workload %s in zone %s",
			g.Name, providers.PlacementGroupName(g.Fleet, g.Workload, g.Zone), g.Fleet, g.Workload, g.Zone)
	case !slices.Contains(p.regions, g.Region):
		return "", invalid(op, planner.OfferKey{}, "region %s is not one of the configured regions %v", g.Region, p.regions)
	}
	zone, ok := armZone(planner.OfferKey{Region: g.Region, Zone: g.Zone})
	if !ok {
		return "", invalid(op, planner.OfferKey{}, "zone %q is not a zone of %s (want %s-<n>)", g.Zone, g.Region, g.Region)
	}
	return zone, nil
}

// PlacementGroups lists gpufleet's proximity placement groups in the
// resource group, in the configured regions.
func (p *Provider) PlacementGroups(ctx context.Context) ([]providers.PlacementGroup, error) {
	pager := p.ppgs.NewListByResourceGroupPager(p.cfg.ResourceGroup, nil)
	var out []providers.PlacementGroup
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return nil, classify("placementGroups", planner.OfferKey{}, err)
		}
		for _, ppg := range page.Value {
			if g, ok := p.groupOf(ppg); ok {
				out = append(out, g)
			}
		}
	}
	slices.SortFunc(out, func(a, b providers.PlacementGroup) int {
		return strings.Compare(a.Region+"\x00"+a.Name, b.Region+"\x00"+b.Name)
	})
	return out, nil
}

// groupOf reads an owned proximity placement group in a configured region.
func (p *Provider) groupOf(ppg *armcompute.ProximityPlacementGroup) (providers.PlacementGroup, bool) {
	if ppg == nil || !p.configured(deref(ppg.Location)) {
		return providers.PlacementGroup{}, false
	}
	tags := tagValues(ppg.Tags)
	g := providers.PlacementGroup{
		Name:     deref(ppg.Name),
		Region:   normalizeLocation(deref(ppg.Location)),
		Zone:     tags[tagZone],
		Fleet:    tags[providers.TagFleet],
		Workload: tags[providers.TagWorkload],
	}
	if g.Fleet == "" || g.Workload == "" {
		return providers.PlacementGroup{}, false
	}
	if g.Zone == "" && len(ppg.Zones) == 1 && deref(ppg.Zones[0]) != "" {
		// A lost zone tag: the group's zone says the same.
		g.Zone = g.Region + "-" + deref(ppg.Zones[0])
	}
	return g, true
}

// DeletePlacementGroup deletes an owned proximity placement group. ARM
// refuses while a VM is still in it; that refusal is returned, and a
// later run tries again once the VMs are gone.
func (p *Provider) DeletePlacementGroup(ctx context.Context, g providers.PlacementGroup) error {
	const op = "deletePlacementGroup"
	if !placementGroupName.MatchString(g.Name) {
		return invalid(op, planner.OfferKey{}, "placement group %q is not a gpufleet placement group name", g.Name)
	}
	got, err := p.ppgs.Get(ctx, p.cfg.ResourceGroup, g.Name, nil)
	if isStatus(err, http.StatusNotFound) {
		return nil
	}
	if err != nil {
		return classify(op, planner.OfferKey{}, err)
	}
	fleet, workload := tagValues(got.Tags)[providers.TagFleet], tagValues(got.Tags)[providers.TagWorkload]
	switch {
	case fleet == "" || workload == "":
		return invalid(op, planner.OfferKey{}, "proximity placement group %s is not owned by gpufleet: it lacks the %s and %s tags", g.Name, providers.TagFleet, providers.TagWorkload)
	case g.Fleet != "" && fleet != g.Fleet:
		return invalid(op, planner.OfferKey{}, "proximity placement group %s belongs to fleet %q, not %q", g.Name, fleet, g.Fleet)
	}
	_, err = p.ppgs.Delete(ctx, p.cfg.ResourceGroup, g.Name, nil)
	// Gone meanwhile is success. So is 204: Compute answers it to deletes
	// of other resources already gone (availability sets, SSH keys), and
	// this client takes only 200.
	if isStatus(err, http.StatusNotFound) || isStatus(err, http.StatusNoContent) {
		return nil
	}
	return classify(op, planner.OfferKey{}, err)
}
