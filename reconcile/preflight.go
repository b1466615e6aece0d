// SPDX-License-Identifier: Apache-2.0

package reconcile

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
)

// preflightLimit bounds the offers a dry run checks: one call each, and a
// plan of many offers has its refusals in the first few.
const preflightLimit = 20

// preflight asks the clouds that can check a launch without making it
// (providers.Preflighter) whether they would take the plan's creates, one
// check an offer, and adds a warning for each refusal to the plan: the
// permission, instance profile, image or network a dry run finds wrong is
// said before anyone merges, not when the apply fails. Only dry runs do
// it: an apply learns the same from its creates. A check that could not
// be made is logged, not warned of.
func (r *run) preflight(ctx context.Context) {
	var offers []planner.OfferKey
	for _, a := range r.report.Changes.Actions {
		if a.Kind == planner.Create && !slices.Contains(offers, a.Offer) {
			offers = append(offers, a.Offer)
		}
	}
	slices.SortFunc(offers, func(a, b planner.OfferKey) int { return cmp.Compare(a.String(), b.String()) })
	if len(offers) > preflightLimit {
		offers = offers[:preflightLimit]
	}
	// Offers refused for the same reason are one warning.
	refused := map[string][]string{}
	var reasons []string
	for _, offer := range offers {
		checker, ok := r.opts.Providers[offer.Cloud].(providers.Preflighter)
		if !ok {
			continue
		}
		err := checker.Preflight(ctx, offer)
		switch providers.KindOf(err) {
		case "":
			if err != nil {
				r.log.Warn("checking a launch", "offer", offer.String(), "err", err)
			}
			continue
		case providers.KindUnavailable, providers.KindThrottled:
			r.log.Warn("checking a launch", "offer", offer.String(), "err", err)
			continue
		}
		reason := refusal(err)
		if _, seen := refused[reason]; !seen {
			reasons = append(reasons, reason)
		}
		refused[reason] = append(refused[reason], offer.String())
	}
	for _, reason := range reasons {
		r.report.Plan.Warnings = append(r.report.Plan.Warnings,
			fmt.Sprintf("a launch on %s would be refused: %s", strings.Join(refused[reason], ", "), reason))
	}
}

// refusal is what a cloud said of a launch it would refuse, without the
// offer the warning names already.
func refusal(err error) string {
	var e *providers.Error
	if !errors.As(err, &e) {
		return err.Error()
	}
	msg := cmp.Or(e.Message, fmt.Sprint(e.Err))
	if e.Code != "" {
		return fmt.Sprintf("%s (%s)", msg, e.Code)
	}
	return msg
}
