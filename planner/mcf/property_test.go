// SPDX-License-Identifier: Apache-2.0

package mcf

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSolveMatchesBruteForce compares Solve with an enumeration of every
// integral flow on small random graphs, including graphs with negative
// costs, parallel arcs, self-loops, zero capacities and negative cycles.
func TestSolveMatchesBruteForce(t *testing.T) {
	const graphs = 3000
	var solved, infeasible, cyclic int
	for seed := range uint64(graphs) {
		rng := rand.New(rand.NewPCG(seed, 1))
		n := 2 + rng.IntN(5)
		arcs := make([]testArc, rng.IntN(10))
		for i := range arcs {
			cost := int64(rng.IntN(10))
			if rng.IntN(4) == 0 {
				cost = -1 - int64(rng.IntN(5))
			}
			arcs[i] = testArc{rng.IntN(n), rng.IntN(n), int64(rng.IntN(4)), cost}
		}
		source := rng.IntN(n)
		sink := (source + 1 + rng.IntN(n-1)) % n
		demand := int64(rng.IntN(5))

		g, ids := buildGraph(n, arcs)
		res, err := g.Solve(source, sink, demand)
		checkBasis(t, g)

		circulation, _ := bruteForce(n, arcs, source, sink, 0)
		best, feasible := bruteForce(n, arcs, source, sink, demand)
		switch {
		case circulation < 0:
			cyclic++
			if !errors.Is(err, ErrNegativeCycle) {
				t.Fatalf("seed %d: %v: a circulation costs %d, but Solve() = %+v, %v; want %v",
					seed, arcs, circulation, res, err, ErrNegativeCycle)
			}
		case !feasible:
			infeasible++
			if !errors.Is(err, ErrInfeasible) {
				t.Fatalf("seed %d: %v from %d to %d demand %d: Solve() = %+v, %v; want %v",
					seed, arcs, source, sink, demand, res, err, ErrInfeasible)
			}
		default:
			solved++
			if err != nil {
				t.Fatalf("seed %d: %v from %d to %d demand %d: Solve() error = %v, want cost %d",
					seed, arcs, source, sink, demand, err, best)
			}
			if res.Cost != best || res.Flow != demand {
				t.Fatalf("seed %d: %v from %d to %d demand %d: Solve() = %+v, brute force costs %d",
					seed, arcs, source, sink, demand, res, best)
			}
			got := flows(g, ids)
			checkFlow(t, n, arcs, got, source, sink, demand)
			if total := dot(arcs, got); total != res.Cost {
				t.Fatalf("seed %d: flows %v cost %d, Result says %d", seed, got, total, res.Cost)
			}
			checkReducedCosts(t, g, arcs, ids)
		}
		if t.Failed() {
			t.Fatalf("seed %d: %v from %d to %d demand %d", seed, arcs, source, sink, demand)
		}
	}
	// A generator that stopped producing one of the outcomes would leave it
	// untested without anyone noticing.
	if solved < 500 || infeasible < 100 || cyclic < 100 {
		t.Errorf("outcomes: %d solved, %d infeasible, %d negative cycles; want at least 500, 100, 100",
			solved, infeasible, cyclic)
	}
}

// bruteForce returns the least cost of an integral flow of exactly demand
// units from source to sink, and whether there is one. With demand 0 it
// prices circulations, which cost less than zero exactly when the graph
// has a negative cycle.
func bruteForce(n int, arcs []testArc, source, sink int, demand int64) (int64, bool) {
	want := make([]int64, n) // inflow - outflow
	want[source] -= demand
	want[sink] += demand
	// A node's balance is final once its last arc is set, so it is checked
	// there and hopeless branches end early.
	last := make([]int, n)
	for v := range last {
		last[v] = -1
	}
	for i, a := range arcs {
		last[a.from] = i
		last[a.to] = i
	}
	for v, l := range last {
		if l < 0 && want[v] != 0 {
			return 0, false
		}
	}
	net := make([]int64, n)
	best, found := int64(math.MaxInt64), false
	var walk func(i int, cost int64)
	walk = func(i int, cost int64) {
		if i == len(arcs) {
			if cost < best {
				best = cost
			}
			found = true
			return
		}
		a := arcs[i]
		for f := range a.capacity + 1 {
			net[a.from] -= f
			net[a.to] += f
			if (last[a.from] != i || net[a.from] == want[a.from]) && (last[a.to] != i || net[a.to] == want[a.to]) {
				walk(i+1, cost+f*a.cost)
			}
			net[a.from] += f
			net[a.to] -= f
		}
	}
	walk(0, 0)
	return best, found
}

func dot(arcs []testArc, flow []int64) int64 {
	var total int64
	for i, a := range arcs {
		total += a.cost * flow[i]
	}
	return total
}

// TestSolveOptimalOnLargerGraphs checks Solve on graphs too big to enumerate
// by the optimality condition: a flow is of minimum cost exactly when its
// residual network has no negative cycle, which is checked here by
// Bellman-Ford, independently of the potentials Solve keeps.
func TestSolveOptimalOnLargerGraphs(t *testing.T) {
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 2))
		var n, source, sink int
		var arcs []testArc
		var demand int64
		if seed%2 == 0 {
			// Layered, so negative costs cannot close a cycle.
			n, arcs = randomLayered(rng)
			source, sink = 0, n-1
			demand = int64(1 + rng.IntN(40))
		} else {
			p := placement{
				workloads:   5 + rng.IntN(20),
				offers:      10 + rng.IntN(60),
				maxEligible: 3 + rng.IntN(10),
				families:    1 + rng.IntN(3),
				keepBonus:   true,
			}
			var total int64
			n, arcs, total = p.build(rng)
			source, sink = 0, 1
			// Up to one more than fits, which is infeasible.
			demand = int64(rng.IntN(int(total) + 2))
		}
		g, ids := buildGraph(n, arcs)
		res, err := g.Solve(source, sink, demand)
		checkBasis(t, g)
		if errors.Is(err, ErrInfeasible) {
			continue
		}
		if err != nil {
			t.Fatalf("seed %d: Solve() error = %v", seed, err)
		}
		got := flows(g, ids)
		checkFlow(t, n, arcs, got, source, sink, demand)
		checkReducedCosts(t, g, arcs, ids)
		if total := dot(arcs, got); total != res.Cost {
			t.Errorf("seed %d: flows cost %d, Result says %d", seed, total, res.Cost)
		}
		if residualHasNegativeCycle(n, arcs, got) {
			t.Errorf("seed %d: the residual network has a negative cycle, so cost %d is not minimal", seed, res.Cost)
		}
		if t.Failed() {
			t.FailNow()
		}
	}
}

// randomLayered returns a graph whose arcs go from lower to higher layers,
// with node 0 alone in the first layer and the last node alone in the last.
func randomLayered(rng *rand.Rand) (int, []testArc) {
	layers := 3 + rng.IntN(4)
	layer := []int{0}
	for range layers - 2 {
		layer = append(layer, layer[len(layer)-1]+1+rng.IntN(8))
	}
	n := layer[len(layer)-1] + 2
	layer = append(layer, n-1, n)
	var arcs []testArc
	for l := range layers - 1 {
		for u := layer[l]; u < layer[l+1]; u++ {
			for v := layer[l+1]; v < layer[l+2]; v++ {
				if rng.IntN(3) > 0 {
					arcs = append(arcs, testArc{u, v, int64(rng.IntN(6)), int64(rng.IntN(30) - 8)})
				}
			}
		}
	}
	return n, arcs
}

func residualHasNegativeCycle(n int, arcs []testArc, flow []int64) bool {
	var residual []testArc
	for i, a := range arcs {
		if flow[i] < a.capacity {
			residual = append(residual, testArc{a.from, a.to, 1, a.cost})
		}
		if flow[i] > 0 {
			residual = append(residual, testArc{a.to, a.from, 1, -a.cost})
		}
	}
	dist := make([]int64, n)
	for range n {
		changed := false
		for _, a := range residual {
			if dist[a.from]+a.cost < dist[a.to] {
				dist[a.to] = dist[a.from] + a.cost
				changed = true
			}
		}
		if !changed {
			return false
		}
	}
	return true
}

// TestDeterministic builds the same graph twice and expects the same flow on
// every arc, and the same again when one graph is solved a second time.
func TestDeterministic(t *testing.T) {
	p := placement{workloads: 200, offers: 2000, maxEligible: 100, families: 1, keepBonus: true}
	var runs [][]int64
	for range 2 {
		n, arcs, demand := p.build(rand.New(rand.NewPCG(7, 7)))
		g, ids := buildGraph(n, arcs)
		for range 2 {
			if _, err := g.Solve(0, 1, demand); err != nil {
				t.Fatalf("Solve() error = %v", err)
			}
			runs = append(runs, flows(g, ids))
		}
	}
	for i, run := range runs[1:] {
		if !slices.Equal(run, runs[0]) {
			t.Fatalf("run %d differs from run 0", i+1)
		}
	}
}

// checkBasis fails t unless the simplex's spanning tree is consistent: the
// thread visits every node once in a preorder that agrees with parent, size
// and last, tree arcs join each node to its parent and have zero reduced
// cost, and flows lie within capacities.
func checkBasis(t *testing.T, g *Graph) {
	t.Helper()
	s := &g.basis
	if s.n != g.n || s.thread == nil {
		return // Solve stopped before building a basis
	}
	root := int32(s.n)
	order := []int32{root}
	for v := s.thread[root]; v != root; v = s.thread[v] {
		if len(order) > s.n {
			t.Fatalf("thread does not return to the root")
		}
		order = append(order, v)
	}
	if len(order) != s.n+1 {
		t.Fatalf("thread visits %d nodes, want %d", len(order), s.n+1)
	}
	position := make([]int, s.n+1)
	for i, v := range order {
		position[v] = i
		if s.revThread[s.thread[v]] != v {
			t.Fatalf("revThread[thread[%d]] = %d", v, s.revThread[s.thread[v]])
		}
	}
	children := make([]int32, s.n+1)
	for _, v := range order[1:] {
		p := s.parent[v]
		if position[p] >= position[v] {
			t.Fatalf("node %d comes before its parent %d in the thread", v, p)
		}
		children[p] += s.size[v]
		e := s.pred[v]
		if s.state[e] != inTree {
			t.Fatalf("node %d hangs by arc %d in state %d", v, e, s.state[e])
		}
		tail, head := p, v
		if s.upward[v] {
			tail, head = v, p
		}
		if s.tail[e] != tail || s.head[e] != head {
			t.Fatalf("node %d: arc %d does not join it to parent %d as upward=%t says", v, e, p, s.upward[v])
		}
		if rc := s.cost[e] + s.potential[s.tail[e]] - s.potential[s.head[e]]; rc != 0 {
			t.Fatalf("tree arc %d has reduced cost %d", e, rc)
		}
	}
	for _, v := range order {
		if s.size[v] != 1+children[v] {
			t.Fatalf("size[%d] = %d, want %d", v, s.size[v], 1+children[v])
		}
		end := position[v] + int(s.size[v]) - 1
		if order[end] != s.last[v] {
			t.Fatalf("last[%d] = %d, want %d", v, s.last[v], order[end])
		}
		for _, u := range order[position[v]+1 : end+1] {
			a := u
			for a != v && a != root {
				a = s.parent[a]
			}
			if a != v {
				t.Fatalf("node %d lies in the run of %d but not below it", u, v)
			}
		}
	}
	inTreeCount := 0
	for e, st := range s.state {
		if st == inTree {
			inTreeCount++
		}
		if s.flow[e] < 0 || s.flow[e] > s.capacity[e] {
			t.Fatalf("arc %d carries %d outside [0, %d]", e, s.flow[e], s.capacity[e])
		}
	}
	if inTreeCount != s.n {
		t.Fatalf("%d arcs in the tree, want %d", inTreeCount, s.n)
	}
}

// TestWarmStartMatchesAFreshGraph changes costs between Solves, as branch
// and bound does when it prices a choice out, and checks every warm Solve
// against a cold Solve of a fresh graph with the same arcs: the same cost,
// a valid basis, and no negative cycle left in the residual network.
func TestWarmStartMatchesAFreshGraph(t *testing.T) {
	warm := 0
	for seed := uint64(0); seed < 5000 && warm < 2000; seed++ {
		rng := rand.New(rand.NewPCG(seed, 3))
		n, arcs := randomLayered(rng)
		source, sink := 0, n-1
		demand := int64(1 + rng.IntN(6))
		g, ids := buildGraph(n, arcs)
		if _, err := g.Solve(source, sink, demand); errors.Is(err, ErrInfeasible) {
			continue
		} else if err != nil {
			t.Fatalf("seed %d: Solve() error = %v", seed, err)
		}
		for round := range 10 {
			for range 1 + rng.IntN(4) {
				i := rng.IntN(len(arcs))
				arcs[i].cost = int64(rng.IntN(60) - 8)
				if rng.IntN(4) == 0 {
					arcs[i].cost = 1000 // priced out
				}
				g.SetCost(ids[i], arcs[i].cost)
			}
			wasWarm := g.warm
			res, err := g.Solve(source, sink, demand)
			if err != nil {
				t.Fatalf("seed %d round %d: warm Solve() error = %v", seed, round, err)
			}
			if wasWarm {
				warm++
			}
			checkBasis(t, g)
			got := flows(g, ids)
			checkFlow(t, n, arcs, got, source, sink, demand)
			checkReducedCosts(t, g, arcs, ids)
			fresh, _ := buildGraph(n, arcs)
			want, err := fresh.Solve(source, sink, demand)
			if err != nil {
				t.Fatalf("seed %d round %d: cold Solve() error = %v", seed, round, err)
			}
			if res.Cost != want.Cost || dot(arcs, got) != res.Cost {
				t.Fatalf("seed %d round %d: warm cost %d (flows %d), cold %d", seed, round, res.Cost, dot(arcs, got), want.Cost)
			}
			if residualHasNegativeCycle(n, arcs, got) {
				t.Fatalf("seed %d round %d: warm flow is not minimal", seed, round)
			}
		}
	}
	if warm < 2000 {
		t.Fatalf("only %d Solves started warm", warm)
	}
}

// TestWarmStartOnlyAfterCostChanges checks that a Solve after a capacity
// change, another demand or a failure starts cold.
func TestWarmStartOnlyAfterCostChanges(t *testing.T) {
	arcs := []testArc{{0, 1, 2, 1}, {0, 2, 2, 2}, {1, 3, 2, 1}, {2, 3, 2, 1}, {0, 3, 4, 10}}
	g, ids := buildGraph(4, arcs)
	step := func(name string, change func(), wantWarm bool) {
		t.Helper()
		change()
		if g.warm != wantWarm {
			t.Errorf("%s: warm = %v, want %v", name, g.warm, wantWarm)
		}
		g.Solve(0, 3, 3)
	}
	step("first", func() {}, false)
	step("cost", func() { g.SetCost(ids[0], 5) }, true)
	step("same capacity", func() { g.SetCapacity(ids[1], 2) }, true)
	step("capacity", func() { g.SetCapacity(ids[1], 1) }, false)
	step("failure", func() { g.Solve(0, 3, 99) }, false)
	step("arc", func() { g.AddArc(1, 2, 1, 1) }, false)
	// Another demand than the last Solve's starts cold, and is right.
	for _, demand := range []int64{2, 3, 1} {
		res, err := g.Solve(0, 3, demand)
		fresh, _ := buildGraph(4, append(slices.Clone(arcs), testArc{1, 2, 1, 1}))
		fresh.SetCost(0, 5)
		fresh.SetCapacity(1, 1)
		want, werr := fresh.Solve(0, 3, demand)
		if err != nil || werr != nil || res.Cost != want.Cost {
			t.Errorf("demand %d: %v, %v; a fresh graph gives %v, %v", demand, res, err, want, werr)
		}
	}
}
