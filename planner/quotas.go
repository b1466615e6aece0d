// SPDX-License-Identifier: Apache-2.0

package planner

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/gpufleet/gpufleet/planner/mcf"
)

// Quotas as the plan sees them. A quota limits the units (vCPUs or GPUs)
// that nodes of several offers use together: Σ per(o)·nodes(o) ≤ room. With
// one unit count per quota that is a capacity on a node of the flow; with
// several (p5.48xlarge and p4d.24xlarge in one vCPU quota) it is a knapsack
// constraint, which no flow holds. So the network gives each quota a node
// per unit count, a class, capped at what the room holds of that class
// alone, and branch and bound splits a quota the relaxation overfills: at
// most n−1 nodes of its heaviest class there, or at least n, which leaves
// the others less (search.go). The quotas of one offer nest (an Azure
// family's inside the region's vCPUs, a GCE model's inside
// GPUS_ALL_REGIONS), and a class of the inner one is inside the same class
// of the outer one, so an offer's nodes pass through one class node per
// quota in turn.

// quotaKey names a quota of the input: Region "" for a global one.
type quotaKey struct{ cloud, region, name string }

// quotaState is a quota of the input, prepared.
type quotaState struct {
	Quota
	// room is what the plan's movable and new nodes may use: the limit,
	// less what others use, less what nodes that must stay use. When the
	// account already uses more than the limit allows, what gpufleet runs
	// there now may stay: a quota cut is no reason to delete a node.
	room int64
	// binding says the candidates could use more than the room.
	binding bool
	// others is what the cloud counts that is not gpufleet's, and fixed
	// what its nodes that must stay use.
	others, fixed int64
}

// offerQuota is what one node of an offer counts against a quota of the
// input.
type offerQuota struct {
	quota int // index into planning.quotas
	per   int64
}

// prepareQuotas matches every offer's quota counts to the input's quotas,
// works out each quota's room from what runs, and marks those the
// candidates could overfill. Counts naming a quota the input does not have
// are not planned against: nothing is known of its limit.
func (p *planning) prepareQuotas() {
	index := map[quotaKey]int{}
	for _, q := range p.in.Quotas {
		if q.Limit < 0 {
			continue
		}
		k := quotaKey{q.Cloud, q.Region, q.Name}
		if _, dup := index[k]; dup {
			continue
		}
		index[k] = len(p.quotas)
		p.quotas = append(p.quotas, &quotaState{Quota: q})
	}
	p.offerQuotas = make([][]offerQuota, len(p.offers))
	for i, o := range p.offers {
		for _, c := range o.Quotas {
			if c.Per <= 0 {
				continue
			}
			q, ok := index[quotaKey{o.Cloud, o.Region, c.Quota}]
			if !ok {
				q, ok = index[quotaKey{o.Cloud, "", c.Quota}]
			}
			if ok {
				p.offerQuotas[i] = append(p.offerQuotas[i], offerQuota{q, c.Per})
			}
		}
	}
	if len(p.quotas) == 0 {
		return
	}
	use := func(key OfferKey, n int64, into []int64) {
		i, ok := slices.BinarySearchFunc(p.offers, key, func(o Offer, k OfferKey) int { return o.Compare(k) })
		if !ok {
			return
		}
		for _, oq := range p.offerQuotas[i] {
			into[oq.quota] = saturatingAdd(into[oq.quota], saturatingMul(oq.per, n))
		}
	}
	ours := make([]int64, len(p.quotas))
	for _, inst := range p.in.Observed {
		if inst.State.Live() {
			use(inst.OfferKey, 1, ours)
		}
	}
	fixed := make([]int64, len(p.quotas))
	potential := make([]int64, len(p.quotas))
	for _, w := range p.workloads {
		for _, f := range w.fixed {
			use(p.offers[f.offer].OfferKey, int64(f.count), fixed)
		}
		for _, h := range w.held {
			use(h.offer, int64(h.count), fixed)
		}
		// The most the workload's movable and new nodes could use of each.
		most := map[int]int64{}
		for _, c := range w.candidates {
			for _, oq := range p.offerQuotas[c.offer] {
				most[oq.quota] = max(most[oq.quota], oq.per)
			}
		}
		for q, per := range most {
			potential[q] = saturatingAdd(potential[q], saturatingMul(per, int64(w.demand)))
		}
	}
	for i, q := range p.quotas {
		others := int64(0)
		if q.Used != UsedUnknown && q.Used > ours[i] {
			others = q.Used - ours[i]
		}
		q.others, q.fixed = others, fixed[i]
		q.room = max(0, max(q.Limit-others, ours[i])-fixed[i])
		q.binding = potential[i] > q.room
	}
}

// bindingQuotas are the quotas an offer counts against that could bind, in
// the order the catalog gives them, the offer's own first.
func (p *planning) bindingQuotas(offer int) []offerQuota {
	var out []offerQuota
	for _, oq := range p.offerQuotas[offer] {
		if p.quotas[oq.quota].binding {
			out = append(out, oq)
		}
	}
	return out
}

func saturatingAdd(a, b int64) int64 {
	if s := a + b; s >= a {
		return s
	}
	return 1 << 62
}

func saturatingMul(a, b int64) int64 {
	if a == 0 || b == 0 {
		return 0
	}
	if a > (1<<62)/b {
		return 1 << 62
	}
	return a * b
}

// resetClasses clears the quota classes' decisions: none at least, and at
// most what the room holds of each class alone.
func (c *component) resetClasses() {
	for i, qc := range c.classes {
		c.classLo[i] = 0
		c.classHi[i] = min(mcf.Inf, c.p.quotas[qc.quota].room/qc.per)
	}
}

// tightenClasses caps each class at what its quota's room leaves after the
// other classes' lower bounds, and reports false if the bounds cannot all
// hold.
func (c *component) tightenClasses() bool {
	least := map[int]int64{}
	for i, qc := range c.classes {
		least[qc.quota] += qc.per * c.classLo[i]
	}
	for i, qc := range c.classes {
		room := c.p.quotas[qc.quota].room
		if least[qc.quota] > room {
			return false
		}
		others := least[qc.quota] - qc.per*c.classLo[i]
		c.classHi[i] = min(c.classHi[i], (room-others)/qc.per)
		if c.classLo[i] > c.classHi[i] {
			return false
		}
	}
	return true
}

// classNodes is how many nodes the current flow puts through a class.
func (c *component) classNodes(i int) int64 { return c.g.Flow(c.classes[i].arc) }

// overQuota returns a class to branch on when the current flow uses more
// of some quota than its room, and the nodes it has there: the heaviest
// class above its lower bound, of the quota overfilled most. It returns -1
// when every quota holds.
func (c *component) overQuota() (class int, nodes int64) {
	use := map[int]int64{}
	for i, qc := range c.classes {
		use[qc.quota] += qc.per * c.classNodes(i)
	}
	class, worst := -1, int64(0)
	for i, qc := range c.classes {
		over := use[qc.quota] - c.p.quotas[qc.quota].room
		n := c.classNodes(i)
		if over <= 0 || n <= c.classLo[i] {
			continue
		}
		if class < 0 || over > worst || over == worst && qc.per > c.classes[class].per {
			class, worst, nodes = i, over, n
		}
	}
	return class, nodes
}

// needsQuotaSearch reports whether some quota of the component has classes
// of more than one unit count: a knapsack the flow alone cannot hold.
func (c *component) needsQuotaSearch() bool {
	per := map[int]int64{}
	for _, qc := range c.classes {
		if p, ok := per[qc.quota]; ok && p != qc.per {
			return true
		}
		per[qc.quota] = qc.per
	}
	return false
}

// shareQuotas caps each class at an even share of its quota's room, so that
// any flow keeps every quota, however its classes fill: the plan of last
// resort when the search finds none.
func (c *component) shareQuotas() {
	classes := map[int]int64{}
	for _, qc := range c.classes {
		classes[qc.quota]++
	}
	for i, qc := range c.classes {
		c.classHi[i] = min(c.classHi[i], c.p.quotas[qc.quota].room/classes[qc.quota]/qc.per)
	}
}

// QuotaReport is a quota the plan's workloads count against, and what the
// plan makes of it.
type QuotaReport struct {
	Quota
	// Planned is what the plan's nodes use of it, nodes that stay included.
	Planned int64 `json:"planned"`
	// Full says the plan leaves too little of it for one more node of any
	// offer a workload could use there.
	Full bool `json:"full,omitempty"`
	// Raise, for a full quota that holds the plan back, is the increase to
	// ask the cloud for.
	Raise *QuotaRaise `json:"raise,omitempty"`
}

// QuotaRaise is a quota increase and what it would buy: the plan with the
// quota out of the way.
type QuotaRaise struct {
	// To is the limit that plan needs.
	To int64 `json:"to"`
	// ExtraNodes it would place, and SavingMicros what it would save per
	// hour (less than zero when the extra nodes cost more than the rest
	// saves).
	ExtraNodes   int   `json:"extraNodes"`
	SavingMicros int64 `json:"savingMicros"`
	// Workloads whose placement would change, "fleet/workload".
	Workloads []string `json:"workloads"`
}

// quotaUse works out, once the flows are extracted, what the plan uses of
// each quota and which are full, for the shortfalls to name.
func (p *planning) quotaUse() {
	if len(p.quotas) == 0 {
		return
	}
	p.quotaPlanned = make([]int64, len(p.quotas))
	p.quotaFull = make([]bool, len(p.quotas))
	least := make([]int64, len(p.quotas))
	relevant := make([]bool, len(p.quotas))
	for _, w := range p.workloads {
		for _, c := range w.candidates {
			for _, oq := range p.offerQuotas[c.offer] {
				relevant[oq.quota] = true
				if least[oq.quota] == 0 || oq.per < least[oq.quota] {
					least[oq.quota] = oq.per
				}
			}
		}
		for _, pl := range p.placements(w) {
			i, ok := slices.BinarySearchFunc(p.offers, pl.Offer, func(o Offer, k OfferKey) int { return o.Compare(k) })
			if !ok {
				continue
			}
			for _, oq := range p.offerQuotas[i] {
				relevant[oq.quota] = true
				p.quotaPlanned[oq.quota] += oq.per * int64(pl.Count)
			}
		}
	}
	p.quotaRelevant = relevant
	for i, q := range p.quotas {
		movable := p.quotaPlanned[i] - q.fixed
		p.quotaFull[i] = relevant[i] && least[i] > 0 && q.room-movable < least[i]
	}
}

// heldBackBy returns a full quota one of the workload's candidates counts
// against, if any: what keeps it from more nodes when nothing else does.
func (p *planning) heldBackBy(w *workload) (*quotaState, bool) {
	if p.quotaFull == nil {
		return nil, false
	}
	for _, c := range w.candidates {
		for _, oq := range p.offerQuotas[c.offer] {
			if p.quotaFull[oq.quota] {
				return p.quotas[oq.quota], true
			}
		}
	}
	return nil, false
}

// describe words a quota for a person: "L-417A185B (Running On-Demand P
// instances) in us-east-1".
func (q Quota) describe() string {
	s := q.Name
	if q.Description != "" {
		s += " (" + q.Description + ")"
	}
	if q.Region == "" {
		return s + " across all regions of " + q.Cloud
	}
	return s + " in " + q.Region
}

// reportQuotas lists the quotas the plan uses or finds full, and for each full one that
// holds the plan back, the raise that would free it: the plan solved again
// without the quota says how many more nodes, what saving, and what limit.
func (p *planning) reportQuotas(plan *Plan) []QuotaReport {
	var out []QuotaReport
	for i, q := range p.quotas {
		if !p.quotaRelevant[i] || p.quotaPlanned[i] == 0 && !p.quotaFull[i] {
			continue
		}
		r := QuotaReport{Quota: q.Quota, Planned: p.quotaPlanned[i], Full: p.quotaFull[i]}
		if r.Full && !p.in.noRaise {
			r.Raise = p.raise(plan, i)
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b QuotaReport) int {
		return compareQuotaKeys(quotaKey{a.Cloud, a.Region, a.Name}, quotaKey{b.Cloud, b.Region, b.Name})
	})
	return out
}

// raise solves the input again with quota i out of the way and says what
// that plan would gain, or nil if nothing.
func (p *planning) raise(plan *Plan, i int) *QuotaRaise {
	in := p.in
	in.noRaise = true
	in.Quotas = slices.Clone(in.Quotas)
	q := p.quotas[i]
	for j := range in.Quotas {
		if in.Quotas[j].Cloud == q.Cloud && in.Quotas[j].Region == q.Region && in.Quotas[j].Name == q.Name {
			in.Quotas[j].Limit = 1 << 40
		}
	}
	free, err := Solve(in)
	if err != nil {
		return nil
	}
	r := &QuotaRaise{SavingMicros: plan.CostMicros - free.CostMicros}
	for fi, f := range free.Fleets {
		for wi, w := range f.Workloads {
			now := plan.Fleets[fi].Workloads[wi]
			r.ExtraNodes += w.Placed - now.Placed
			if w.Placed != now.Placed || w.CostMicros != now.CostMicros {
				r.Workloads = append(r.Workloads, f.Name+"/"+w.Name)
			}
		}
	}
	if r.ExtraNodes <= 0 && r.SavingMicros <= 0 {
		return nil
	}
	for _, fq := range free.Quotas {
		if fq.Cloud == q.Cloud && fq.Region == q.Region && fq.Name == q.Name {
			r.To = q.others + fq.Planned
		}
	}
	return r
}

// compareQuotaKeys orders quotas by cloud, region and name.
func compareQuotaKeys(a, b quotaKey) int {
	return cmp.Or(cmp.Compare(a.cloud, b.cloud), cmp.Compare(a.region, b.region), cmp.Compare(a.name, b.name))
}

// quotaHolds fills in a shortfall that a full quota explains, and reports
// whether one does.
func (p *planning) quotaHolds(w *workload, s *Shortfall) bool {
	q, ok := p.heldBackBy(w)
	if !ok {
		return false
	}
	s.Cause = CauseQuota
	s.Message = fmt.Sprintf("held back by %s: limit %d %s", q.describe(), q.Limit, q.Unit)
	if q.others > 0 {
		s.Message += fmt.Sprintf(", %d in use by others", q.others)
	}
	return true
}
