// SPDX-License-Identifier: Apache-2.0

package mcf

import (
	"fmt"
	"math"
	"math/bits"
)

// Solve finds a flow of exactly demand units from source to sink whose total
// cost is minimal, and leaves it on the arcs for Flow. When only costs have
// changed since the last Solve succeeded, for the same source, sink and
// demand, it starts from that Solve's flow and tree, which are still
// feasible, and pivots from there: a warm start, far cheaper than starting
// over when few costs changed, as when branch and bound prices a choice out.
// Otherwise it starts from zero flow. Among flows of equal cost, which one
// it returns can depend on where it started; the cost cannot.
//
// To send as much as possible instead, add an overflow arc that can carry the
// shortfall at a cost above that of any real route (the planner's
// "unplaced" arcs): the optimum then uses it only for what cannot get
// through otherwise.
//
// Solve requires that no cycle of arcs with positive capacity has negative
// total cost (it returns ErrNegativeCycle otherwise) and that the sum of
// |cost| over those arcs is at most 2^59 (ErrOverflow); negative costs on
// single arcs are fine. It returns ErrInfeasible if the demand does not fit,
// ErrInvalid for bad input, and after any error Flow reports 0 for every arc.
//
// The algorithm is the primal network simplex, described in simplex.go.
// Cost: O(n + arcs) to set up; if some arc costs less than zero, a
// Bellman-Ford check for negative cycles that takes one pass over the arcs
// per arc on the longest shortest path, so a few passes on a layered graph
// like the planner's and O(n * arcs) at worst; a Dijkstra search for the
// starting tree, O(arcs log n); then the pivots, each O(sqrt(arcs) + tree
// depth + nodes re-hung). On planner-shaped graphs there is about one pivot
// for every three to ten arcs. Solve allocates only when the graph has grown
// since the last Solve.
func (g *Graph) Solve(source, sink int, demand int64) (Result, error) {
	return g.solve(source, sink, demand, nil)
}

// solve is Solve, from flow when that is a feasible start (SolveFrom).
func (g *Graph) solve(source, sink int, demand int64, flow []int64) (Result, error) {
	g.solved = false
	costSum, err := g.check(source, sink, demand)
	if err != nil {
		return Result{}, err
	}
	if err := g.checkCycles(); err != nil {
		return Result{}, err
	}
	// Costlier than any path of real arcs, so that flow stays on an
	// artificial arc only when no real route is left.
	req := request{source, sink, demand}
	fromFlow := flow != nil && g.feasible(source, sink, demand, flow)
	switch {
	case fromFlow:
		g.basis.initFrom(g, int32(sink), costSum+1, flow)
	case g.warm && g.last == req:
		g.basis.reprice(g, costSum+1)
	default:
		g.basis.init(g, int32(source), int32(sink), demand, costSum+1, g.pot)
	}
	g.warm = false
	if err := g.basis.run(); err != nil {
		return Result{}, fmt.Errorf("routing %d units from node %d to node %d, %w", demand, source, sink, err)
	}
	for v := range g.n {
		if units := g.basis.flow[g.basis.m+v]; units != 0 {
			return Result{}, fmt.Errorf("routing %d units from node %d to node %d, %d of them stuck at node %d, %w",
				demand, source, sink, units, v, ErrInfeasible)
		}
	}
	cost, err := g.totalCost()
	if err != nil {
		return Result{}, err
	}
	g.solved, g.warm, g.last = true, true, req
	return Result{Flow: demand, Cost: cost, FromFlow: fromFlow, Pivots: g.basis.pivots}, nil
}

// check validates the problem and returns the sum of |cost| over arcs that
// can carry flow.
func (g *Graph) check(source, sink int, demand int64) (int64, error) {
	if g.err != nil {
		return 0, g.err
	}
	switch {
	case source < 0 || source >= g.n || sink < 0 || sink >= g.n:
		return 0, fmt.Errorf("solving from node %d to node %d, nodes are 0 to %d, %w", source, sink, g.n-1, ErrInvalid)
	case source == sink:
		return 0, fmt.Errorf("solving from node %d to itself, %w", source, ErrInvalid)
	case demand < 0:
		return 0, fmt.Errorf("solving for demand %d, %w", demand, ErrInvalid)
	}
	var sum int64
	for i, a := range g.arcs {
		if a.capacity == 0 {
			continue
		}
		// Checked before negating, so that math.MinInt64 cannot wrap.
		if a.cost > maxCostSum || a.cost < -maxCostSum {
			return 0, fmt.Errorf("checking arc %d with cost %d, %w", i, a.cost, ErrOverflow)
		}
		sum += max(a.cost, -a.cost)
		if sum > maxCostSum {
			return 0, fmt.Errorf("summing arc costs past %d, %w", maxCostSum, ErrOverflow)
		}
	}
	return sum, nil
}

// checkCycles returns ErrNegativeCycle if arcs with capacity form a cycle of
// negative cost, and otherwise leaves in g.pot potentials under which every
// such arc has a non-negative reduced cost. Both come from Bellman-Ford from
// a virtual node joined to every node: its distances settle exactly when
// there is no negative cycle. Without one, no distance falls below the sum
// of the negative costs, so crossing that floor proves one early, before
// any sum can wrap.
func (g *Graph) checkCycles() error {
	pot := grow(g.pot, g.n)
	g.pot = pot
	clear(pot)
	var floor int64
	for i, a := range g.arcs {
		if a.capacity == 0 || a.cost >= 0 {
			continue
		}
		if a.from == a.to {
			return fmt.Errorf("checking arc %d, a self-loop of cost %d, %w", i, a.cost, ErrNegativeCycle)
		}
		floor += a.cost
	}
	if floor == 0 {
		return nil
	}
	for range g.n {
		changed := false
		for i, a := range g.arcs {
			if a.capacity == 0 || pot[a.from]+a.cost >= pot[a.to] {
				continue
			}
			pot[a.to] = pot[a.from] + a.cost
			if pot[a.to] < floor {
				return fmt.Errorf("relaxing arc %d from node %d to node %d, %w", i, a.from, a.to, ErrNegativeCycle)
			}
			changed = true
		}
		if !changed {
			return nil
		}
	}
	return fmt.Errorf("still relaxing arcs after %d passes, %w", g.n, ErrNegativeCycle)
}

// totalCost sums flow times cost over the arcs, failing rather than wrapping.
func (g *Graph) totalCost() (int64, error) {
	var total int64
	for i, a := range g.arcs {
		flow := g.basis.flow[i]
		if flow == 0 || a.cost == 0 {
			continue
		}
		hi, lo := bits.Mul64(uint64(flow), uint64(max(a.cost, -a.cost)))
		if hi != 0 || lo > math.MaxInt64 {
			return 0, fmt.Errorf("multiplying flow %d by cost %d on arc %d, %w", flow, a.cost, i, ErrOverflow)
		}
		term := int64(lo)
		if a.cost < 0 {
			term = -term
		}
		sum := total + term
		if (term > 0 && sum < total) || (term < 0 && sum > total) {
			return 0, fmt.Errorf("adding the cost of arc %d, %w", i, ErrOverflow)
		}
		total = sum
	}
	return total, nil
}

// grow returns s resized to n, reusing its array when it is big enough.
func grow[T any](s []T, n int) []T {
	if cap(s) >= n {
		return s[:n]
	}
	return make([]T, n)
}
