// SPDX-License-Identifier: Apache-2.0

package planner

import (
	"errors"
	"slices"
)

// Branch and bound over the gangs' region choices. A gang places all of its
// nodes in one region or none of them; the flow without that rule is a
// relaxation, whose optimum no branch below it can beat, so branches whose
// relaxation is no better than the best solution found are cut. Bounds and
// solutions compare as objectives: nodes first, priority by priority, then
// cost.
//
// Every node's relaxation is solved when the node is made, so it waits in
// the queue with its own bound; the route of its nodes starts from the
// last one's flow (see route). Each new best solution is polished before
// the search goes on: single gangs moved, pairs traded, then small groups
// of gangs that compete for the same regions searched exactly with the rest
// held where they are. A better solution found early cuts more.

// decision values for a gang besides a region index.
const (
	undecided = -1
	none      = -2
)

// gangWork bounds branch and bound by solves times arcs over all the
// components of a plan, so that a huge search stops, deterministically, at
// a bounded cost and reports its gap rather than running on.
const gangWork = 100_000_000

// search is the branch and bound of one component.
type search struct {
	c *component
	// best is the best solution found, and bestAt where its gangs run (a
	// region index, or none).
	best   *objective
	bestAt []int
	// root is the root's relaxation: no node places more, so its counts
	// are the hint for a node whose parent has no bound of its own.
	root *objective
	// solved counts the relaxations solved, up to limit.
	solved, limit int
	// polishing says a new best solution is being polished, during which
	// better ones are only recorded.
	polishing bool
	// probes is the bound of each gang placed whole in each region, from
	// the root, once probed; nil where it does not fit.
	probes [][]*objective
	probed bool
}

func (c *component) branchAndBound() (componentResult, error) {
	c.forceFixedGangs()
	s := &search{c: c, limit: max(16, c.p.gangBudget/max(1, c.arcCount()))}
	open, err := s.run(&bbNode{}, s.limit)
	if err != nil {
		return componentResult{}, err
	}
	if s.best == nil {
		// The budget ran out before any solution: leave every undecided
		// gang unplaced and split each quota evenly between its classes,
		// which always fits.
		c.decide(&bbNode{})
		for i, g := range c.gangs {
			if g != nil && c.decision[i] == undecided {
				c.decision[i] = none
			}
		}
		c.shareQuotas()
		if err := c.solve(); err != nil {
			return componentResult{}, err
		}
		v := c.value
		s.best = &v
		c.extract()
	}
	work := s.solved * c.arcCount()
	if open.Len() == 0 || !open.peek().bound.better(*s.best) {
		return componentResult{optimal: true, work: work}, nil
	}
	nodes, micros := open.peek().bound.gapTo(*s.best)
	return componentResult{optimal: false, gapNodes: nodes, gapMicros: micros, work: work, outOfWork: true}, nil
}

// run searches below root until no open node may beat the best solution or
// the solves reach limit, and returns the nodes left open. It dives first,
// placing each gang where the relaxation put most of it, until the dive
// ends; then it takes the best bound first, which tightens the proven
// bound fastest when the budget runs out.
func (s *search) run(root *bbNode, limit int) (*nodeQueue, error) {
	c := s.c
	open := &nodeQueue{}
	if stays, err := s.evaluate(root); err != nil {
		return nil, err
	} else if stays {
		open.push(root)
	}
	diving := true
	var dive *bbNode
	for s.solved < limit {
		if !s.probed && s.best != nil && root.parent == nil {
			s.probed = true
			if err := s.probe(root); err != nil {
				return nil, err
			}
		}
		node := dive
		dive = nil
		if node == nil {
			if open.Len() == 0 || s.best != nil && !open.peek().bound.better(*s.best) {
				break
			}
			node = open.pop()
		}
		if s.best != nil && !node.bound.better(*s.best) {
			continue
		}
		children := c.children(node)
		for _, child := range children {
			stays, err := s.evaluate(child)
			if err != nil {
				return nil, err
			}
			if !stays {
				continue
			}
			if (diving || s.best == nil) && dive == nil && child.dives() {
				dive = child
			} else {
				open.push(child)
			}
		}
		if dive == nil {
			diving = false
		}
	}
	if dive != nil {
		open.push(dive)
	}
	return open, nil
}

// evaluate solves a node's relaxation, when the node is made, and reports
// whether it stays open: it fits, is not integral, and may beat the best
// solution. An integral one that beats it is the new best, and polished.
func (s *search) evaluate(n *bbNode) (bool, error) {
	c := s.c
	c.decide(n)
	s.solved++
	var hint []int64
	switch {
	case n.parent != nil && n.parent.bound != nil:
		hint = n.parent.bound.placed
	case s.root != nil:
		hint = s.root.placed
	}
	if err := c.solveFrom(hint); errors.Is(err, errNoFit) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	b := c.bound
	n.branchGang, n.branchRegion = c.violated()
	n.branchClass = -1
	if n.branchGang >= 0 && c.budget == nil {
		b.cost += c.gangBound()
		c.branchOnDearest(n)
	}
	if n.branchGang < 0 {
		n.branchClass, n.branchNodes = c.overQuota()
	}
	split := n.branchGang >= 0 || n.branchClass >= 0
	n.bound = &b
	if s.root == nil {
		s.root = &b
		c.recordRootFlow()
		if n.branchGang >= 0 && c.budget == nil {
			s.penaltyProbes(b)
		}
	}
	if s.best != nil && !b.better(*s.best) {
		return false, nil
	}
	if split {
		return true, nil
	}
	if s.best != nil && !c.value.better(*s.best) {
		return false, nil
	}
	s.record(c.gangRegions())
	if s.polishing {
		return false, nil
	}
	s.polishing = true
	defer func() { s.polishing = false }()
	return false, s.polish()
}

// record makes the current solution, whose gangs run at at, the best.
func (s *search) record(at []int) {
	v := s.c.value
	s.best, s.bestAt = &v, at
	s.c.extract()
	s.ban()
}

// penaltyProbes bounds, from the root's relaxation and its gang penalties
// (gangBound), every plan with a gang whole in a region: the root's bound
// with that gang's least penalty traded for its penalty there.
func (s *search) penaltyProbes(root objective) {
	c := s.c
	s.probes = make([][]*objective, len(c.gangs))
	for i, g := range c.gangs {
		if g == nil {
			continue
		}
		s.probes[i] = make([]*objective, len(g.regions))
		for r, p := range c.regionPenalty[i] {
			if p != unbounded {
				s.probes[i][r] = &objective{placed: root.placed, cost: root.cost - c.leastPenalty[i] + p}
			}
		}
	}
}

// probe solves, once there is a best solution, the relaxation of each gang
// placed whole in each region it may use, below root, unless its penalty
// probe has already banned it. No plan with the gang there beats that
// bound; so each region whose bound does not beat the best solution, now or
// when a better one is found, is banned to the gang in the whole search,
// which then branches over fewer regions.
func (s *search) probe(root *bbNode) error {
	c := s.c
	if s.probes == nil {
		return nil
	}
	for i, g := range c.gangs {
		if g == nil {
			continue
		}
		for r := range g.regions {
			if g.capacity[r] < g.demand || c.banned[i][r] {
				continue
			}
			if s.solved >= s.limit {
				return nil
			}
			child := &bbNode{parent: root, gang: i, region: r, place: true}
			if _, err := s.evaluate(child); err != nil {
				return err
			}
			switch p := s.probes[i][r]; {
			case child.bound == nil:
				c.banned[i][r] = true
			case p == nil || p.better(*child.bound):
				s.probes[i][r] = child.bound
			}
		}
	}
	s.ban()
	return nil
}

// ban bans each gang the regions whose probe does not beat the best.
func (s *search) ban() {
	for i, probes := range s.probes {
		for r, b := range probes {
			if b != nil && !b.better(*s.best) {
				s.c.banned[i][r] = true
			}
		}
	}
}

// recordRootFlow keeps each gang's flow into each region in the root
// relaxation: where moving it is worth a try.
func (c *component) recordRootFlow() {
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

// gangRegions is where each gang runs in the current flow, which places
// every gang whole or not at all: a region index, or none.
func (c *component) gangRegions() []int {
	at := make([]int, len(c.gangs))
	for i, g := range c.gangs {
		at[i] = none
		if g == nil {
			continue
		}
		for r, arc := range g.into {
			if c.g.Flow(arc) > 0 {
				at[i] = r
			}
		}
	}
	return at
}

// polish improves a new best solution until neither moves of single gangs
// and trades between two (improve) nor exact searches of small groups of
// gangs (neighbourhoods) find a better one, or the solves run out.
func (s *search) polish() error {
	for {
		if err := s.improve(); err != nil {
			return err
		}
		better, err := s.neighbourhoods()
		if err != nil || !better {
			return err
		}
	}
}

// improve searches around the best solution: each gang moved to another
// region that can hold it, or placed where it was not, the others as they
// are, and pairs of gangs trading regions, taking any move that is better,
// until none is or the solves run out.
func (s *search) improve() error {
	c := s.c
	// Every region that can hold a gang, when there are few; where the
	// root relaxation put some of it otherwise, since each try costs a
	// solve.
	moves := 0
	for _, g := range c.gangs {
		if g != nil {
			moves += len(g.regions)
		}
	}
	worth := func(i, r int) bool {
		g := c.gangs[i]
		return g.capacity[r] >= g.demand && !c.banned[i][r] && (moves <= maxMoves || c.rootFlow[i] != nil && c.rootFlow[i][r] > 0)
	}
	try := func(trial []int) (bool, error) {
		s.solved++
		c.assign(trial)
		if err := c.solveFrom(s.best.placed); errors.Is(err, errNoFit) {
			return false, nil
		} else if err != nil {
			return false, err
		}
		if !c.value.better(*s.best) {
			return false, nil
		}
		if k, _ := c.overQuota(); k >= 0 {
			return false, nil
		}
		s.record(trial)
		return true, nil
	}
	for improved := true; improved; {
		improved = false
		for i, g := range c.gangs {
			if g == nil {
				continue
			}
			for r := range g.regions {
				if r == s.bestAt[i] || !worth(i, r) {
					continue
				}
				if s.solved >= s.limit {
					return nil
				}
				trial := slices.Clone(s.bestAt)
				trial[i] = r
				if ok, err := try(trial); err != nil {
					return err
				} else if ok {
					improved = true
				}
			}
		}
		if moves > maxMoves {
			continue
		}
		for i := range c.gangs {
			for j := i + 1; j < len(c.gangs); j++ {
				at := s.bestAt
				if c.gangs[i] == nil || c.gangs[j] == nil || at[i] < 0 || at[j] < 0 {
					continue
				}
				ri := slices.Index(c.gangs[j].regions, c.gangs[i].regions[at[i]])
				rj := slices.Index(c.gangs[i].regions, c.gangs[j].regions[at[j]])
				if ri < 0 || rj < 0 || ri == at[j] || !worth(i, rj) || !worth(j, ri) {
					continue
				}
				if s.solved >= s.limit {
					return nil
				}
				trial := slices.Clone(at)
				trial[i], trial[j] = rj, ri
				if ok, err := try(trial); err != nil {
					return err
				} else if ok {
					improved = true
				}
			}
		}
	}
	return nil
}

// maxMoves is how many gang-region pairs a component may have for the
// local search to try them all, and trades between pairs of gangs.
const maxMoves = 200

// neighbourhoodSize is how many gangs a neighbourhood leaves free, and
// neighbourhoodSolves how many solves its search may spend.
const (
	neighbourhoodSize   = 4
	neighbourhoodSolves = 100
)

// neighbourhoods searches, for each gang in turn, below a node that holds
// every gang but it and its closest rivals where the best solution runs
// them, and reports whether that found a better solution. Chains of moves
// that no single move or trade improves, one gang taking another's region
// as that one moves on, are found this way.
func (s *search) neighbourhoods() (bool, error) {
	c := s.c
	var gangs []int
	for i, g := range c.gangs {
		if g != nil {
			gangs = append(gangs, i)
		}
	}
	if len(gangs) <= neighbourhoodSize {
		return false, nil
	}
	for _, i := range gangs {
		if s.solved >= s.limit {
			return false, nil
		}
		free := s.rivals(i, gangs)
		root := &bbNode{}
		for _, j := range gangs {
			if !slices.Contains(free, j) {
				root = &bbNode{parent: root, gang: j, region: s.bestAt[j], place: true}
			}
		}
		before := *s.best
		if _, err := s.run(root, min(s.limit, s.solved+neighbourhoodSolves)); err != nil {
			return false, err
		}
		if s.best.better(before) {
			return true, nil
		}
	}
	return false, nil
}

// rivals returns gang i and the gangs that compete most with it: those that
// can run in the most of the regions it can, first those that could take
// its region or whose region it could take, ties in gang order.
func (s *search) rivals(i int, gangs []int) []int {
	c := s.c
	usable := func(g, r int) bool { return c.gangs[g].capacity[r] >= c.gangs[g].demand }
	regionOf := func(g int) string {
		if at := s.bestAt[g]; at >= 0 {
			return c.gangs[g].regions[at]
		}
		return ""
	}
	canRun := func(g int, region string) bool {
		r := slices.Index(c.gangs[g].regions, region)
		return r >= 0 && usable(g, r)
	}
	type rival struct{ gang, score int }
	var rs []rival
	for _, j := range gangs {
		if j == i {
			continue
		}
		score := 0
		for r, region := range c.gangs[i].regions {
			if usable(i, r) && canRun(j, region) {
				score++
			}
		}
		if canRun(j, regionOf(i)) || canRun(i, regionOf(j)) {
			score += len(c.gangs[i].regions) + 1
		}
		if score > 0 {
			rs = append(rs, rival{j, score})
		}
	}
	slices.SortStableFunc(rs, func(a, b rival) int { return b.score - a.score })
	free := []int{i}
	for _, r := range rs[:min(len(rs), neighbourhoodSize-1)] {
		free = append(free, r.gang)
	}
	return free
}

// assign decides every gang: the region it runs whole in, or none.
func (c *component) assign(at []int) {
	c.decide(&bbNode{})
	for i, g := range c.gangs {
		if g != nil {
			c.decision[i] = at[i]
		}
	}
}

// bbNode is a node of the search: its parent's, and one more decision about
// one gang's region, to place it there or never there. A neighbourhood's
// root may also tell a gang not to run at all: place with region none.
type bbNode struct {
	parent       *bbNode
	gang, region int
	place        bool
	// quota says the decision is instead about a quota class: at most, or
	// with atLeast at least, nodes of it.
	quota, atLeast bool
	class          int
	nodes          int64
	// bound is the node's relaxation, and branchGang and branchRegion the
	// gang it splits the most and where most of it went; or, when every
	// gang is whole, branchClass the quota class to split and branchNodes
	// its nodes.
	bound                    *objective
	branchGang, branchRegion int
	branchClass              int
	branchNodes              int64
	seq                      int
}

// children are a node's two branches. For a gang: it runs whole in the
// region the relaxation gave most of it, or anywhere but there. For a quota
// the relaxation overfills: at most one node fewer of the class than it
// has, or at least as many, which leaves the other classes less room.
func (c *component) children(node *bbNode) []*bbNode {
	if k := node.branchClass; k >= 0 && node.branchGang < 0 {
		n := node.branchNodes
		return []*bbNode{
			{parent: node, quota: true, class: k, nodes: n - 1},
			{parent: node, quota: true, class: k, nodes: n, atLeast: true},
		}
	}
	g, r := node.branchGang, node.branchRegion
	children := []*bbNode{{parent: node, gang: g, region: r}}
	if c.gangs[g].capacity[r] >= c.gangs[g].demand {
		children = append([]*bbNode{{parent: node, gang: g, region: r, place: true}}, children...)
	}
	return children
}

// dives says the search, diving for a first solution, follows this child:
// a gang placed where most of it was, a quota class with one node fewer,
// whose room may then hold more lighter nodes.
func (n *bbNode) dives() bool { return n.place || n.quota && !n.atLeast }

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
			o := c.p.offers[w.fixed[0].offer]
			region = w.spec.GangGroup(o.Cloud, o.Region, o.Zone)
		} else {
			region = w.spec.GangGroup(w.held[0].offer.Cloud, w.held[0].offer.Region, w.held[0].offer.Zone)
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
		clear(c.excluded[i])
	}
	c.resetClasses()
	for n := node; n != nil && n.parent != nil; n = n.parent {
		switch {
		case n.quota && n.atLeast:
			c.classLo[n.class] = max(c.classLo[n.class], n.nodes)
		case n.quota:
			c.classHi[n.class] = min(c.classHi[n.class], n.nodes)
		case n.place:
			c.decision[n.gang] = n.region
		default:
			c.excluded[n.gang][n.region] = true
		}
	}
}

// branchOnDearest makes the node branch on the gang whose keeping whole
// costs the most by its penalty (gangBound), when any costs more than
// nothing: the branch that moves the bound most. The region is still the
// one holding most of it.
func (c *component) branchOnDearest(n *bbNode) {
	dearest := int64(0)
	for i, g := range c.gangs {
		if g == nil || c.decision[i] != undecided || c.leastPenalty[i] <= dearest {
			continue
		}
		if r, split := c.split(i); split {
			dearest = c.leastPenalty[i]
			n.branchGang, n.branchRegion = i, r
		}
	}
}

// split reports whether the current flow splits gang i or places only
// part of it, and the region holding most of it.
func (c *component) split(i int) (int, bool) {
	g := c.gangs[i]
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
	return topRegion, placed > 0 && (placed < g.demand || regions > 1)
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
		r, split := c.split(i)
		if !split {
			continue
		}
		if share := float64(c.g.Flow(g.into[r])) / float64(g.demand); share < bestShare {
			gang, region, bestShare = i, r, share
		}
	}
	return gang, region
}
