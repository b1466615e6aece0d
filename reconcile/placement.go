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

// placementGroup makes sure the placement group a zone gang's nodes in a
// zone are launched into exists, once a run, and returns its name; "" for
// a workload that needs none or a cloud that has none.
func (r *run) placementGroup(ctx context.Context, fleet, workload string, offer planner.OfferKey) (string, error) {
	pg, ok := r.opts.Providers[offer.Cloud].(providers.PlacementGrouper)
	if !ok || !r.zoneGang(fleet, workload) {
		return "", nil
	}
	g := providers.PlacementGroup{Name: providers.PlacementGroupName(fleet, workload, offer.Zone), Region: offer.Region, Zone: offer.Zone, Fleet: fleet, Workload: workload}
	r.mu.Lock()
	done := r.groups[offer.Cloud+"/"+g.Name]
	r.mu.Unlock()
	if done {
		return g.Name, nil
	}
	if err := pg.EnsurePlacementGroup(ctx, g); err != nil {
		return "", fmt.Errorf("placement group %s: %w", g.Name, err)
	}
	r.mu.Lock()
	if r.groups == nil {
		r.groups = map[string]bool{}
	}
	r.groups[offer.Cloud+"/"+g.Name] = true
	r.mu.Unlock()
	r.log.Info("placement group ready", "cloud", offer.Cloud, "group", g.Name, "zone", g.Zone)
	return g.Name, nil
}

// prunePlacementGroups removes gpufleet's placement groups that no node of
// their workload is in any more and that the plan does not fill. A group
// that cannot be removed now is left for a later run, with a warning: it
// costs nothing.
func (r *run) prunePlacementGroups(ctx context.Context) {
	wanted := map[string]bool{}
	for _, f := range r.report.Plan.Fleets {
		for _, w := range f.Workloads {
			for _, pl := range w.Placements {
				wanted[pl.Offer.Cloud+"/"+providers.PlacementGroupName(f.Name, w.Name, pl.Offer.Zone)] = true
			}
		}
	}
	r.mu.Lock()
	for _, inst := range r.observed {
		wanted[inst.Cloud+"/"+providers.PlacementGroupName(inst.Fleet, inst.Workload, inst.Zone)] = true
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
			if wanted[cloud+"/"+g.Name] {
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
