package planner

import (
	"errors"
	"fmt"
	"maps"
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
			return nil, err
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
				return nil, err
			}
		}
	}
	if err := p.enforceBudgets(comps, results); err != nil {
		return nil, err
	}
	total := componentResult{optimal: true}
	for _, r := range results {
		total.optimal = total.optimal && r.optimal
		total.gapMicros += r.gapMicros
		total.gapNodes += r.gapNodes
	}
	return p.assemble(total, len(comps)), nil
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
	hasGang := slices.ContainsFunc(c.gangs, func(g *gangArcs) bool { return g != nil })
	var res componentResult
	if !hasGang {
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

// setDecisions sets each workload's arcs for the gangs' decisions: a gang
// told where to run enters straight from the source and must be placed
// whole; one told not to run gets nothing.
func (c *component) setDecisions() {
	g := c.g
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
		g.SetCapacity(c.entry[wi], entry)
		g.SetCapacity(c.forced[wi], forced)
		c.entryCap[wi], c.forcedCap[wi] = entry, forced
	}
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
	if _, err := g.Solve(0, 1, demand); errors.Is(err, mcf.ErrInfeasible) {
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
func (c *component) route(counts []int64, costs []int64) (int64, error) {
	g := c.g
	var total int64
	for l, a := range c.levelArc {
		g.SetCapacity(a, counts[l]-c.forcedAt(l))
		total += counts[l]
	}
	for wi := range c.workloads {
		g.SetCapacity(c.unplaced[wi], 0)
	}
	for i, cost := range costs {
		g.SetCost(mcf.ArcID(i), cost)
	}
	res, err := g.Solve(0, 1, total)
	if err != nil {
		return 0, err
	}
	return res.Cost, nil
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
// relaxation, whose optimum no branch below it can beat, so branches whose
// relaxation is no better than the best solution found are cut. Bounds and
// solutions compare as objectives: nodes first, priority by priority, then
// cost.

// decision values for a gang besides a region index.
const (
	undecided = -1
	none      = -2
)

// gangWork bounds branch and bound by solves times arcs over all the
// components of a plan, so that a huge search stops, deterministically, at
// a bounded cost and reports its gap rather than running on.
const gangWork = 12_000_000

func (c *component) branchAndBound() (componentResult, error) {
	c.forceFixedGangs()
	limit := max(16, c.p.gangBudget/max(1, c.arcCount()))
	var best *objective
	solved := 0
	// evaluate solves a node's relaxation when it is made, so that it waits
	// with its own bound, and reports whether it stays open: it fits, is
	// not integral, and may beat the best solution. An integral one is a
	// solution, polished by improve.
	evaluate := func(n *bbNode) (bool, error) {
		c.decide(n)
		solved++
		var hint []int64
		if n.parent != nil {
			hint = n.parent.bound.placed
		}
		if err := c.solveFrom(hint); errors.Is(err, errNoFit) {
			return false, nil
		} else if err != nil {
			return false, err
		}
		b := c.bound
		n.bound = &b
		if n.parent == nil {
			c.rootFlow = make([][]int64, len(c.gangs))
			for i, gang := range c.gangs {
				if gang != nil {
					c.rootFlow[i] = make([]int64, len(gang.into))
					for r, arc := range gang.into {
						c.rootFlow[i][r] = c.g.Flow(arc)
					}
				}
			}
		}
		if best != nil && !c.bound.better(*best) {
			return false, nil
		}
		n.branchGang, n.branchRegion = c.violated()
		if n.branchGang >= 0 {
			return true, nil
		}
		if best == nil || c.value.better(*best) {
			v := c.value
			best = &v
			c.extract()
			// A new solution is worth polishing: the search then cuts more
			// with a better one.
			spent, err := c.improve(best, limit-solved)
			solved += spent
			return false, err
		}
		return false, nil
	}
	// The search dives first, placing each gang where the relaxation put
	// most of it, until it has a solution; then it takes the best bound
	// first, which tightens the proven bound fastest when the budget runs
	// out.
	open := &nodeQueue{}
	root := &bbNode{}
	if stays, err := evaluate(root); err != nil {
		return componentResult{}, err
	} else if stays {
		open.push(root)
	}
	var dive *bbNode
	for solved < limit {
		node := dive
		dive = nil
		if node == nil {
			if open.Len() == 0 || best != nil && !open.peek().bound.better(*best) {
				break
			}
			node = open.pop()
		}
		if best != nil && !node.bound.better(*best) {
			continue
		}
		// Two branches: the gang runs whole in the region the relaxation
		// gave most of it, or anywhere but there.
		g, r := node.branchGang, node.branchRegion
		children := []*bbNode{{parent: node, gang: g, region: r}}
		if c.gangs[g].capacity[r] >= c.gangs[g].demand {
			children = append([]*bbNode{{parent: node, gang: g, region: r, place: true}}, children...)
		}
		for _, child := range children {
			stays, err := evaluate(child)
			if err != nil {
				return componentResult{}, err
			}
			if !stays {
				continue
			}
			if best == nil && dive == nil && child.place {
				dive = child
			} else {
				open.push(child)
			}
		}
	}
	if dive != nil {
		open.push(dive)
	}
	if best == nil {
		// The budget ran out before any solution: leave every undecided
		// gang unplaced, which always fits.
		c.decide(&bbNode{})
		for i, g := range c.gangs {
			if g != nil && c.decision[i] == undecided {
				c.decision[i] = none
			}
		}
		if err := c.solve(); err != nil {
			return componentResult{}, err
		}
		v := c.value
		best = &v
		c.extract()
	}
	work := solved * c.arcCount()
	if open.Len() == 0 || !open.peek().bound.better(*best) {
		return componentResult{optimal: true, work: work}, nil
	}
	nodes, micros := open.peek().bound.gapTo(*best)
	return componentResult{optimal: false, gapNodes: nodes, gapMicros: micros, work: work, outOfWork: true}, nil
}

// improve searches around a solution, whose flow is the current one, for a
// better one: each gang moved to another region that can hold it, or
// placed where it was not, the others as they are, taking any move that
// is better, until none is or the solves run out. It keeps best and the
// extracted flow the best found, and returns the solves it spent.
func (c *component) improve(best *objective, solves int) (int, error) {
	// Where each gang runs in the solution.
	at := make([]int, len(c.gangs))
	for i, g := range c.gangs {
		if g == nil {
			continue
		}
		at[i] = none
		for r, arc := range g.into {
			if c.g.Flow(arc) > 0 {
				at[i] = r
			}
		}
	}
	// Every region that can hold a gang, when there are few; where the
	// first relaxation put some of it otherwise, since each try costs a
	// solve.
	moves := 0
	for _, g := range c.gangs {
		if g != nil {
			moves += len(g.regions)
		}
	}
	worth := func(i, r int) bool {
		g := c.gangs[i]
		return g.capacity[r] >= g.demand && (moves <= maxMoves || c.rootFlow[i] != nil && c.rootFlow[i][r] > 0)
	}
	spent := 0
	try := func(trial []int) (bool, error) {
		spent++
		c.assign(trial)
		if err := c.solveFrom(best.placed); errors.Is(err, errNoFit) {
			return false, nil
		} else if err != nil {
			return false, err
		}
		if !c.value.better(*best) {
			return false, nil
		}
		*best = c.value
		c.extract()
		return true, nil
	}
	for improved := true; improved; {
		improved = false
		for i, g := range c.gangs {
			if g == nil {
				continue
			}
			for r := range g.regions {
				if r == at[i] || !worth(i, r) {
					continue
				}
				if spent >= solves {
					return spent, nil
				}
				trial := slices.Clone(at)
				trial[i] = r
				if ok, err := c.tryMove(try, trial); err != nil {
					return spent, err
				} else if ok {
					at, improved = trial, true
				}
			}
		}
		// Two gangs trading regions.
		for i := range c.gangs {
			for j := i + 1; j < len(c.gangs); j++ {
				if c.gangs[i] == nil || c.gangs[j] == nil || at[i] < 0 || at[j] < 0 || moves > maxMoves {
					continue
				}
				ri := slices.Index(c.gangs[j].regions, c.gangs[i].regions[at[i]])
				rj := slices.Index(c.gangs[i].regions, c.gangs[j].regions[at[j]])
				if ri < 0 || rj < 0 || ri == at[j] || !worth(i, rj) || !worth(j, ri) {
					continue
				}
				if spent >= solves {
					return spent, nil
				}
				trial := slices.Clone(at)
				trial[i], trial[j] = rj, ri
				if ok, err := c.tryMove(try, trial); err != nil {
					return spent, err
				} else if ok {
					at, improved = trial, true
				}
			}
		}
	}
	return spent, nil
}

// maxMoves is how many gang-region pairs a component may have for the
// local search to try them all, and trades between pairs of gangs.
const maxMoves = 200

func (c *component) tryMove(try func([]int) (bool, error), trial []int) (bool, error) {
	return try(trial)
}

// assign decides every gang: the region it runs whole in, or none.
func (c *component) assign(at []int) {
	c.decide(&bbNode{})
	for i, g := range c.gangs {
		if g == nil {
			continue
		}
		c.decision[i] = at[i]
		for r, arc := range g.into {
			if at[i] == none || r != at[i] {
				c.g.SetCapacity(arc, 0)
			}
		}
	}
}

// bbNode is a node of the search: its parent's, and one more decision about
// one gang's region, to place it there or never there.
type bbNode struct {
	parent       *bbNode
	gang, region int
	place        bool
	// bound is the node's relaxation, and branchGang and branchRegion the
	// gang it splits the most and where most of it went.
	bound                    *objective
	branchGang, branchRegion int
	seq                      int
}

// nodeQueue is a heap of open nodes, the best bound first, ties by creation
// order so the search is deterministic.
type nodeQueue struct {
	nodes []*bbNode
	seq   int
}

func (q *nodeQueue) Len() int { return len(q.nodes) }

func (q *nodeQueue) less(i, j int) bool {
	a, b := q.nodes[i], q.nodes[j]
	switch {
	case a.bound == nil || b.bound == nil:
		return a.bound == nil && b.bound != nil || a.seq < b.seq && (a.bound == nil) == (b.bound == nil)
	case a.bound.better(*b.bound):
		return true
	case b.bound.better(*a.bound):
		return false
	}
	return a.seq < b.seq
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

// decide sets the gangs' decisions along a node's path: the region a gang
// runs whole in, and the regions it may not use.
func (c *component) decide(node *bbNode) {
	for i, g := range c.gangs {
		if g == nil {
			continue
		}
		c.decision[i] = undecided
		for r, arc := range g.into {
			c.g.SetCapacity(arc, g.capacity[r])
		}
	}
	for n := node; n != nil && n.parent != nil; n = n.parent {
		g := c.gangs[n.gang]
		if !n.place {
			c.g.SetCapacity(g.into[n.region], 0)
			continue
		}
		c.decision[n.gang] = n.region
		for r, arc := range g.into {
			if r != n.region {
				c.g.SetCapacity(arc, 0)
			}
		}
	}
}

// violated returns the undecided gang the current flow splits the most
// (the smallest share in its biggest region), or places in part, and the
// region holding most of it; -1 if every gang is whole or absent.
func (c *component) violated() (gang, region int) {
	gang, region = -1, -1
	bestShare := 2.0
	for i, g := range c.gangs {
		if g == nil || c.decision[i] != undecided {
			continue
		}
		regions, top, topRegion, placed := 0, int64(0), -1, int64(0)
		for r, arc := range g.into {
			f := c.g.Flow(arc)
			if f > 0 {
				regions++
			}
			if f > top {
				top, topRegion = f, r
			}
			placed += f
		}
		if placed == 0 || (placed == g.demand && regions == 1) {
			continue
		}
		if share := float64(top) / float64(g.demand); share < bestShare {
			gang, region, bestShare = i, topRegion, share
		}
	}
	return gang, region
}
