// SPDX-License-Identifier: Apache-2.0

package planner

import (
	"time"

	"github.com/gpufleet/gpufleet/schema"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// PlanVersion is the format version of a Plan in JSON.
const PlanVersion = 1

// Input is everything a plan depends on. The caller filters out blocklist
// entries that have expired: the planner has no clock.
type Input struct {
	Fleets       []schema.Fleet
	Defaults     schema.Defaults
	Reservations []schema.Reservation
	// Offers the fleets may use, for the enabled clouds and configured
	// regions only.
	Offers []Offer
	// Observed is what gpufleet owns in the clouds now.
	Observed []Instance
	// Blocked offers recently ran out of capacity or preempted a node.
	Blocked []OfferKey
	Egress  []catalog.Egress
	Prices  PriceInfo
	// Learned is what offers that ran out of capacity held then: each has
	// room for that many nodes, less what runs there now, until the entry
	// expires (the caller keeps only those in force).
	Learned map[OfferKey]int
	// Quotas are the clouds' limits the offers count against (Offer.Quotas);
	// a quota an offer names that is not here is not known, and not
	// planned against.
	Quotas []Quota
	// Bootstraps are, per workload ("fleet/workload"), the first-boot
	// files its nodes run on each cloud (see Bootstraps). A live node with
	// another is outdated: replaced when its workload is movable.
	Bootstraps map[string][]Bootstrap
	// Start is where the last plan put each workload's nodes, keyed
	// "fleet/workload", as the status in Git records them. The solve starts
	// from them where they still fit, which after a few prices moved finds
	// the optimum in a fraction of the work. It never changes what the plan
	// is worth, only, among plans worth the same, which one is found.
	Start map[string][]Placement
	// noRaise marks the solve that prices a quota raise, which asks for no
	// raises of its own.
	noRaise bool
}

// PriceInfo says where a plan's prices came from.
type PriceInfo struct {
	Source string    `json:"source"`
	AsOf   time.Time `json:"asOf"`
}

// Plan is where every node of every fleet should run, what that costs, and
// why.
type Plan struct {
	Version int       `json:"version"`
	Prices  PriceInfo `json:"prices"`
	// Optimal is true when the plan is proven best: the most nodes placed,
	// priority by priority, and at that the lowest cost. Otherwise GapNodes
	// bounds how many more nodes the best plan might place, and, where it
	// places no more, GapMicros how much less it might cost.
	Optimal   bool  `json:"optimal"`
	GapMicros int64 `json:"gapMicros"`
	GapNodes  int64 `json:"gapNodes,omitempty"`
	// CostMicros is the hourly cost of every placed node plus egress.
	CostMicros int64 `json:"costMicros"`
	// NowMicros is what the live instances cost per hour now, by the same
	// rule: a node the plan keeps costs what it costs in the plan; one it
	// lets go costs its offer's price and its workload's egress; an
	// instance of no workload in the specs, its price.
	NowMicros int64 `json:"nowMicros"`
	// BaselineMicros is the cheapest single-hyperscaler on-demand placement
	// of the same nodes, ignoring capacity (FleetPlan.BaselineMicros, summed).
	BaselineMicros int64       `json:"baselineMicros"`
	Fleets         []FleetPlan `json:"fleets"`
	// Quotas are the cloud quotas the plan uses or finds full, and what it
	// uses of them; a full one that holds the plan back carries the raise
	// to ask for.
	Quotas   []QuotaReport `json:"quotas,omitempty"`
	Warnings []string      `json:"warnings,omitempty"`
	Stats    SolveStats    `json:"stats"`
}

// SolveStats describes the work behind a plan.
type SolveStats struct {
	Workloads  int `json:"workloads"`
	Offers     int `json:"offers"`
	Components int `json:"components"`
	Solves     int `json:"solves"`
	// Warm counts the solves that started from the last plan's
	// placements (Input.Start) rather than from nothing.
	Warm int `json:"warm,omitempty"`
}

// FleetPlan is one fleet's share of a plan.
type FleetPlan struct {
	Name           string         `json:"name"`
	Owner          string         `json:"owner"`
	BudgetMicros   *int64         `json:"budgetMicros,omitempty"`
	CostMicros     int64          `json:"costMicros"`
	NowMicros      int64          `json:"nowMicros"`
	BaselineMicros int64          `json:"baselineMicros"`
	BaselineCloud  string         `json:"baselineCloud,omitempty"`
	Workloads      []WorkloadPlan `json:"workloads"`
}

// WorkloadPlan is where one workload's nodes go.
type WorkloadPlan struct {
	Name    string `json:"name"`
	Fleet   string `json:"fleet"`
	Desired int    `json:"desired"`
	Placed  int    `json:"placed"`
	// Placements sorted by offer.
	Placements []Placement `json:"placements"`
	// CostMicros is compute plus egress per hour.
	CostMicros   int64 `json:"costMicros"`
	EgressMicros int64 `json:"egressMicros"`
	// NowMicros is what the workload's live nodes cost per hour now.
	NowMicros int64 `json:"nowMicros"`
	// Leaving counts the live nodes on offers the plan does not keep, by
	// offer, at the offer's price (zero when it has no valid one).
	Leaving []Placement `json:"leaving,omitempty"`
	// Shortfall explains nodes not placed.
	Shortfall *Shortfall `json:"shortfall,omitempty"`
	// RunnerUp is the best offer not chosen, for the explanation.
	RunnerUp *Alternative `json:"runnerUp,omitempty"`
	// Hyperscaler is, when some of the workload's nodes run on a GPU cloud
	// (a cloud not in catalog.Hyperscalers), the cheapest on-demand offer
	// of a hyperscaler the workload may use: what those nodes save
	// against it.
	Hyperscaler *Alternative `json:"hyperscaler,omitempty"`
	// Rejected counts offers that cannot serve the workload, by reason.
	Rejected map[Reason]int `json:"rejected,omitempty"`
	// Unfit lists offers the workload has nodes on that its spec no longer
	// allows, and why.
	Unfit []UnfitOffer `json:"unfit,omitempty"`
	// Bootstrap is what the workload's nodes run at first boot, per
	// cloud; Outdated counts its live nodes launched with another, which
	// the plan replaces (or keeps, when the workload is not movable).
	Bootstrap []Bootstrap `json:"bootstrap,omitempty"`
	Outdated  int         `json:"outdated,omitempty"`
	// KeepOutdated says those nodes stay: the workload is not movable.
	KeepOutdated bool `json:"keepOutdated,omitempty"`
	// Position of the workload in the repository, for messages.
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
}

// Placement is a number of nodes on one offer.
type Placement struct {
	Offer OfferKey `json:"offer"`
	Count int      `json:"count"`
	// Kept of them are already running there.
	Kept int `json:"kept,omitempty"`
	// Reserved of them use capacity paid for in advance and cost nothing
	// more.
	Reserved    int   `json:"reserved,omitempty"`
	PriceMicros int64 `json:"priceMicros"`
	// AccountTerms say how the price comes from the list price.
	AccountTerms
	// EgressMicros is the amortised data-transfer cost per node-hour of
	// running away from the workload's data.
	EgressMicros int64 `json:"egressMicros,omitempty"`
	// Unpriced nodes run on an offer with no valid price. They are kept,
	// and their cost is unknown: PriceMicros is zero.
	Unpriced bool `json:"unpriced,omitempty"`
	// Derived says PriceMicros is the catalog's estimate for a place no
	// price source quotes, not a quote.
	Derived bool `json:"derived,omitempty"`
}

// Cost is what the placement's nodes cost per hour: each its price, none
// for a reserved one, and each its egress. It is the one definition of a
// node's cost; the spot risk premium only ranks offers and is no cost.
func (pl Placement) Cost() int64 {
	return int64(pl.Count-pl.Reserved)*pl.PriceMicros + int64(pl.Count)*pl.EgressMicros
}

// UnfitOffer is an offer a workload runs nodes on that its spec rules out.
type UnfitOffer struct {
	Offer  OfferKey `json:"offer"`
	Reason Reason   `json:"reason"`
}

// Alternative is an offer the planner could have used instead.
type Alternative struct {
	Offer       OfferKey `json:"offer"`
	PriceMicros int64    `json:"priceMicros"`
	AccountTerms
	EgressMicros int64 `json:"egressMicros,omitempty"`
}

// ShortfallCause names why nodes were left unplaced.
type ShortfallCause string

const (
	CauseNoOffer  ShortfallCause = "no-offer"
	CauseCapacity ShortfallCause = "capacity"
	CauseSpread   ShortfallCause = "spread"
	CauseGang     ShortfallCause = "gang"
	CausePriority ShortfallCause = "priority"
	CauseBudget   ShortfallCause = "budget"
	CauseQuota    ShortfallCause = "quota"
)

// Shortfall is why a workload has fewer nodes than it asks for.
type Shortfall struct {
	Nodes   int            `json:"nodes"`
	Cause   ShortfallCause `json:"cause"`
	Message string         `json:"message"`
}

// Fleet returns a fleet's plan by name.
func (p *Plan) Fleet(name string) *FleetPlan {
	for i := range p.Fleets {
		if p.Fleets[i].Name == name {
			return &p.Fleets[i]
		}
	}
	return nil
}

// Workload returns a workload's plan by fleet and name.
func (p *Plan) Workload(fleet, name string) *WorkloadPlan {
	if f := p.Fleet(fleet); f != nil {
		for i := range f.Workloads {
			if f.Workloads[i].Name == name {
				return &f.Workloads[i]
			}
		}
	}
	return nil
}
