// SPDX-License-Identifier: Apache-2.0

package planner

import (
	"slices"
	"time"
)

// Report is a plan with the changes it asks for, as the plan command and
// pull-request comments show it.
type Report struct {
	Plan    *Plan   `json:"plan"`
	Changes Changes `json:"changes"`
	// CurrentMicros is what the owned instances cost now, per hour: the
	// plan's NowMicros.
	CurrentMicros int64 `json:"currentMicros"`
	// Suspended names the fleets the specs suspend: planned, but nothing
	// of theirs is applied, so what they lack is not news.
	Suspended []string `json:"suspended,omitempty"`
	// Blocklist is, by fleet, the blocklist entries in force on offers its
	// workloads could use, so that a shortfall can say when they come
	// back. The planner has no clock: whoever read the blocklist fills it
	// in.
	Blocklist map[string][]BlockedOffer `json:"blocklist,omitempty"`
	// Observed says, for a plan made from the committed status rather
	// than the clouds, how old its view of what runs is.
	Observed *ObservedState `json:"observed,omitempty"`
}

// BlockedOffer is a blocklist entry as a report gives it: an offer that
// takes no new node, or none beyond what it held, until a time.
type BlockedOffer struct {
	Offer OfferKey  `json:"offer"`
	Until time.Time `json:"until"`
}

// NewReport is a plan with its changes.
func NewReport(plan *Plan, changes Changes) *Report {
	return &Report{Plan: plan, Changes: changes, CurrentMicros: plan.NowMicros}
}

// Only is the report narrowed to some fleets, for a plan asked about them
// alone: their placements, their actions, and the costs summed over them.
// The placement itself is unchanged: it was made for every fleet, which
// share capacity, quotas and budgets.
func (r *Report) Only(fleets []string) *Report {
	keep := func(fleet string) bool { return slices.Contains(fleets, fleet) }
	plan := *r.Plan
	plan.Fleets = nil
	plan.CostMicros, plan.NowMicros, plan.BaselineMicros = 0, 0, 0
	for _, f := range r.Plan.Fleets {
		if keep(f.Name) {
			plan.Fleets = append(plan.Fleets, f)
			plan.CostMicros += f.CostMicros
			plan.NowMicros += f.NowMicros
			plan.BaselineMicros += f.BaselineMicros
		}
	}
	out := *r
	out.Plan = &plan
	out.CurrentMicros = plan.NowMicros
	out.Changes = Changes{Refusal: r.Changes.Refusal, Deferral: r.Changes.Deferral}
	for _, a := range r.Changes.Actions {
		if keep(a.Fleet) {
			out.Changes.Actions = append(out.Changes.Actions, a)
		}
	}
	for _, a := range r.Changes.Refused {
		if keep(a.Fleet) {
			out.Changes.Refused = append(out.Changes.Refused, a)
		}
	}
	for _, a := range r.Changes.Deferred {
		if keep(a.Fleet) {
			out.Changes.Deferred = append(out.Changes.Deferred, a)
		}
	}
	for _, o := range r.Changes.Orphans {
		if keep(o.Fleet) {
			out.Changes.Orphans = append(out.Changes.Orphans, o)
		}
	}
	if out.Changes.Actions == nil {
		out.Changes.Actions = []Action{}
	}
	return &out
}
