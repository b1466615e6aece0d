// SPDX-License-Identifier: Apache-2.0

package mcf

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// Inf is a capacity that never binds. It sits well below the int64 limit so
// that a caller summing a few capacities, one of them Inf, does not wrap.
const Inf int64 = 1 << 62

// maxCostSum bounds the sum of |cost| over arcs that can carry flow. A node
// potential in the simplex is the root's, kept within this bound of 0, plus
// the costs along the node's tree path, which holds at most one artificial
// arc costing one more than the sum. So potentials stay below 2^61 and
// reduced costs below 2^62.
const maxCostSum int64 = 1 << 59

// maxNodes and maxArcs keep the indices of the simplex, which adds a root
// node and an artificial arc per node, inside int32.
const (
	maxNodes = math.MaxInt32/2 - 1
	maxArcs  = math.MaxInt32/2 - 1
)

var (
	// ErrInvalid reports a graph or a request that cannot be solved as
	// posed: a node index out of range, a negative capacity or demand, or a
	// source equal to the sink.
	ErrInvalid = errors.New("invalid flow problem")
	// ErrInfeasible reports that the arcs cannot carry the whole demand from
	// source to sink.
	ErrInfeasible = errors.New("demand cannot be met")
	// ErrNegativeCycle reports a cycle of arcs with positive capacity whose
	// costs sum below zero. Flow around it lowers the cost while carrying
	// none of the demand, which in a placement graph means a bug in how it
	// was built, so Solve refuses the graph.
	ErrNegativeCycle = errors.New("negative-cost cycle")
	// ErrOverflow reports costs too large to add up in int64.
	ErrOverflow = errors.New("cost overflows int64")
)

// ArcID names an arc of a Graph. AddArc hands them out densely from 0 in
// the order arcs are added, so callers may index their own slices by them.
type ArcID int

// Result is the outcome of a successful Solve.
type Result struct {
	// Flow is the number of units sent from source to sink: the demand.
	Flow int64
	// Cost is the sum over arcs of flow times cost.
	Cost int64
	// FromFlow says SolveFrom started from the flow it was given.
	FromFlow bool
	// Pivots counts the simplex's pivots, a measure of the work done.
	Pivots int
}

// Graph is a directed graph with capacities and costs on its arcs, and the
// scratch space to solve min-cost flow problems on it. Parallel arcs and
// self-loops are allowed. A Graph is not safe for concurrent use.
type Graph struct {
	n    int
	arcs []arc
	// err is the first invalid AddArc or SetCapacity. Those methods have no
	// error result so that building a graph reads as a list of arcs; Solve
	// reports the error instead.
	err error

	// solved says the basis holds the answer of the last Solve, for Flow
	// and ReducedCost.
	solved bool
	// warm says the basis holds an optimal tree for the current arcs and
	// capacities and the request last, so that a Solve after changing only
	// costs can start from it: its flow is still feasible.
	warm bool
	last request
	// basis is the network simplex's working state, kept between Solves so
	// that solving again allocates nothing.
	basis simplex
	// pot holds the potentials checkCycles finds, for the starting tree,
	// and balance each node's net inflow, to check a starting flow.
	pot, balance []int64
}

// request is what a Solve was asked for.
type request struct {
	source, sink int
	demand       int64
}

type arc struct {
	from, to int32
	capacity int64
	cost     int64
}

// New returns a graph on nodes 0 to n-1 with no arcs. A negative n is
// reported by Solve.
func New(n int) *Graph {
	g := &Graph{}
	g.Reset(n)
	return g
}

// Reset empties g to n nodes and no arcs in O(1), keeping the memory of its
// slices so that building a similar graph again allocates little.
func (g *Graph) Reset(n int) {
	g.n = n
	g.arcs = g.arcs[:0]
	g.err = nil
	g.solved, g.warm = false, false
	if n < 0 || n > maxNodes {
		g.n = 0
		g.err = fmt.Errorf("creating a graph of %d nodes, %w", n, ErrInvalid)
	}
}

// Grow makes room for n more arcs, so that adding them allocates once.
func (g *Graph) Grow(n int) { g.arcs = slices.Grow(g.arcs, n) }

// AddArc adds an arc from one node to another that can carry up to capacity
// units at cost per unit, and returns its ID. Capacity Inf, or any capacity
// at least the demand, means unbounded. A node out of range or a negative
// capacity is reported by the next Solve, not here, so AddArc never panics.
func (g *Graph) AddArc(from, to int, capacity, cost int64) ArcID {
	id := ArcID(len(g.arcs))
	switch {
	case from < 0 || from >= g.n || to < 0 || to >= g.n:
		g.fail(fmt.Errorf("adding arc %d from node %d to node %d, nodes are 0 to %d, %w", id, from, to, g.n-1, ErrInvalid))
		from, to = 0, 0
	case capacity < 0:
		g.fail(fmt.Errorf("adding arc %d with capacity %d, %w", id, capacity, ErrInvalid))
		capacity = 0
	case len(g.arcs) >= maxArcs:
		g.fail(fmt.Errorf("adding arc %d, more than %d arcs, %w", id, maxArcs, ErrInvalid))
	}
	g.arcs = append(g.arcs, arc{from: int32(from), to: int32(to), capacity: capacity, cost: cost})
	g.solved, g.warm = false, false
	return id
}

// SetCapacity changes the capacity of arc a in O(1): the cheap way to solve
// variants of one graph, such as closing an arc with capacity 0. Setting
// the capacity an arc already has changes nothing. A negative
// capacity is reported by the next Solve. It panics if a was not returned by
// AddArc since the last Reset, like an out-of-range slice index.
func (g *Graph) SetCapacity(a ArcID, capacity int64) {
	g.arc(a)
	if capacity < 0 {
		g.fail(fmt.Errorf("setting arc %d to capacity %d, %w", a, capacity, ErrInvalid))
		capacity = 0
	}
	if g.arcs[a].capacity != capacity {
		g.arcs[a].capacity = capacity
		g.solved, g.warm = false, false
	}
}

// SetCost changes the cost of arc a in O(1), to solve the same graph for
// another objective. The last optimal flow stays feasible, so the next
// Solve starts from it (see Solve). It panics if a was not returned by
// AddArc since the last Reset.
func (g *Graph) SetCost(a ArcID, cost int64) {
	g.arc(a)
	g.arcs[a].cost = cost
	g.solved = false
}

// Flow returns the flow on arc a found by the last Solve, or 0 if that Solve
// failed or the graph has changed since. It panics if a was not returned by
// AddArc since the last Reset.
func (g *Graph) Flow(a ArcID) int64 {
	g.arc(a)
	if !g.solved {
		return 0
	}
	return g.basis.flow[a]
}

// ReducedCost returns cost(a) + p(from) - p(to) for the node potentials p
// (the dual) that prove the last Solve optimal, or 0 if there is no such
// Solve. It is >= 0 on every arc with spare capacity and <= 0 on every arc
// with flow. It is a lower-bound hook for branch and bound: any other flow
// of the same demand within the same or smaller capacities costs exactly
// Result.Cost plus the sum over arcs of ReducedCost(a) * (its flow on a -
// Flow(a)), and no term of that sum is negative. So forcing k units onto an
// arc without flow costs at least k * ReducedCost(a) more, and so does
// taking k units off a full arc with a negative one, at -k * ReducedCost(a).
// It is O(1), and panics if a was not returned by AddArc since the last
// Reset.
func (g *Graph) ReducedCost(a ArcID) int64 {
	g.arc(a)
	if !g.solved {
		return 0
	}
	e := g.arcs[a]
	return e.cost + g.basis.potential[e.from] - g.basis.potential[e.to]
}

func (g *Graph) arc(a ArcID) {
	if a < 0 || int(a) >= len(g.arcs) {
		panic(fmt.Sprintf("mcf: arc %d out of range, the graph has %d arcs", a, len(g.arcs)))
	}
}

func (g *Graph) fail(err error) {
	if g.err == nil {
		g.err = err
	}
}
