// SPDX-License-Identifier: Apache-2.0

package planner

import (
	"errors"
	"fmt"
	"maps"
	"math/bits"
	"slices"

	"github.com/gpufleet/gpufleet/planner/mcf"
)

// Solve plans every fleet of the input: the cheapest placement that meets
// every constraint, with explanations. The same input always gives the same
// plan.
func Solve(in Input) (*Plan, error) {
	plan, _, err := solvePlanning(in)
	return plan, err
}

// solvePlanning is Solve, returning the planning too for what benchmarks count.
func solvePlanning(in Input) (*Plan, *planning, error) {
	p := newPlanning(in)
	p.prepare()
	p.reserveFixed()
	p.prepareQuotas()
	comps := p.components()
	gangComponents := 0
	for _, ws := range comps {
		if slices.ContainsFunc(ws, func(w *workload) bool { return w.spec.Gang() }) {
			gangComponents++
		}
	}
	share := gangWork / max(1, gangComponents)
	results := make([]componentResult, len(comps))
	solve := func(i int, work int) error {
		p.gangBudget = work
		var err error
		results[i], err = p.solveComponent(comps[i], true)
		if errors.Is(err, errBudgetInexact) {
			results[i], err = p.solveComponent(comps[i], false)
			results[i].shedding = true
		}
		return err
	}
	left := gangWork
	var unfinished []int
	for i := range comps {
		if err := solve(i, share); err != nil {
			return nil, nil, err
		}
		left -= results[i].work
		if results[i].outOfWork {
			unfinished = append(unfinished, i)
		}
	}
	// What easy components left over goes to the searches that ran out,
	// which start again with it.
	if left > 0 {
		for _, i := range unfinished {
			if err := solve(i, share+left/len(unfinished)); err != nil {
				return nil, nil, err
			}
		}
	}
	if err := p.enforceBudgets(comps, results); err != nil {
		return nil, nil, err
	}
	p.quotaUse()
	total := componentResult{optimal: true}
	for _, r := range results {
		total.optimal = total.optimal && r.optimal
		total.gapMicros += r.gapMicros
		total.gapNodes += r.gapNodes
	}
	plan := p.assemble(total, len(comps))
	if len(p.quotas) > 0 {
		plan.Quotas = p.reportQuotas(plan)
	}
	return plan, p, nil
}

// reserveFixed lets nodes that must stay where they run use reservations
// first, before the flow shares out what is left.
func (p *planning) reserveFixed() {
	for _, w := range p.workloads {
		for _, f := range w.fixed {
			k, ok := p.pool(&p.offers[f.offer])
			if !ok {
				continue
			}
			res := p.reserved[k]
			n := min(res.count, f.count)
			res.count -= n
			if n > 0 {
				w.fixedReserved(f.offer, n)
			}
		}
	}
}

func (w *workload) fixedReserved(offer, n int) {
	if w.reservedFixed == nil {
		w.reservedFixed = map[int]int{}
	}
	w.reservedFixed[offer] += n
}

// componentResult says how good a component's solution is: proven optimal,
// or how far the best bound might still be: gapNodes more nodes placed, or
// when the bound places as many, gapMicros less per hour.
type componentResult struct {
	optimal   bool
	gapMicros int64
	gapNodes  int64
	// shedding says the component's budget is met by shedding nodes.
	shedding bool
	// work is what the search spent, in solves times arcs, and outOfWork
	// says it stopped for want of more.
	work      int
	outOfWork bool
}

// solveComponent finds the component's optimal flow, with branch and bound
// when it holds gangs. With budgets false it leaves budgets aside, for
// enforceBudgets to shed nodes.
func (p *planning) solveComponent(ws []*workload, budgets bool) (componentResult, error) {
	c := p.build(ws)
	if !budgets {
		c.budget = nil
	}
	c.start, c.startPlaced = c.startFlow()
	hasGang := slices.ContainsFunc(c.gangs, func(g *gangArcs) bool { return g != nil })
	var res componentResult
	if !hasGang && !c.needsQuotaSearch() {
		if err := c.solve(); err != nil {
			return componentResult{}, err
		}
		c.extract()
		res = componentResult{optimal: true}
	} else {
		var err error
		if res, err = c.branchAndBound(); err != nil {
			return componentResult{}, err
		}
	}
	c.markBudget()
	if c.inexact {
		res.optimal = false
		res.gapMicros = max(res.gapMicros, c.gap)
	}
	return res, nil
}

var errNoFit = errors.New("does not fit")

// objective is what the planner optimises, lexicographically: first the
// nodes placed at each priority, highest first (placed[0] is the highest),
// then the cost per hour. No penalty stands in for a node: one more node of
// a priority beats any saving, and any number of nodes of lower ones.
type objective struct {
	placed []int64
	cost   int64
}

// better reports whether a beats b.
func (a objective) better(b objective) bool {
	for i := range a.placed {
		if a.placed[i] != b.placed[i] {
			return a.placed[i] > b.placed[i]
		}
	}
	return a.cost < b.cost
}

// gapTo is how far a bound is from a solution no better than it: the nodes
// it might still place, or when it places the same, the money it might
// still save.
func (a objective) gapTo(b objective) (nodes, micros int64) {
	for i := range a.placed {
		nodes += a.placed[i] - b.placed[i]
	}
	if slices.Equal(a.placed, b.placed) {
		return 0, b.cost - a.cost
	}
	return max(nodes, 1), 0
}

// solve finds the component's lexicographic optimum under the gangs'
// current decisions, exactly, in two phases on one network.
//
// Phase one places the most nodes, priority by priority (lexMax). Phase
// two finds the cheapest way to place exactly those nodes (route): each
// level's arc carries its count, nothing goes unplaced, and the arcs cost
// money (price, spot premium, egress, keep bonus, refunds).
//
// A fleet over its budget is then solved for under it (underBudget).
func (c *component) solve() error {
	return c.solveFrom(nil)
}

// solveFrom is solve given the counts a less constrained relaxation placed,
// nil if none is known. No tighter relaxation places more; so when those
// counts still fit, they are its phase one, and that phase is skipped.
func (c *component) solveFrom(hint []int64) error {
	c.p.solves++
	if !c.tightenClasses() {
		return errNoFit
	}
	c.setDecisions()
	var placed []int64
	var cost int64
	var err error
	if hint != nil && c.fitsForced(hint) {
		placed = hint
		cost, err = c.route(placed, c.money)
		if errors.Is(err, mcf.ErrInfeasible) {
			placed = nil
		} else if err != nil {
			return fmt.Errorf("pricing the placement of %s, %w", c.workloads[0], err)
		}
	}
	if placed == nil {
		if placed, err = c.lexMax(nil, len(c.levels)); err != nil {
			return err
		}
		if c.warm {
			// From the start's placements, not from nothing: a cold
			// route starts better from its own shortest paths.
			c.routeFrom = c.routeStart()
		}
		if cost, err = c.route(placed, c.money); err != nil {
			// Phase one just placed these nodes.
			return fmt.Errorf("pricing the placement of %s, %w", c.workloads[0], err)
		}
	}
	c.value = objective{placed: placed, cost: cost}
	c.bound = c.value
	if c.budget == nil || c.flowCost(c.budget.actual) <= c.budget.limit {
		return nil
	}
	if !c.budget.exact {
		return errBudgetInexact
	}
	return c.underBudget(placed)
}

// fitsForced reports whether counts leave room at each level for the
// gangs told where to run: a hint from before their decision may not.
func (c *component) fitsForced(counts []int64) bool {
	for l := range c.levels {
		if counts[l] < c.forcedAt(l) {
			return false
		}
	}
	return true
}

// setDecisions works out each workload's entry and forced counts from the
// gangs' decisions: a gang told where to run enters straight from the
// source and must be placed whole; one told not to run gets nothing.
func (c *component) setDecisions() {
	for wi, w := range c.workloads {
		d := int64(w.demand)
		entry, forced := d, int64(0)
		if c.gangs[wi] != nil {
			switch dec := c.decision[wi]; {
			case dec == none:
				entry = 0
			case dec >= 0:
				entry, forced = 0, d
			}
		}
		c.entryCap[wi], c.forcedCap[wi] = entry, forced
	}
}

// closeDecided puts the gangs' decisions into the graph as capacities: a
// gang's arcs into the regions it may not use closed, and its nodes
// entering from its level or, when it is told where to run, the source.
func (c *component) closeDecided() {
	g := c.g
	for wi := range c.workloads {
		g.SetCapacity(c.entry[wi], c.entryCap[wi])
		g.SetCapacity(c.forced[wi], c.forcedCap[wi])
		gang := c.gangs[wi]
		if gang == nil {
			continue
		}
		for r, arc := range gang.into {
			capacity := gang.capacity[r]
			if !c.mayUse(wi, r) {
				capacity = 0
			}
			g.SetCapacity(arc, capacity)
		}
	}
	c.setClassCaps()
}

// setClassCaps caps each quota class's nodes as the decisions say.
func (c *component) setClassCaps() {
	for i, qc := range c.classes {
		c.g.SetCapacity(qc.arc, c.classHi[i])
	}
}

// mayUse reports whether the decisions let gang wi run in its region r.
func (c *component) mayUse(wi, r int) bool {
	switch dec := c.decision[wi]; {
	case dec == none:
		return false
	case dec >= 0:
		return dec == r
	}
	return !c.excluded[wi][r] && !c.banned[wi][r]
}

// lexMax places the most nodes, priority by priority, with the levels
// before upTo holding exactly the counts in fixed (all levels free when
// fixed is nil) and those after it placing only forced gangs. It returns
// the nodes placed at each level.
//
// Its arcs cost nothing but the unplaced ones, which cost a priority's
// rank plus one (1 for the lowest priority of the component). A cycle that
// places one more node of a priority and unplaces one of a lower priority
// then costs less than zero, the reverse more than zero, and a trade
// between equal priorities nothing; so the min-cost flow is the
// lexicographic maximum, with no big numbers to overflow.
func (c *component) lexMax(fixed []int64, upTo int) ([]int64, error) {
	g := c.g
	c.closeDecided()
	levelCap := make([]int64, len(c.levels))
	var demand int64
	for wi := range c.workloads {
		l := c.level[wi]
		entry := c.entryCap[wi]
		if fixed == nil || l >= upTo {
			if fixed != nil && l > upTo {
				entry = 0
			}
			levelCap[l] += entry
		}
		g.SetCapacity(c.unplaced[wi], entry)
		demand += c.forcedCap[wi]
	}
	for l := range fixed {
		if l < upTo {
			levelCap[l] = fixed[l] - c.forcedAt(l)
		}
	}
	for l, a := range c.levelArc {
		g.SetCapacity(a, levelCap[l])
		demand += levelCap[l]
	}
	for i := range c.money {
		g.SetCost(mcf.ArcID(i), 0)
	}
	for wi := range c.workloads {
		g.SetCost(c.unplaced[wi], int64(len(c.levels)-c.level[wi]))
	}
	var start []int64
	if fixed == nil {
		start = c.lexMaxStart(levelCap)
		c.start = nil
	}
	res, err := g.SolveFrom(0, 1, demand, start)
	c.warm = res.FromFlow
	c.p.count(res)
	if errors.Is(err, mcf.ErrInfeasible) {
		// A gang told to run whole in a region does not fit there.
		return nil, errNoFit
	} else if err != nil {
		return nil, fmt.Errorf("placing the nodes of %s, %w", c.workloads[0], err)
	}

	placed := make([]int64, len(c.levels))
	for wi := range c.workloads {
		placed[c.level[wi]] += g.Flow(c.entry[wi]) + g.Flow(c.forced[wi]) - g.Flow(c.unplaced[wi])
	}
	return placed, nil
}

// forcedAt is how many nodes gangs told where to run bring to level l.
func (c *component) forcedAt(l int) int64 {
	n := int64(0)
	for wi := range c.workloads {
		if c.level[wi] == l {
			n += c.forcedCap[wi]
		}
	}
	return n
}

// route places exactly counts[l] nodes at each level at the least total of
// costs (indexed by arc), and returns that total. ErrInfeasible says the
// counts do not fit.
//
// It prices the gangs' decisions in rather than closing arcs (see
// penalty), so that the capacities stay those of the relaxation and one
// route after another, as branch and bound makes them, starts from the
// last one's flow. Where the penalty would not fit in int64 it closes
// arcs instead.
func (c *component) route(counts []int64, costs []int64) (int64, error) {
	g := c.g
	var total int64
	for _, n := range counts {
		total += n
	}
	m, priced := c.penalty(counts, costs)
	if priced {
		c.openDecided(counts)
	} else {
		c.closeDecided()
		for l, a := range c.levelArc {
			g.SetCapacity(a, counts[l]-c.forcedAt(l))
		}
	}
	for wi := range c.workloads {
		g.SetCapacity(c.unplaced[wi], 0)
	}
	for i, cost := range costs {
		g.SetCost(mcf.ArcID(i), cost)
	}
	var forced int64
	if priced {
		forced = c.priceDecided(costs, m)
	}
	res, err := g.SolveFrom(0, 1, total, c.routeFrom)
	c.routeFrom = nil
	c.p.count(res)
	if err != nil {
		return 0, err
	}
	if priced && !c.keepsDecisions() {
		return 0, fmt.Errorf("routing %d nodes with the gangs as decided, %w", total, mcf.ErrInfeasible)
	}
	// Every forced gang is whole, so its penalty is -m per node.
	return res.Cost + forced*m, nil
}

// penalty returns m, the price of breaking a decision by one node, larger
// than the difference in cost between any two routes of the counts: no
// flow that breaks one is the cheapest if one that keeps them all exists.
// A route costs at most the sum over arcs of |cost| times what the arc can
// carry, at most the total placed since the network has no cycles. It
// reports false if m and the flow's cost with it might not fit in int64.
func (c *component) penalty(counts []int64, costs []int64) (int64, bool) {
	const limit = 1 << 58
	var total int64
	for _, n := range counts {
		total += n
	}
	var spread int64
	for i, cost := range costs {
		if cost == 0 {
			continue
		}
		hi, lo := bits.Mul64(uint64(max(cost, -cost)), uint64(min(c.routeCapacity(mcf.ArcID(i)), total)))
		if hi != 0 || lo >= limit || spread+int64(lo) >= limit {
			return 0, false
		}
		spread += int64(lo)
	}
	m := 2*spread + 1
	// The graph's costs must sum to less than mcf's bound, and the route's
	// cost, with every penalised arc carrying the total, fit in int64.
	arcs := int64(0)
	for _, gang := range c.gangs {
		if gang != nil {
			arcs += int64(len(gang.into)) + 1
		}
	}
	hi, lo := bits.Mul64(uint64(m), uint64(arcs*(total+1)+1))
	if hi != 0 || lo >= limit || m >= limit/(arcs+1) {
		return 0, false
	}
	return m, true
}

// routeCapacity is what arc a can carry when route prices decisions in.
func (c *component) routeCapacity(a mcf.ArcID) int64 {
	return c.openCapacity[a]
}

// openDecided sets the capacities of the relaxation with no decision made:
// each level carrying its count, every gang free to enter from its level
// and to use every region that can hold it.
func (c *component) openDecided(counts []int64) {
	g := c.g
	for l, a := range c.levelArc {
		g.SetCapacity(a, counts[l])
	}
	for wi, w := range c.workloads {
		g.SetCapacity(c.entry[wi], int64(w.demand))
		g.SetCapacity(c.forced[wi], 0)
		if gang := c.gangs[wi]; gang != nil {
			for r, arc := range gang.into {
				g.SetCapacity(arc, gang.capacity[r])
			}
		}
	}
	c.setClassCaps()
}

// priceDecided adds the penalty m to every arc a decision closes, and takes
// it off every node of a gang told where to run, so that the cheapest route
// places it whole. It returns the nodes so forced.
func (c *component) priceDecided(costs []int64, m int64) int64 {
	g := c.g
	var forced int64
	for wi, gang := range c.gangs {
		if gang == nil {
			continue
		}
		switch dec := c.decision[wi]; {
		case dec == none:
			g.SetCost(c.entry[wi], costs[c.entry[wi]]+m)
		case dec >= 0:
			g.SetCost(c.entry[wi], costs[c.entry[wi]]-m)
			forced += gang.demand
		}
		for r, arc := range gang.into {
			if c.decision[wi] != none && !c.mayUse(wi, r) {
				g.SetCost(arc, costs[arc]+m)
			}
		}
	}
	return forced
}

// keepsDecisions reports whether the current flow keeps every decision:
// no node through a closed arc, every gang told where to run placed whole.
func (c *component) keepsDecisions() bool {
	for wi, gang := range c.gangs {
		if gang == nil {
			continue
		}
		entry := c.g.Flow(c.entry[wi])
		switch dec := c.decision[wi]; {
		case dec == none && entry > 0, dec >= 0 && entry < gang.demand:
			return false
		}
		for r, arc := range gang.into {
			if !c.mayUse(wi, r) && c.g.Flow(arc) > 0 {
				return false
			}
		}
	}
	return true
}

// flowCost totals costs (indexed by arc) over the current flow.
func (c *component) flowCost(costs []int64) int64 {
	total := int64(0)
	for i, cost := range costs {
		if cost != 0 {
			total += cost * c.g.Flow(mcf.ArcID(i))
		}
	}
	return total
}

// extract copies the current flow into the workloads' results.
func (c *component) extract() {
	for _, w := range c.workloads {
		w.flows = map[int]*flowResult{}
	}
	for _, a := range c.arcs {
		w := c.workloads[a.workload]
		cand := w.candidates[a.candidate]
		var add, keep int64
		if a.add != noArc {
			add = c.g.Flow(a.add)
		}
		if a.keep != noArc {
			keep = c.g.Flow(a.keep)
		}
		if add+keep == 0 {
			continue
		}
		fr := w.flows[cand.offer]
		if fr == nil {
			fr = &flowResult{}
			w.flows[cand.offer] = fr
		}
		fr.count += int(add + keep)
		fr.kept += int(keep)
	}
	c.splitHubs()
	// A pool's refund arc says how many of its nodes are reserved; which
	// ones is arbitrary, so take them in workload and offer order.
	for _, k := range slices.SortedFunc(maps.Keys(c.refunds), compareReservations) {
		left := int(c.g.Flow(c.refunds[k]))
		for _, w := range c.workloads {
			for _, cand := range w.candidates {
				if left == 0 {
					break
				}
				fr := w.flows[cand.offer]
				if pk, ok := c.p.pool(&c.p.offers[cand.offer]); !ok || pk != k || fr == nil {
					continue
				}
				n := min(left, fr.count-fr.reserved)
				fr.reserved += n
				left -= n
			}
		}
	}
}
