// SPDX-License-Identifier: Apache-2.0

package reconcile

import (
	"slices"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/reconcile/status"
	"github.com/gpufleet/gpufleet/schema"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// OfflineInput is what a plan made without the clouds is made of: the
// specs, the catalog's prices, what runs, and what the status files say of
// the offers.
type OfflineInput struct {
	Repo     *schema.Repo
	Catalog  *catalog.Catalog
	Observed []planner.Instance
	// Status is the repository's status as the last run left it: offers
	// blocked or capped, quotas, retired tokens. Nil for none.
	Status *status.Snapshot
	// Warnings open the plan's own.
	Warnings []string
	// ObservedFrom says how old Observed is, when it is the status's.
	ObservedFrom *planner.ObservedState
}

// PlanOffline plans a repository as `gpufleet plan` does, contacting no
// cloud. Apply makes the same plan again from the same inputs to check
// that a saved plan's actions are the ones its specs give.
func PlanOffline(in OfflineInput) (*planner.Report, error) {
	pin := planner.NewInput(in.Repo, in.Catalog)
	opts := planner.DiffOptions{
		Revision: planner.SpecRevisions(in.Repo.Fleets),
		Budgets:  planner.Budgets(in.Repo.Fleets, in.Repo.Config.Defaults, in.Observed),
		Prune:    in.Repo.Config.Defaults.Prune,
	}
	pin.Observed = in.Observed
	if s := in.Status; s != nil {
		pin.Blocked, pin.Learned, pin.Quotas, pin.Start = s.Blocked, s.Learned, s.Quotas, s.Start
		opts.Retired = s.Retired
	}
	if err := planner.CheckPrices(pin.Offers, in.Repo.Config.Clouds.Enabled(), in.Catalog.Source); err != nil {
		return nil, err
	}
	plan, err := planner.Solve(pin)
	if err != nil {
		return nil, err
	}
	plan.Warnings = append(slices.Clone(in.Warnings), plan.Warnings...)
	report := planner.NewReport(plan, planner.Diff(plan, in.Observed, opts))
	if w := secretsWarning(in.Repo, report.Changes.Actions, envSecret); w != "" {
		report.Plan.Warnings = append(report.Plan.Warnings, w)
	}
	for _, fl := range in.Repo.Fleets {
		if fl.Suspended {
			report.Suspended = append(report.Suspended, fl.Name)
		}
	}
	slices.Sort(report.Suspended)
	report.Observed = in.ObservedFrom
	if in.Status != nil && len(in.Status.Blocklist) > 0 {
		report.Blocklist = in.Status.Blocklist
	}
	return report, nil
}
