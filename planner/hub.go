// SPDX-License-Identifier: Apache-2.0

package planner

import (
	"slices"

	"github.com/gpufleet/gpufleet/planner/mcf"
)

// A dense component is many workloads that may each use hundreds of the
// same offers: a fleet's workloads asking for one GPU in overlapping
// regions. An arc from every workload to every offer it may use makes the
// network as big as the number of such pairs. But where two workloads reach
// the same offers of one region at the same per-offer costs, give or take
// a constant of their own (egress), the pairs factor through one shared
// node, a hub:
//
//	W ─(egress)─► hub ─(price, spot premium)─► offer
//
// Every path through the hub costs what the direct arc cost, and every
// workload entering it may use every offer leaving it, so the networks
// have the same flows of the same cost: the hub is exact, not a heuristic.
// Which workload's nodes took which offer is then any split of the hub's
// flow that matches what each workload sent in and each offer took out.
//
// Gangs keep their direct arcs, which branch and bound prices one by one
// (gangBound), and so do the workloads of a fleet with a budget, whose
// costs to the fleet are per arc. Running nodes keep their own arcs, whose
// keep bonus is the workload's.

// hub is a node that workloads with the same offers in one region share.
type hub struct {
	node int
	// members are the workloads sending nodes in, by the arc each sends
	// them by, in workload order.
	members []hubMember
	// offers are the offers the hub reaches, by index, with the arc to
	// each and its cost: the same for every member.
	offers []int
	costs  []int64
	out    []link
	// uses counts the workloads whose candidates give this set.
	uses int
}

type hubMember struct {
	workload int
	arc      mcf.ArcID
	from     int
}

// hubPlan says which candidates reach their offer through a hub.
type hubPlan struct {
	hubs []*hub
	// of[wi][ci] is the hub of workload wi's candidate ci, -1 for a
	// direct arc.
	of [][]int32
	// arcs counts the arcs into and out of the hubs.
	arcs int
}

// planHubs finds the sets of offers that more than one workload of ws
// reaches the same way, one region (and zone, where a workload caps its
// nodes per zone) at a time, and routes those workloads' candidates through
// a hub for each.
func (p *planning) planHubs(ws []*workload) hubPlan {
	plan := hubPlan{of: make([][]int32, len(ws))}
	// Hubs by a hash of their offers and costs; equal hashes are told
	// apart by comparing the two.
	index := map[uint64][]int32{}
	var offers []int
	var costs []int64
	for wi, w := range ws {
		if w.spec.Gang() || w.fleet.Budget != nil {
			continue
		}
		of := make([]int32, len(w.candidates))
		plan.of[wi] = of
		zoneLayer := w.spec.Spread.MaxPerZone > 0
		for from := 0; from < len(w.candidates); {
			// A group is a run of candidates in one region, or one zone.
			place := p.regionID
			if zoneLayer {
				place = p.zoneID
			}
			first := place[w.candidates[from].offer]
			to := from + 1
			for to < len(w.candidates) && place[w.candidates[to].offer] == first {
				to++
			}
			offers, costs = offers[:0], costs[:0]
			hash := uint64(14695981039346656037) // FNV-1a
			for ci := from; ci < to; ci++ {
				of[ci] = -1
				cand := &w.candidates[ci]
				if !p.hasAddArc(cand.offer) {
					continue
				}
				offers = append(offers, cand.offer)
				costs = append(costs, cand.cost-cand.egress)
				for _, v := range [2]uint64{uint64(cand.offer), uint64(cand.cost - cand.egress)} {
					hash = (hash ^ v) * 1099511628211
				}
			}
			if len(offers) > 0 {
				h := int32(-1)
				for _, i := range index[hash] {
					if slices.Equal(plan.hubs[i].offers, offers) && slices.Equal(plan.hubs[i].costs, costs) {
						h = i
						break
					}
				}
				if h < 0 {
					h = int32(len(plan.hubs))
					index[hash] = append(index[hash], h)
					plan.hubs = append(plan.hubs, &hub{node: -1, offers: slices.Clone(offers), costs: slices.Clone(costs)})
				}
				plan.hubs[h].uses++
				for ci := from; ci < to; ci++ {
					if p.hasAddArc(w.candidates[ci].offer) {
						of[ci] = h
					}
				}
			}
			from = to
		}
	}
	// A hub only one workload would use saves nothing.
	for _, of := range plan.of {
		for ci, h := range of {
			if h >= 0 && plan.hubs[h].uses < 2 {
				of[ci] = -1
			}
		}
	}
	for _, h := range plan.hubs {
		if h.uses >= 2 {
			plan.arcs += len(h.offers) + h.uses
		}
	}
	return plan
}

// directArcs bounds the arcs the workloads of ws have of their own: two a
// candidate not reached through a hub, one a running one, and a few more.
func (h *hubPlan) directArcs(ws []*workload) int {
	n := 0
	for wi, w := range ws {
		n += 8
		for ci, cand := range w.candidates {
			if h.hubOf(wi, ci) == nil {
				n++
			}
			if cand.running > 0 {
				n++
			}
		}
	}
	return n
}

// hubOf returns the hub of workload wi's candidate ci, or nil.
func (h *hubPlan) hubOf(wi, ci int) *hub {
	if of := h.of[wi]; of != nil && of[ci] >= 0 {
		return h.hubs[of[ci]]
	}
	return nil
}

// hasAddArc reports whether new nodes may be placed on an offer.
func (p *planning) hasAddArc(offer int) bool {
	o := &p.offers[offer]
	return o.Available != 0 && (len(p.blocked) == 0 || !p.blocked[o.OfferKey])
}

// splitHubs shares out each hub's flow among the workloads that sent it,
// in workload order, over its offers in order, and adds it to their flows.
func (c *component) splitHubs() {
	for _, h := range c.hubs {
		oi := 0
		left := int64(0)
		if len(h.out) > 0 {
			left = c.g.Flow(h.out[0].arc)
		}
		for _, m := range h.members {
			w := c.workloads[m.workload]
			need := c.g.Flow(m.arc)
			for need > 0 {
				for left == 0 {
					oi++
					left = c.g.Flow(h.out[oi].arc)
				}
				n := min(need, left)
				fr := w.flows[h.offers[oi]]
				if fr == nil {
					fr = &flowResult{}
					w.flows[h.offers[oi]] = fr
				}
				fr.count += int(n)
				need -= n
				left -= n
			}
		}
	}
}
