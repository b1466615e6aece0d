// SPDX-License-Identifier: Apache-2.0

package reconcile

import (
	"context"
	"fmt"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// zoneGang reports whether a workload is a zone gang, whose nodes share a
// placement group.
func (r *run) zoneGang(fleet, workload string) bool {
	w := r.spec(fleet, workload)
	return w != nil && w.Placement.Gang == "zone"
}

// efaOf is how many Elastic Fabric Adapters a workload's node on an offer
// gets: as many as the type takes, when the workload asks for EFA.
func (r *run) efaOf(fleet, workload string, offer planner.OfferKey) int {
	if w := r.spec(fleet, workload); w != nil && w.EFA && offer.Cloud == catalog.AWS {
		return catalog.EFAInterfaces(offer.InstanceType)
	}
	return 0
}

// placementGroups is what a run knows of placement groups, under run.mu.
type placementGroups struct {
	// ensured is the name of each group made sure of this run.
	ensured map[gangZone]string
	// listed is each cloud's owned groups, read once a run when a gang
	// first needs one.
	listed map[string][]providers.PlacementGroup
}

// gangZone is whose group it is: a gang's, in a zone of a cloud.
type gangZone struct{ cloud, fleet, workload, zone string }

// placementGroup makes sure the placement group a zone gang's nodes in a
// zone are launched into exists, once a run, and returns its name; "" for
// a workload that needs none or a cloud that has none. A group its tags
// say is the gang's, made under the name an earlier version gave, stays
// its group: the nodes launched now join the ones already in it, rather
// than a second group beside them.
func (r *run) placementGroup(ctx context.Context, fleet, workload string, offer planner.OfferKey) (string, error) {
	pg, ok := r.opts.Providers[offer.Cloud].(providers.PlacementGrouper)
	if !ok || !r.zoneGang(fleet, workload) {
		return "", nil
	}
	key := gangZone{offer.Cloud, fleet, workload, offer.Zone}
	r.mu.Lock()
	name, done := r.groups.ensured[key]
	r.mu.Unlock()
	if done {
		return name, nil
	}
	g := providers.PlacementGroup{Name: providers.PlacementGroupName(fleet, workload, offer.Zone), Region: offer.Region, Zone: offer.Zone, Fleet: fleet, Workload: workload}
	existing, err := r.listPlacementGroups(ctx, offer.Cloud, pg)
	if err != nil {
		// Made under a new name, the group could split a gang whose
		// nodes are in one of an older name.
		return "", fmt.Errorf("placement group %s: %w", g.Name, err)
	}
	for _, e := range existing {
		if e.Fleet == fleet && e.Workload == workload && e.Zone == offer.Zone && e.Region == offer.Region &&
			e.Name != g.Name && providers.IsPlacementGroupName(e.Name, fleet, workload, offer.Zone) {
			g.Name = e.Name
			break
		}
	}
	if err := pg.EnsurePlacementGroup(ctx, g); err != nil {
		return "", fmt.Errorf("placement group %s: %w", g.Name, err)
	}
	r.mu.Lock()
	if r.groups.ensured == nil {
		r.groups.ensured = map[gangZone]string{}
	}
	r.groups.ensured[key] = g.Name
	r.mu.Unlock()
	r.log.Info("placement group ready", "cloud", offer.Cloud, "group", g.Name, "zone", g.Zone)
	return g.Name, nil
}

// listPlacementGroups is a cloud's owned groups, listed once a run.
func (r *run) listPlacementGroups(ctx context.Context, cloud string, pg providers.PlacementGrouper) ([]providers.PlacementGroup, error) {
	r.mu.Lock()
	list, ok := r.groups.listed[cloud]
	r.mu.Unlock()
	if ok {
		return list, nil
	}
	list, err := pg.PlacementGroups(ctx)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	if r.groups.listed == nil {
		r.groups.listed = map[string][]providers.PlacementGroup{}
	}
	r.groups.listed[cloud] = list
	r.mu.Unlock()
	return list, nil
}

// prunePlacementGroups removes gpufleet's placement groups that no node of
// their workload is in any more and that the plan does not fill. A group
// is its gang's by its tags, whatever name gpufleet gave it, so one of an
// older name is kept while its gang has nodes in its zone and removed
// after, as any other. A group that cannot be removed now is left for a
// later run, with a warning: it costs nothing.
func (r *run) prunePlacementGroups(ctx context.Context) {
	wanted := map[gangZone]bool{}
	for _, f := range r.report.Plan.Fleets {
		for _, w := range f.Workloads {
			for _, pl := range w.Placements {
				wanted[gangZone{pl.Offer.Cloud, f.Name, w.Name, pl.Offer.Zone}] = true
			}
		}
	}
	r.mu.Lock()
	for _, inst := range r.observed {
		wanted[gangZone{inst.Cloud, inst.Fleet, inst.Workload, inst.Zone}] = true
	}
	r.mu.Unlock()
	for _, cloud := range r.repo.Config.Clouds.Enabled() {
		pg, ok := r.opts.Providers[cloud].(providers.PlacementGrouper)
		if !ok {
			continue
		}
		groups, err := pg.PlacementGroups(ctx)
		if err != nil {
			r.log.Warn("could not list placement groups; none removed", "cloud", cloud, "err", err)
			continue
		}
		for _, g := range groups {
			if keepGroup(wanted, cloud, g) {
				continue
			}
			if err := pg.DeletePlacementGroup(ctx, g); err != nil {
				r.log.Warn("could not remove an empty placement group; a later run tries again", "cloud", cloud, "group", g.Name, "err", err)
				continue
			}
			r.log.Info("removed an empty placement group", "cloud", cloud, "group", g.Name)
		}
	}
}

// keepGroup reports whether a gang the plan fills or nodes run in owns g.
// A group whose zone tag was lost is known by its name, which gpufleet
// derives from the zone.
func keepGroup(wanted map[gangZone]bool, cloud string, g providers.PlacementGroup) bool {
	if g.Zone != "" {
		return wanted[gangZone{cloud, g.Fleet, g.Workload, g.Zone}]
	}
	for w := range wanted {
		if w.cloud == cloud && w.fleet == g.Fleet && w.workload == g.Workload && providers.IsPlacementGroupName(g.Name, w.fleet, w.workload, w.zone) {
			return true
		}
	}
	return false
}
