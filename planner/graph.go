package planner

import (
	"cmp"
	"maps"
	"math"
	"slices"

	"github.com/gpufleet/gpufleet/planner/mcf"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// The flow network of one component, from source to sink:
//
//	source ─(demand)─► W ─(cloud share)─► C ─(region share)─► R ─► offer ─(available)─► sink
//	                   └──────────────(unplaced, priced by priority)──────────────────────┘
//
// The cloud layer exists only when a workload limits its share per cloud,
// the region layer when it limits its share per region or is a gang. An
// offer with no known capacity limit needs no node of its own: the arc from
// the workload goes straight to the sink. Reserved capacity adds a pool
// node between a reserved type's offers and the sink, with a refund arc
// worth the type's price for as many nodes as were reserved.

// component is a set of workloads that compete for the same limited
// offers or reservations, solved as one flow problem.
type component struct {
	p         *planning
	workloads []*workload
	g         *mcf.Graph
	demand    int64
	arcs      []candidateArcs
	unplaced  []mcf.ArcID
	gangs     []*gangArcs
	refunds   map[reservationKey]mcf.ArcID
	// cost of the current solution, including unplaced penalties.
	cost int64
}

// candidateArcs are the arcs that carry one workload's nodes to one offer.
type candidateArcs struct {
	workload, candidate int
	add, keep           mcf.ArcID
}

const noArc mcf.ArcID = -1

// gangArcs are the handles branch and bound turns to confine a gang to one
// region: the arcs into each region node and the unplaced arc.
type gangArcs struct {
	workload int
	regions  []string
	into     []mcf.ArcID
	capacity []int64
	unplaced mcf.ArcID
	demand   int64
}

// components splits the workloads into groups that share no limited offer
// and no reservation. Each can be solved on its own, which keeps graphs
// small and lets a gang's branch and bound touch only its rivals.
func (p *planning) components() [][]*workload {
	parent := make([]int, len(p.workloads)+len(p.offers)+len(p.reserved))
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
	for _, w := range p.workloads {
		for _, c := range w.candidates {
			o := &p.offers[c.offer]
			if o.Available != Unlimited {
				union(w.index, len(p.workloads)+c.offer)
			}
			if k, ok := p.pool(o); ok {
				union(w.index, len(p.workloads)+len(p.offers)+pools[k])
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
	if o.Market != catalog.OnDemand {
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
	var arcs []arcSpec
	nodes := 2 // source, sink
	const source, sink = 0, 1
	newNode := func() int { nodes++; return nodes - 1 }
	// mcf numbers arcs densely in the order they are added, so an arc's id
	// is its place in this list.
	addArc := func(from, to int, capacity, cost int64) mcf.ArcID {
		arcs = append(arcs, arcSpec{from, to, capacity, cost})
		return mcf.ArcID(len(arcs) - 1)
	}

	offerNode := map[int]int{}
	poolNode := map[reservationKey]int{}
	target := func(offer int) int {
		o := &p.offers[offer]
		if k, ok := p.pool(o); ok {
			n, ok := poolNode[k]
			if !ok {
				n = newNode()
				poolNode[k] = n
			}
			return n
		}
		return sink
	}

	c.unplaced = make([]mcf.ArcID, len(ws))
	c.gangs = make([]*gangArcs, len(ws))
	for wi, w := range ws {
		spec := w.spec
		demand := int64(w.demand)
		c.demand += demand
		wNode := newNode()
		addArc(source, wNode, demand, 0)
		// Unplaced nodes cost more than any placement, and more the higher
		// the priority, so a shortfall falls on the lowest priority.
		penalty := p.unplacedPenalty(spec.Priority)
		c.unplaced[wi] = addArc(wNode, sink, demand, penalty)

		fixedCloud, fixedRegion := map[string]int{}, map[string]int{}
		for _, f := range w.fixed {
			fixedCloud[p.offers[f.offer].Cloud] += f.count
			fixedRegion[p.offers[f.offer].Region] += f.count
		}
		for _, h := range w.held {
			fixedCloud[h.offer.Cloud] += h.count
			fixedRegion[h.offer.Region] += h.count
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
		cloudNode, regionNode := map[string]int{}, map[string]int{}
		var gang *gangArcs
		if spec.Gang() {
			gang = &gangArcs{workload: wi, demand: demand}
			c.gangs[wi] = gang
		}
		leaf := func(o *Offer) int {
			from := wNode
			if cloudLayer {
				n, ok := cloudNode[o.Cloud]
				if !ok {
					n = newNode()
					cloudNode[o.Cloud] = n
					addArc(wNode, n, cloudCap(o.Cloud), 0)
				}
				from = n
			}
			if !regionLayer {
				return from
			}
			n, ok := regionNode[o.Region]
			if !ok {
				n = newNode()
				regionNode[o.Region] = n
				capacity := regionCap(o.Region)
				arc := addArc(from, n, capacity, 0)
				if gang != nil {
					gang.regions = append(gang.regions, o.Region)
					gang.capacity = append(gang.capacity, capacity)
					gang.into = append(gang.into, arc)
				}
			}
			return n
		}
		for ci, cand := range w.candidates {
			o := &p.offers[cand.offer]
			from := leaf(o)
			ca := candidateArcs{workload: wi, candidate: ci, add: noArc, keep: noArc}
			to := target(cand.offer)
			if o.Available != Unlimited {
				n, ok := offerNode[cand.offer]
				if !ok {
					n = newNode()
					offerNode[cand.offer] = n
					addArc(n, to, int64(o.Available), 0)
				}
				to = n
			}
			if !p.blocked[o.OfferKey] && o.Available != 0 {
				ca.add = addArc(from, to, mcf.Inf, cand.cost)
			}
			if cand.running > 0 && spec.Movable {
				// Keeping a running node needs no new capacity, so the arc
				// skips the offer's node.
				ca.keep = addArc(from, target(cand.offer), int64(cand.running), cand.keepCost)
			}
			c.arcs = append(c.arcs, ca)
		}
		if gang != nil {
			gang.unplaced = c.unplaced[wi]
		}
	}
	for _, k := range slices.SortedFunc(maps.Keys(poolNode), compareReservations) {
		res := p.reserved[k]
		c.refunds[k] = addArc(poolNode[k], sink, int64(res.count), -res.refund)
		addArc(poolNode[k], sink, mcf.Inf, 0)
	}

	c.g = mcf.New(nodes)
	for _, a := range arcs {
		c.g.AddArc(a.from, a.to, a.cap, a.cost)
	}
	return c
}

func compareReservations(a, b reservationKey) int {
	return cmp.Or(cmp.Compare(a.cloud, b.cloud), cmp.Compare(a.region, b.region), cmp.Compare(a.instanceType, b.instanceType))
}

// unplacedPenalty is what leaving one node unplaced costs the optimiser:
// more than any node costs placed, so placing always wins, and more the
// higher the priority, so a shortfall falls on the lowest priority. It uses
// the costliest candidate of the whole plan, not of a component, so that
// the objective is one function of the input however it is split.
func (p *planning) unplacedPenalty(priority int) int64 {
	return (p.maxCost + 1) * int64(priority+1)
}

// shareOf is how many of n nodes a share allows, rounded down, with a
// little slack for shares like 0.3 that binary floating point cannot hold.
func shareOf(share float64, n int) int {
	return int(math.Floor(share*float64(n) + 1e-9))
}
