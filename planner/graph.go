// SPDX-License-Identifier: Apache-2.0

package planner

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/gpufleet/gpufleet/planner/mcf"
	"github.com/gpufleet/gpufleet/schema"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// The flow network of one component, from source to sink:
//
//	source ─► level ─(demand)─► W ─(cloud share)─► C ─(region share)─► R ─► offer ─(available)─► sink
//	   └──(forced gang)──────────┘└────────────────(unplaced)────────────────────────────────────┘
//
// A level node gathers the workloads of one priority. The cloud layer
// exists only when a workload limits its share per cloud, the region layer
// when it limits its share per region or is a gang. An offer with no known
// capacity limit needs no node of its own: the arc from the workload goes
// straight to the sink. Reserved capacity adds a pool node between a
// reserved type's offers and the sink, with a refund arc worth the type's
// price for as many nodes as were reserved.
//
// The objective is lexicographic, and the network is solved for it in two
// exact phases rather than with a penalty that is usually big enough (see
// solve): first the most nodes, priority by priority, then the lowest cost
// of placing exactly those.

// component is a set of workloads that compete for the same limited
// offers or reservations, solved as one flow problem.
type component struct {
	p         *planning
	workloads []*workload
	g         *mcf.Graph
	arcs      []candidateArcs
	gangs     []*gangArcs
	refunds   map[reservationKey]mcf.ArcID
	// hubs are the nodes workloads with the same offers share (hub.go).
	hubs    []*hub
	hubPlan hubPlan
	// start is the flow below the workloads' nodes that Input.Start gives,
	// and startPlaced the nodes it places of each, until the first phase
	// has started from them; warm says the last first phase did, and
	// routeFrom is a flow for route to start from.
	start, startPlaced, routeFrom []int64
	warm                          bool
	// wNode is each workload's node. up is, by node, the arc into a node
	// of the cloud, region or zone layers from the one above; down the arc
	// on towards the sink from an offer's node, a quota class's or a
	// pool's (its refund arc, and poolRest the arc for the rest). Both are
	// noLink elsewhere. They lead a placement's nodes from the workload to
	// the sink (start.go).
	wNode    []int
	up, down []link
	poolRest map[int]mcf.ArcID
	// money is every arc's cost in the second phase, by arc id.
	money []int64
	// levels are the component's priorities, highest first; level[wi] is
	// the index of workload wi's, levelArc the arc from the source to each
	// level's node.
	levels   []int
	level    []int
	levelArc []mcf.ArcID
	// entry carries a workload's nodes from its level; forced carries a
	// gang that must be placed whole straight from the source; unplaced
	// takes what is not placed, in the first phase only.
	entry, forced, unplaced []mcf.ArcID
	// decision is each gang's branch-and-bound decision (undecided,
	// none, or a region index), and excluded the regions it may not use;
	// entryCap and forcedCap follow from them.
	decision []int
	excluded [][]bool
	// banned are the regions the search has proven no better plan puts
	// each gang in (see probe).
	banned [][]bool
	// regionPenalty and leastPenalty are what gangBound found, fill its scratch.
	regionPenalty       [][]int64
	leastPenalty        []int64
	fill                []boundedCost
	entryCap, forcedCap []int64
	// openCapacity is each arc's capacity with no decision made, at most.
	openCapacity []int64
	// budget is the one fleet budget of the component, if it has one.
	budget *componentBudget
	// value of the current solution, and bound the best that the
	// relaxation it solves could still reach: below value only when a
	// budget was met by a Lagrangian search that left a gap.
	value, bound objective
	// inexact says some solve left such a gap, of up to gap.
	inexact bool
	gap     int64
	// budgetBinds says the budget placed fewer nodes than the component
	// could hold.
	budgetBinds bool
	// classes are the quota classes the component's offers pass through,
	// and classLo and classHi the decisions' bounds on each one's nodes. An
	// upper bound caps the class's arc; a lower bound is not put in the
	// network, which stays a relaxation of the decisions without it, but
	// leaves the quota's other classes less room (tightenClasses), and
	// steers the search to another class (overQuota).
	classes          []quotaClass
	classLo, classHi []int64
	// rootFlow is each gang's flow into each region in the root
	// relaxation: where moving it is worth a try.
	rootFlow [][]int64
}

// quotaClass is the node that counts the nodes of one quota's offers with
// one unit count, per units each. Nodes leave it by arc, capped at what the
// decisions allow, to the next class of their offers' quotas or the sink.
type quotaClass struct {
	quota int
	per   int64
	node  int
	arc   mcf.ArcID
}

// candidateArcs are the arcs that carry one workload's nodes to one offer:
// from the workload's node or a layer below it, to the offer's node (add)
// or, for nodes that already run there, on past it (keep).
type candidateArcs struct {
	workload, candidate int
	add, keep           mcf.ArcID
	from, addTo, keepTo int
}

const noArc mcf.ArcID = -1

// link is an arc and the node at its far end.
type link struct {
	arc  mcf.ArcID
	node int
}

var noLink = link{noArc, -1}

// gangArcs are the handles branch and bound turns to confine a gang to one
// region: the arcs into each region node.
type gangArcs struct {
	workload int
	regions  []string
	into     []mcf.ArcID
	capacity []int64
	demand   int64
	// nodes are the arcs that carry the gang's nodes to the offers of
	// each region, with the most each can carry; see gangBound.
	nodes [][]boundedArc
}

// boundedArc is an arc and the most flow it can carry in any plan, which
// may be less than its capacity in the graph.
type boundedArc struct {
	arc  mcf.ArcID
	most int64
}

func (g *gangArcs) addNodes(region string, arc mcf.ArcID, most int64) {
	r := slices.Index(g.regions, region)
	g.nodes[r] = append(g.nodes[r], boundedArc{arc, most})
}

// components splits the workloads into groups that share no limited offer,
// no reservation and no budget. Each can be solved on its own, which keeps graphs
// small and lets a gang's branch and bound touch only its rivals.
func (p *planning) components() [][]*workload {
	parent := make([]int, len(p.workloads)+len(p.offers)+len(p.reserved)+len(p.quotas))
	for i := range parent {
		parent[i] = i
	}
	var find func(int) int
	find = func(i int) int {
		for parent[i] != i {
			parent[i] = parent[parent[i]]
			i = parent[i]
		}
		return i
	}
	union := func(a, b int) {
		if ra, rb := find(a), find(b); ra != rb {
			parent[max(ra, rb)] = min(ra, rb)
		}
	}
	pools := p.poolIndex()
	// A budget couples every workload of its fleet.
	budgeted := map[string]int{}
	for _, w := range p.workloads {
		if w.fleet.Budget == nil {
			continue
		}
		if first, ok := budgeted[w.fleet.Name]; ok {
			union(first, w.index)
		} else {
			budgeted[w.fleet.Name] = w.index
		}
	}
	for _, w := range p.workloads {
		for _, c := range w.candidates {
			o := &p.offers[c.offer]
			if o.Available != Unlimited {
				union(w.index, len(p.workloads)+c.offer)
			}
			if k, ok := p.pool(o); ok {
				union(w.index, len(p.workloads)+len(p.offers)+pools[k])
			}
			// A quota that could bind couples every workload that may
			// use it.
			for _, oq := range p.bindingQuotas(c.offer) {
				union(w.index, len(p.workloads)+len(p.offers)+len(p.reserved)+oq.quota)
			}
		}
	}
	groups := map[int][]*workload{}
	var roots []int
	for _, w := range p.workloads {
		r := find(w.index)
		if groups[r] == nil {
			roots = append(roots, r)
		}
		groups[r] = append(groups[r], w)
	}
	out := make([][]*workload, len(roots))
	for i, r := range roots {
		out[i] = groups[r]
	}
	return out
}

func (p *planning) poolIndex() map[reservationKey]int {
	keys := slices.SortedFunc(maps.Keys(p.reserved), compareReservations)
	idx := make(map[reservationKey]int, len(keys))
	for i, k := range keys {
		idx[k] = i
	}
	return idx
}

// pool returns the reservation an offer draws on, if any.
func (p *planning) pool(o *Offer) (reservationKey, bool) {
	if o.Market != catalog.OnDemand || len(p.reserved) == 0 {
		return reservationKey{}, false
	}
	k := reservationKey{o.Cloud, o.Region, o.InstanceType}
	_, ok := p.reserved[k]
	return k, ok
}

// build lays out the flow network of a component.
func (p *planning) build(ws []*workload) *component {
	c := &component{p: p, workloads: ws, refunds: map[reservationKey]mcf.ArcID{}}
	type arcSpec struct {
		from, to  int
		cap, cost int64
	}
	hubs := p.planHubs(ws)
	c.hubPlan = hubs
	// A workload has an arc or two a candidate it reaches directly, one a
	// hub it enters and a few of its own; an offer a few more, and so
	// does a hub.
	direct := hubs.directArcs(ws)
	arcs := make([]arcSpec, 0, len(p.offers)+direct+hubs.arcs)
	c.arcs = make([]candidateArcs, 0, direct)
	nodes := 2 // source, sink
	const source, sink = 0, 1
	c.up, c.down = []link{noLink, noLink}, []link{noLink, noLink}
	newNode := func() int {
		c.up, c.down = append(c.up, noLink), append(c.down, noLink)
		nodes++
		return nodes - 1
	}
	// mcf numbers arcs densely in the order they are added, so an arc's id
	// is its place in this list.
	addArc := func(from, to int, capacity, cost int64) mcf.ArcID {
		arcs = append(arcs, arcSpec{from, to, capacity, cost})
		return mcf.ArcID(len(arcs) - 1)
	}

	for _, w := range ws {
		if !slices.Contains(c.levels, w.spec.Priority) {
			c.levels = append(c.levels, w.spec.Priority)
		}
	}
	slices.SortFunc(c.levels, func(a, b int) int { return cmp.Compare(b, a) })
	levelNode := make([]int, len(c.levels))
	for l := range c.levels {
		levelNode[l] = newNode()
		c.levelArc = append(c.levelArc, addArc(source, levelNode[l], 0, 0))
	}

	// offerNode is each offer's node, by offer index, once it has one; 0,
	// the source, for none.
	offerNode := make([]int, len(p.offers))
	poolNode := map[reservationKey]int{}
	poolBase := map[reservationKey]int{}
	// classNode is each quota class's node, by the chain of classes from
	// it to the sink. Where quotas nest, as the clouds' do, a class has
	// one chain; where they would not, a class gets a node per chain, and
	// the search, which sums a quota over all its nodes, still holds it.
	classNode := map[string]int{}
	var class func(chain []offerQuota) int
	class = func(chain []offerQuota) int {
		if len(chain) == 0 {
			return sink
		}
		k := fmt.Sprint(chain)
		if n, ok := classNode[k]; ok {
			return n
		}
		n := newNode()
		classNode[k] = n
		next := class(chain[1:])
		qc := quotaClass{quota: chain[0].quota, per: chain[0].per, node: n}
		qc.arc = addArc(n, next, 0, 0)
		c.down[n] = link{qc.arc, next}
		c.classes = append(c.classes, qc)
		return n
	}
	// base is where an offer's nodes go once placed: through its quotas'
	// classes, to the sink.
	base := func(offer int) int { return class(p.bindingQuotas(offer)) }
	target := func(offer int) int {
		o := &p.offers[offer]
		if k, ok := p.pool(o); ok {
			n, ok := poolNode[k]
			if !ok {
				n = newNode()
				poolNode[k] = n
				// Every offer of a pool is one type in one region bought
				// on demand, so they share their quotas.
				poolBase[k] = base(offer)
			}
			return n
		}
		return base(offer)
	}

	// offerTo is where new nodes on an offer go: its own node, which caps
	// them at what it has room for, or when it has no limit its target.
	offerTo := func(offer int) int {
		o := &p.offers[offer]
		to := target(offer)
		if o.Available == Unlimited {
			return to
		}
		n := offerNode[offer]
		if n == 0 {
			n = newNode()
			offerNode[offer] = n
			c.down[n] = link{addArc(n, to, int64(o.Available), 0), to}
		}
		return n
	}
	c.level = make([]int, len(ws))
	c.wNode = make([]int, len(ws))
	c.poolRest = map[int]mcf.ArcID{}
	c.entry = make([]mcf.ArcID, len(ws))
	c.forced = make([]mcf.ArcID, len(ws))
	c.unplaced = make([]mcf.ArcID, len(ws))
	c.gangs = make([]*gangArcs, len(ws))
	c.decision = make([]int, len(ws))
	c.entryCap = make([]int64, len(ws))
	c.forcedCap = make([]int64, len(ws))
	for wi, w := range ws {
		spec := w.spec
		demand := int64(w.demand)
		c.level[wi] = slices.Index(c.levels, spec.Priority)
		c.decision[wi] = undecided
		wNode := newNode()
		c.wNode[wi] = wNode
		c.entry[wi] = addArc(levelNode[c.level[wi]], wNode, demand, 0)
		c.forced[wi] = addArc(source, wNode, 0, 0)
		c.unplaced[wi] = addArc(wNode, sink, demand, 0)

		fixedCloud, fixedRegion, fixedZone := map[string]int{}, map[string]int{}, map[string]int{}
		for _, f := range w.fixed {
			fixedCloud[p.offers[f.offer].Cloud] += f.count
			fixedRegion[schema.RegionKey(p.offers[f.offer].Cloud, p.offers[f.offer].Region)] += f.count
			fixedZone[zoneOf(p.offers[f.offer].OfferKey)] += f.count
		}
		for _, h := range w.held {
			fixedCloud[h.offer.Cloud] += h.count
			fixedRegion[schema.RegionKey(h.offer.Cloud, h.offer.Region)] += h.count
			fixedZone[zoneOf(h.offer)] += h.count
		}
		cloudLayer := spec.Spread.MaxPerCloud < 1
		regionLayer := spec.Spread.MaxPerRegion < 1 || spec.Gang()
		cloudCap := func(cloud string) int64 {
			return max(0, int64(shareOf(spec.Spread.MaxPerCloud, spec.Nodes))-int64(fixedCloud[cloud]))
		}
		regionCap := func(region string) int64 {
			capacity := demand
			if spec.Spread.MaxPerRegion < 1 {
				capacity = min(capacity, max(0, int64(shareOf(spec.Spread.MaxPerRegion, spec.Nodes))-int64(fixedRegion[region])))
			}
			return capacity
		}
		// A zone's cap is an arc below its region's: the nodes of every
		// offer of the zone flow through it, so the flow holds it exactly.
		zoneLayer := spec.Spread.MaxPerZone > 0
		zoneCap := func(zone string) int64 {
			return min(demand, max(0, int64(spec.Spread.MaxPerZone)-int64(fixedZone[zone])))
		}
		cloudNode, regionNode, zoneNode := map[string]int{}, map[string]int{}, map[string]int{}
		var gang *gangArcs
		if spec.Gang() {
			gang = &gangArcs{workload: wi, demand: demand}
			c.gangs[wi] = gang
		}
		regionLeaf := func(o *Offer) int {
			from := wNode
			if cloudLayer {
				n, ok := cloudNode[o.Cloud]
				if !ok {
					n = newNode()
					cloudNode[o.Cloud] = n
					c.up[n] = link{addArc(wNode, n, cloudCap(o.Cloud), 0), wNode}
				}
				from = n
			}
			if !regionLayer {
				return from
			}
			group := spec.GangGroup(o.Cloud, o.Region, o.Zone)
			n, ok := regionNode[group]
			if !ok {
				n = newNode()
				regionNode[group] = n
				// A zone gang has no region spread (a gang has none), so
				// only a region's spread limit is ever asked for here.
				capacity := regionCap(group)
				arc := addArc(from, n, capacity, 0)
				c.up[n] = link{arc, from}
				if gang != nil {
					gang.regions = append(gang.regions, group)
					gang.capacity = append(gang.capacity, capacity)
					gang.into = append(gang.into, arc)
					gang.nodes = append(gang.nodes, nil)
				}
			}
			return n
		}
		placeLeaf := func(o *Offer) int {
			from := regionLeaf(o)
			if !zoneLayer {
				return from
			}
			zone := zoneOf(o.OfferKey)
			n, ok := zoneNode[zone]
			if !ok {
				n = newNode()
				zoneNode[zone] = n
				c.up[n] = link{addArc(from, n, zoneCap(zone), 0), from}
			}
			return n
		}
		// The candidates come in key order, so one leaf serves a run of
		// them: the last is remembered by its place.
		lastZone, leafNode := int32(-1), 0
		leaf := func(offer int) int {
			if p.zoneID[offer] != lastZone {
				lastZone, leafNode = p.zoneID[offer], placeLeaf(&p.offers[offer])
			}
			return leafNode
		}
		var member *hub // the hub the last candidate went through
		for ci, cand := range w.candidates {
			o := &p.offers[cand.offer]
			from := leaf(cand.offer)
			ca := candidateArcs{workload: wi, candidate: ci, add: noArc, keep: noArc, from: from}
			// The offer's node comes first, even where no arc will reach
			// it: nodes numbered in this order keep ties broken as they
			// always were.
			offerTo(cand.offer)
			if h := hubs.hubOf(wi, ci); h != nil {
				if h.node < 0 {
					h.node = newNode()
					for i, offer := range h.offers {
						to := offerTo(offer)
						h.out = append(h.out, link{addArc(h.node, to, mcf.Inf, h.costs[i]), to})
					}
					c.hubs = append(c.hubs, h)
				}
				if member != h {
					member = h
					h.members = append(h.members, hubMember{wi, addArc(from, h.node, mcf.Inf, cand.egress), from})
				}
			} else if p.hasAddArc(cand.offer) {
				ca.addTo = offerTo(cand.offer)
				ca.add = addArc(from, ca.addTo, mcf.Inf, cand.cost)
				if gang != nil {
					most := demand
					if o.Available != Unlimited {
						most = min(most, int64(o.Available))
					}
					gang.addNodes(spec.GangGroup(o.Cloud, o.Region, o.Zone), ca.add, most)
				}
			}
			if cand.running > 0 && spec.Movable {
				// Keeping a running node needs no new capacity, so the arc
				// skips the offer's node.
				ca.keepTo = target(cand.offer)
				ca.keep = addArc(from, ca.keepTo, int64(cand.running), cand.keepCost)
				if gang != nil {
					gang.addNodes(spec.GangGroup(o.Cloud, o.Region, o.Zone), ca.keep, min(demand, int64(cand.running)))
				}
			}
			if ca.add != noArc || ca.keep != noArc {
				c.arcs = append(c.arcs, ca)
			}
		}
		if gang != nil {
			p.closeSmallRegions(w, gang)
		}
	}
	for _, k := range slices.SortedFunc(maps.Keys(poolNode), compareReservations) {
		res := p.reserved[k]
		c.refunds[k] = addArc(poolNode[k], poolBase[k], int64(res.count), -res.refund)
		c.down[poolNode[k]] = link{c.refunds[k], poolBase[k]}
		c.poolRest[poolNode[k]] = addArc(poolNode[k], poolBase[k], mcf.Inf, 0)
	}

	c.g = mcf.New(nodes)
	c.g.Grow(len(arcs))
	c.money = make([]int64, len(arcs))
	c.openCapacity = make([]int64, len(arcs))
	for i, a := range arcs {
		c.g.AddArc(a.from, a.to, a.cap, a.cost)
		c.money[i] = a.cost
		c.openCapacity[i] = a.cap
	}
	c.classLo = make([]int64, len(c.classes))
	c.classHi = make([]int64, len(c.classes))
	c.resetClasses()
	c.excluded = make([][]bool, len(ws))
	c.banned = make([][]bool, len(ws))
	c.regionPenalty = make([][]int64, len(ws))
	c.leastPenalty = make([]int64, len(ws))
	for wi, gang := range c.gangs {
		if gang != nil {
			c.excluded[wi] = make([]bool, len(gang.into))
			c.banned[wi] = make([]bool, len(gang.into))
			c.regionPenalty[wi] = make([]int64, len(gang.into))
		}
	}
	c.budget = p.componentBudget(c, len(arcs))
	return c
}

func compareReservations(a, b reservationKey) int {
	return cmp.Or(cmp.Compare(a.cloud, b.cloud), cmp.Compare(a.region, b.region), cmp.Compare(a.instanceType, b.instanceType))
}

// closeSmallRegions closes to a gang the regions whose offers, with the
// gang's nodes already running there, cannot hold all of it: it never runs
// there whole, and letting the relaxation put part of it there only
// weakens the bound.
func (p *planning) closeSmallRegions(w *workload, g *gangArcs) {
	room := map[string]int64{}
	for _, cand := range w.candidates {
		o := &p.offers[cand.offer]
		n := int64(cand.running)
		if !p.blocked[o.OfferKey] {
			if o.Available == Unlimited {
				n = mcf.Inf
			} else {
				n += int64(o.Available)
			}
		}
		group := w.spec.GangGroup(o.Cloud, o.Region, o.Zone)
		room[group] = min(mcf.Inf, room[group]+min(n, mcf.Inf-room[group]))
	}
	for r, region := range g.regions {
		if room[region] < g.demand {
			g.capacity[r] = 0
		}
	}
}

// shareOf is how many of n nodes a share allows, rounded down, with a
// little slack for shares like 0.3 that binary floating point cannot hold.
// zoneOf names an offer's zone uniquely: Azure's zones are "1", "2" and
// "3" in every region.
func zoneOf(k OfferKey) string { return k.Cloud + "/" + k.Region + "/" + k.Zone }

func shareOf(share float64, n int) int {
	return int(math.Floor(share*float64(n) + 1e-9))
}
