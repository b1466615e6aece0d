package planner

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/gpufleet/gpufleet/planner/mcf"
)

// Solve plans every fleet of the input: the cheapest placement that meets
// every constraint, with explanations. The same input always gives the same
// plan.
func Solve(in Input) (*Plan, error) {
	p := newPlanning(in)
	p.prepare()
	p.reserveFixed()
	comps := p.components()
	gangComponents := 0
	for _, ws := range comps {
		if slices.ContainsFunc(ws, func(w *workload) bool { return w.spec.Gang() }) {
			gangComponents++
		}
	}
	p.gangBudget = gangWork / max(1, gangComponents)
	results := make([]componentResult, len(comps))
	for i, ws := range comps {
		var err error
		if results[i], err = p.solveComponent(ws); err != nil {
			return nil, err
		}
	}
	if err := p.enforceBudgets(comps, results); err != nil {
		return nil, err
	}
	optimal, gap := true, int64(0)
	for _, r := range results {
		optimal, gap = optimal && r.optimal, gap+r.gap
	}
	return p.assemble(optimal, gap, len(comps)), nil
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
// or within gap of the best lower bound.
type componentResult struct {
	optimal bool
	gap     int64
}

// solveComponent finds the component's optimal flow, with branch and bound
// when it holds gangs.
func (p *planning) solveComponent(ws []*workload) (componentResult, error) {
	c := p.build(ws)
	hasGang := slices.ContainsFunc(c.gangs, func(g *gangArcs) bool { return g != nil })
	if !hasGang {
		if err := c.solve(); err != nil {
			return componentResult{}, err
		}
		c.extract()
		return componentResult{optimal: true}, nil
	}
	optimal, gap, err := c.branchAndBound()
	return componentResult{optimal, gap}, err
}

var errNoFit = errors.New("does not fit")

func (c *component) solve() error {
	c.p.solves++
	res, err := c.g.Solve(0, 1, c.demand)
	if errors.Is(err, mcf.ErrInfeasible) {
		return errNoFit
	}
	if err != nil {
		return fmt.Errorf("solving placement of %s, %w", c.workloads[0], err)
	}
	c.cost = res.Cost
	return nil
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

// Branch and bound over the gangs' region choices. A gang places all of its
// nodes in one region or none of them; the flow without that rule is a
// lower bound, so branches whose relaxation costs no less than the best
// solution found are cut.

// decision values for a gang besides a region index.
const (
	undecided = -1
	none      = -2
)

// gangWork bounds branch and bound by solves times arcs over all the
// components of a plan, so that a huge search stops, deterministically, at
// a bounded cost (about a second on two cores) and reports its gap rather
// than running on.
const gangWork = 6_000_000

func (c *component) branchAndBound() (optimal bool, gap int64, err error) {
	root := make([]int, len(c.gangs))
	for i := range root {
		root[i] = undecided
	}
	c.forceFixedGangs()
	limit := max(16, c.p.gangBudget/max(1, c.arcCount()))
	best := int64(math.MaxInt64)
	// Open nodes wait with their parent's bound. The search dives depth
	// first until it has a solution, then takes the lowest bound first,
	// which raises the proven bound fastest when the budget runs out.
	open := &nodeQueue{}
	next := &bbNode{decisions: root, bound: math.MinInt64}
	for solves := 0; ; {
		if next == nil {
			if open.Len() == 0 || open.peek().bound >= best {
				break
			}
			next = open.pop()
		}
		if solves >= limit {
			open.push(next)
			break
		}
		node := next
		next = nil
		c.apply(node.decisions)
		solves++
		if err := c.solve(); errors.Is(err, errNoFit) {
			continue
		} else if err != nil {
			return false, 0, err
		}
		if c.cost >= best {
			continue
		}
		g, flows := c.violated(node.decisions)
		if g < 0 {
			best = c.cost
			c.extract()
			continue
		}
		for i, choice := range c.children(g, flows) {
			child := &bbNode{decisions: slices.Clone(node.decisions), bound: c.cost}
			child.decisions[g] = choice
			if i == 0 && best == math.MaxInt64 {
				next = child
			} else {
				open.push(child)
			}
		}
	}
	if best == math.MaxInt64 {
		// The budget ran out before any solution: leave every undecided
		// gang unplaced, which always fits.
		for i, g := range c.gangs {
			if g != nil {
				root[i] = none
			}
		}
		c.apply(root)
		if err := c.solve(); err != nil {
			return false, 0, err
		}
		best = c.cost
		c.extract()
	}
	if open.Len() == 0 || open.peek().bound >= best {
		return true, 0, nil
	}
	if bound := open.peek().bound; bound != math.MinInt64 {
		return false, best - bound, nil
	}
	// Not even the root was solved: no bound is known.
	return false, best, nil
}

type bbNode struct {
	decisions []int
	bound     int64
	seq       int
}

// nodeQueue is a min-heap of open nodes by bound, ties by creation order so
// the search is deterministic.
type nodeQueue struct {
	nodes []*bbNode
	seq   int
}

func (q *nodeQueue) Len() int { return len(q.nodes) }

func (q *nodeQueue) less(i, j int) bool {
	a, b := q.nodes[i], q.nodes[j]
	return a.bound < b.bound || (a.bound == b.bound && a.seq < b.seq)
}

func (q *nodeQueue) push(n *bbNode) {
	n.seq = q.seq
	q.seq++
	q.nodes = append(q.nodes, n)
	for i := len(q.nodes) - 1; i > 0; {
		parent := (i - 1) / 2
		if !q.less(i, parent) {
			break
		}
		q.nodes[i], q.nodes[parent] = q.nodes[parent], q.nodes[i]
		i = parent
	}
}

func (q *nodeQueue) peek() *bbNode { return q.nodes[0] }

func (q *nodeQueue) pop() *bbNode {
	top := q.nodes[0]
	last := len(q.nodes) - 1
	q.nodes[0] = q.nodes[last]
	q.nodes = q.nodes[:last]
	for i := 0; ; {
		l, r, small := 2*i+1, 2*i+2, i
		if l < len(q.nodes) && q.less(l, small) {
			small = l
		}
		if r < len(q.nodes) && q.less(r, small) {
			small = r
		}
		if small == i {
			break
		}
		q.nodes[i], q.nodes[small] = q.nodes[small], q.nodes[i]
		i = small
	}
	return top
}

func (c *component) arcCount() int {
	n := len(c.arcs)*2 + len(c.workloads)*2
	return n
}

// forceFixedGangs confines a gang with nodes that must stay where they run
// to their region: the rest of it may join them there, or not run.
func (c *component) forceFixedGangs() {
	for i, g := range c.gangs {
		w := c.workloads[i]
		if g == nil || len(w.fixed)+len(w.held) == 0 {
			continue
		}
		var region string
		if len(w.fixed) > 0 {
			region = c.p.offers[w.fixed[0].offer].Region
		} else {
			region = w.held[0].offer.Region
		}
		for r := range g.regions {
			if g.regions[r] != region {
				g.capacity[r] = 0
			}
		}
	}
}

// apply sets the capacities that enforce the gangs' decisions.
func (c *component) apply(decisions []int) {
	for i, g := range c.gangs {
		if g == nil {
			continue
		}
		d := decisions[i]
		for r, arc := range g.into {
			capacity := g.capacity[r]
			if d == none || (d >= 0 && d != r) {
				capacity = 0
			}
			c.g.SetCapacity(arc, capacity)
		}
		unplaced := g.demand
		if d >= 0 {
			unplaced = 0
		}
		c.g.SetCapacity(g.unplaced, unplaced)
	}
}

// violated returns the undecided gang the current flow splits the most
// (the smallest share in its biggest region), with its flow per region; -1
// if no gang is split or placed in part.
func (c *component) violated(decisions []int) (int, []int64) {
	best, bestShare := -1, 2.0
	var bestFlows []int64
	for i, g := range c.gangs {
		if g == nil || decisions[i] != undecided {
			continue
		}
		flows := make([]int64, len(g.into))
		regions, top := 0, int64(0)
		for r, arc := range g.into {
			flows[r] = c.g.Flow(arc)
			if flows[r] > 0 {
				regions++
			}
			top = max(top, flows[r])
		}
		unplaced := c.g.Flow(g.unplaced)
		if unplaced == g.demand || (unplaced == 0 && regions == 1) {
			continue
		}
		if share := float64(top) / float64(g.demand); share < bestShare {
			best, bestShare, bestFlows = i, share, flows
		}
	}
	return best, bestFlows
}

// children orders a gang's choices: regions that can hold it, those the
// relaxation favoured first, then none at all.
func (c *component) children(g int, flows []int64) []int {
	gang := c.gangs[g]
	var regions []int
	for r := range gang.regions {
		if gang.capacity[r] >= gang.demand {
			regions = append(regions, r)
		}
	}
	slices.SortStableFunc(regions, func(a, b int) int {
		return cmp.Or(cmp.Compare(flows[b], flows[a]), cmp.Compare(gang.regions[a], gang.regions[b]))
	})
	return append(regions, none)
}
