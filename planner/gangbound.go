// SPDX-License-Identifier: Apache-2.0

package planner

import (
	"cmp"
	"math"
	"slices"

	"github.com/gpufleet/gpufleet/planner/mcf"
)

// A relaxation lets a gang split over regions and take the cheapest offers
// of each, which is why its bound can sit well below any plan that keeps
// gangs whole. The reduced costs of its optimal flow tighten it, cheaply.
//
// For any flow x of the same counts within the same capacities, and the
// optimal flow x* with its reduced costs rc,
//
//	cost(x) = cost(x*) + Σ_a rc(a)·(x(a) − x*(a))
//
// and no term is negative (mcf.Graph.ReducedCost). Dropping terms keeps a
// lower bound, and the gangs' own arcs are disjoint, so each undecided
// gang g adds the least its own terms can be over the ways it can run
// whole: not at all, or in one region r that it may use, its d nodes
// entering there and spread over that region's offers, no arc carrying
// more than it could in any plan. That least is a greedy fill of the
// cheapest reduced costs.

// maxReducedCost bounds the reduced costs gangBound works with: far above
// any price, so that only an arc priced out by a decision passes it, and
// small enough that no sum of its terms overflows.
const maxReducedCost = 1 << 36

// unbounded marks a way to run that the penalties say nothing about.
const unbounded = math.MaxInt64

// gangBound returns what the current flow's cost may be raised by as a
// bound for every plan below the current decisions with the same counts.
// It leaves in c.regionPenalty what each undecided gang adds when it runs
// in each region (unbounded where it may not, or nothing is known), and in
// c.leastPenalty the least of those and of not running at all.
func (c *component) gangBound() int64 {
	var total int64
	for wi, g := range c.gangs {
		if g == nil {
			continue
		}
		c.leastPenalty[wi] = 0
		for r := range c.regionPenalty[wi] {
			c.regionPenalty[wi][r] = unbounded
		}
		if c.decision[wi] != undecided || g.demand > 1<<20 {
			continue
		}
		total += c.gangPenalty(wi, g)
	}
	return total
}

// gangPenalty fills gang wi's penalties and returns their least, 0 if a
// reduced cost is out of bounds.
func (c *component) gangPenalty(wi int, g *gangArcs) int64 {
	rc := func(a mcf.ArcID) int64 { return c.g.ReducedCost(a) }
	inBounds := func(a mcf.ArcID) bool {
		v := rc(a)
		return v <= maxReducedCost && v >= -maxReducedCost
	}
	// The terms of the flow as it is: what running nowhere adds.
	var base int64
	term := func(a mcf.ArcID) bool {
		if !inBounds(a) {
			return false
		}
		base -= rc(a) * c.g.Flow(a)
		return true
	}
	if !term(c.entry[wi]) {
		return 0
	}
	for r, into := range g.into {
		if !term(into) {
			return 0
		}
		for _, b := range g.nodes[r] {
			if !term(b.arc) {
				return 0
			}
		}
	}
	least := base // not running at all
	entry := rc(c.entry[wi])
	for r := range g.regions {
		if !c.mayUse(wi, r) || g.capacity[r] < g.demand {
			continue
		}
		fill := c.fill[:0]
		for _, b := range g.nodes[r] {
			fill = append(fill, boundedCost{rc(b.arc), b.most})
		}
		c.fill = fill
		slices.SortFunc(fill, func(a, b boundedCost) int { return cmp.Compare(a.rc, b.rc) })
		p := base + (entry+rc(g.into[r]))*g.demand
		left := g.demand
		for _, f := range fill {
			if left == 0 {
				break
			}
			n := min(left, f.most)
			p += f.rc * n
			left -= n
		}
		if left == 0 {
			c.regionPenalty[wi][r] = p
			least = min(least, p)
		}
	}
	if least < 0 {
		// No term is negative, so neither is their least sum; a negative
		// one would say the flow was not optimal. Trust none of it.
		for r := range c.regionPenalty[wi] {
			c.regionPenalty[wi][r] = unbounded
		}
		return 0
	}
	c.leastPenalty[wi] = least
	return least
}

type boundedCost struct {
	rc, most int64
}
