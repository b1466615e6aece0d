// SPDX-License-Identifier: Apache-2.0

package planner

import (
	"maps"
	"slices"

	"github.com/gpufleet/gpufleet/planner/mcf"
)

// A run after a few prices moved has much the same optimum as the run
// before, whose placements the status in Git records (Input.Start). The
// first phase starts from those placements rather than from nothing, and
// the second from where the first ended: the flow that places exactly the
// first phase's counts. mcf checks that a start fits the network as it is
// now and starts from nothing when it does not, so a start can make a plan
// quicker to find, never different in what it is worth.

// startFlow returns the flow on the arcs below the workloads' nodes that
// puts their nodes where Input.Start says, as far as the network lets it,
// and how many nodes it places of each workload; nil if nothing is known.
// A placement on an offer the workload may no longer use, or beyond what
// it now asks for, is left out.
func (c *component) startFlow() ([]int64, []int64) {
	p := c.p
	if len(p.in.Start) == 0 {
		return nil, nil
	}
	flow := make([]int64, len(c.money))
	placed := make([]int64, len(c.workloads))
	poolIn := map[int]int64{}
	// down carries n nodes from node x to the sink; a pool's are shared
	// out once all have arrived.
	down := func(x int, n int64) {
		for x != 1 {
			if _, ok := c.poolRest[x]; ok {
				poolIn[x] += n
				return
			}
			l := c.down[x]
			flow[l.arc] += n
			x = l.node
		}
	}
	// send carries n nodes of workload wi from its node down to node from,
	// along arc, and on from its far end to to the sink.
	send := func(wi int, from int, arc mcf.ArcID, to int, n int64) {
		for x := from; x != c.wNode[wi]; x = c.up[x].node {
			flow[c.up[x].arc] += n
		}
		flow[arc] += n
		down(to, n)
	}
	known := false
	for wi, w := range c.workloads {
		for _, pl := range p.in.Start[w.key()] {
			known = true
			offer, ok := slices.BinarySearchFunc(p.offers, pl.Offer, func(o Offer, k OfferKey) int { return o.Compare(k) })
			if !ok {
				continue
			}
			ci, ok := slices.BinarySearchFunc(w.candidates, offer, func(c candidate, o int) int { return c.offer - o })
			if !ok {
				continue
			}
			n := int64(pl.Count)
			for _, f := range w.fixed {
				if f.offer == offer {
					n -= int64(f.count)
				}
			}
			n = min(n, int64(w.demand)-placed[wi])
			if n <= 0 {
				continue
			}
			var ca *candidateArcs
			if i, ok := slices.BinarySearchFunc(c.arcs, [2]int{wi, ci}, compareCandidateArcs); ok {
				ca = &c.arcs[i]
			}
			if ca != nil && ca.keep != noArc {
				k := min(n, int64(w.candidates[ci].running))
				send(wi, ca.from, ca.keep, ca.keepTo, k)
				placed[wi] += k
				n -= k
			}
			if n == 0 {
				continue
			}
			switch h := c.hubPlan.hubOf(wi, ci); {
			case ca != nil && ca.add != noArc:
				send(wi, ca.from, ca.add, ca.addTo, n)
			case h != nil:
				m := h.member(wi)
				out := h.out[slices.Index(h.offers, offer)]
				flow[m.arc] += n
				send(wi, m.from, out.arc, out.node, n)
			default:
				continue
			}
			placed[wi] += n
		}
	}
	if !known {
		return nil, nil
	}
	for _, node := range slices.Sorted(maps.Keys(poolIn)) {
		n := poolIn[node]
		refund := c.down[node]
		r := min(n, c.openCapacity[refund.arc])
		flow[refund.arc] += r
		flow[c.poolRest[node]] += n - r
		down(refund.node, n)
	}
	return flow, placed
}

func compareCandidateArcs(a candidateArcs, k [2]int) int {
	if a.workload != k[0] {
		return a.workload - k[0]
	}
	return a.candidate - k[1]
}

// member returns workload wi's way into the hub; it must have one.
func (h *hub) member(wi int) hubMember {
	i, _ := slices.BinarySearchFunc(h.members, wi, func(m hubMember, wi int) int { return m.workload - wi })
	return h.members[i]
}

// lexMaxStart completes a start's flow for lexMax with no counts fixed and
// no decision made: every workload's nodes enter, and those the start does
// not place go unplaced.
func (c *component) lexMaxStart(levelCap []int64) []int64 {
	if c.start == nil {
		return nil
	}
	flow := c.start
	for wi := range c.workloads {
		if c.forcedCap[wi] != 0 || c.startPlaced[wi] > c.entryCap[wi] {
			return nil
		}
		flow[c.entry[wi]] = c.entryCap[wi]
		flow[c.unplaced[wi]] = c.entryCap[wi] - c.startPlaced[wi]
	}
	for l, a := range c.levelArc {
		flow[a] = levelCap[l]
	}
	return flow
}

// routeStart is the flow lexMax just found without its unplaced nodes: a
// flow of exactly the counts it placed, from which route can start.
func (c *component) routeStart() []int64 {
	flow := make([]int64, len(c.money))
	for i := range flow {
		flow[i] = c.g.Flow(mcf.ArcID(i))
	}
	for l := range c.levelArc {
		flow[c.levelArc[l]] = 0
	}
	for wi := range c.workloads {
		out := flow[c.unplaced[wi]]
		flow[c.unplaced[wi]] = 0
		flow[c.entry[wi]] -= out
		flow[c.levelArc[c.level[wi]]] += flow[c.entry[wi]]
	}
	return flow
}

// count adds a solve's work to what benchmarks report.
func (p *planning) count(res mcf.Result) {
	p.pivots += res.Pivots
	if res.FromFlow {
		p.started++
	}
}
