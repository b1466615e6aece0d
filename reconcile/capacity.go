// SPDX-License-Identifier: Apache-2.0

package reconcile

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"golang.org/x/sync/errgroup"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
)

// readCapacity asks each enabled cloud for its quotas and zone offerings.
// What a cloud cannot say is planned without, as before, and said in the
// plan's warnings; only a cancelled run stops here.
func (r *run) readCapacity(ctx context.Context) error {
	clouds := r.repo.Config.Clouds.Enabled()
	read := make([]providers.Capacity, len(clouds))
	g, gctx := errgroup.WithContext(ctx)
	for i, cloud := range clouds {
		g.Go(func() error {
			c, err := r.opts.Providers[cloud].Capacity(gctx)
			if err != nil {
				return fmt.Errorf("reading the quotas of %s, %w", cloud, err)
			}
			read[i] = c
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	r.quotas, r.capacityWarnings = nil, nil
	offered := map[[2]string][]string{} // by cloud and zone
	for i, cloud := range clouds {
		r.quotas = append(r.quotas, read[i].Quotas...)
		for _, z := range read[i].Offerings {
			offered[[2]string{cloud, z.Zone}] = z.Types
		}
		for _, w := range read[i].Warnings {
			r.capacityWarnings = append(r.capacityWarnings, cloud+": "+w)
			r.log.Warn("capacity read incomplete", "cloud", cloud, "warning", w)
		}
	}
	slices.SortFunc(r.quotas, func(a, b planner.Quota) int {
		return cmp.Or(cmp.Compare(a.Cloud, b.Cloud), cmp.Compare(a.Region, b.Region), cmp.Compare(a.Name, b.Name))
	})
	r.quotaOthers = make([]int64, len(r.quotas))
	for i, q := range r.quotas {
		r.quotaOthers[i] = planner.UsedUnknown
		if q.Used != planner.UsedUnknown {
			r.quotaOthers[i] = max(0, q.Used-q.UseOf(r.offers, r.observed))
		}
	}
	// A zone the cloud answered for offers what it listed, and nothing
	// else; of a zone it did not answer for, nothing is known.
	for i := range r.offers {
		o := &r.offers[i]
		if types, ok := offered[[2]string{o.Cloud, o.Zone}]; ok && !slices.Contains(types, o.InstanceType) {
			o.NotOffered = true
		}
	}
	return nil
}

// quotasNow is the quotas read, with their use as it stands once the run
// applied its changes: what others used when read, and what gpufleet runs
// now. The status keeps them, so that a plan made from it (a pull
// request's) plans within the same limits.
func (r *run) quotasNow() []planner.Quota {
	out := slices.Clone(r.quotas)
	for i := range out {
		if r.quotaOthers[i] != planner.UsedUnknown {
			out[i].Used = r.quotaOthers[i] + out[i].UseOf(r.offers, r.observed)
		}
	}
	return out
}
