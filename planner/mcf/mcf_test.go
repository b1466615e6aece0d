// SPDX-License-Identifier: Apache-2.0

package mcf

import (
	"errors"
	"slices"
	"testing"
)

// testArc is an arc as a test writes it down.
type testArc struct {
	from, to       int
	capacity, cost int64
}

func buildGraph(n int, arcs []testArc) (*Graph, []ArcID) {
	g := New(n)
	ids := make([]ArcID, len(arcs))
	for i, a := range arcs {
		ids[i] = g.AddArc(a.from, a.to, a.capacity, a.cost)
	}
	return g, ids
}

func flows(g *Graph, ids []ArcID) []int64 {
	out := make([]int64, len(ids))
	for i, id := range ids {
		out[i] = g.Flow(id)
	}
	return out
}

func TestSolve(t *testing.T) {
	tests := []struct {
		name         string
		n            int
		arcs         []testArc
		source, sink int
		demand       int64
		wantCost     int64
		wantFlows    []int64 // nil: not checked, the optimum is not unique
		wantErr      error
	}{
		{
			name:      "path",
			n:         3,
			arcs:      []testArc{{0, 1, 5, 2}, {1, 2, 5, 3}},
			source:    0,
			sink:      2,
			demand:    4,
			wantCost:  20,
			wantFlows: []int64{4, 4},
		},
		{
			name:      "parallel arcs fill cheapest first",
			n:         2,
			arcs:      []testArc{{0, 1, 2, 5}, {0, 1, 2, 1}, {0, 1, 2, 3}},
			source:    0,
			sink:      1,
			demand:    3,
			wantCost:  2*1 + 1*3,
			wantFlows: []int64{0, 2, 1},
		},
		{
			name:      "parallel arcs of equal cost fill in the order added",
			n:         2,
			arcs:      []testArc{{0, 1, 2, 4}, {0, 1, 2, 4}},
			source:    0,
			sink:      1,
			demand:    3,
			wantCost:  12,
			wantFlows: []int64{2, 1},
		},
		{
			name: "negative arc makes the longer route cheaper",
			n:    4,
			arcs: []testArc{
				{0, 1, 1, 4}, {1, 3, 1, -3}, // 4 - 3 = 1
				{0, 2, 1, 1}, {2, 3, 1, 1}, // 2
			},
			source:    0,
			sink:      3,
			demand:    1,
			wantCost:  1,
			wantFlows: []int64{1, 1, 0, 0},
		},
		{
			name: "keep bonus below zero overall",
			n:    4,
			arcs: []testArc{
				{0, 1, 2, 0},
				{1, 2, 1, -10}, // keep the node we have
				{1, 2, Inf, 3},
				{2, 3, Inf, 0},
			},
			source:    0,
			sink:      3,
			demand:    2,
			wantCost:  -7,
			wantFlows: []int64{2, 1, 1, 2},
		},
		{
			name: "negative arcs on a graph with a non-negative cycle",
			n:    4,
			arcs: []testArc{
				{0, 1, 2, -1}, {1, 0, 2, 2}, // cycle of cost 1
				{1, 2, 1, -2}, {2, 1, 1, 3}, // cycle of cost 1
				{1, 3, 2, 5}, {2, 3, 2, 1},
			},
			source:    0,
			sink:      3,
			demand:    2,
			wantCost:  (-1 - 2 + 1) + (-1 + 5),
			wantFlows: []int64{2, 0, 1, 0, 1, 1},
		},
		{
			name: "second path cancels flow on the first",
			n:    4,
			arcs: []testArc{
				{0, 1, 1, 1}, {1, 3, 1, 10}, {1, 2, 1, 1},
				{0, 2, 1, 10}, {2, 3, 1, 1},
			},
			source:    0,
			sink:      3,
			demand:    2,
			wantCost:  22,
			wantFlows: []int64{1, 1, 0, 1, 1},
		},
		{
			name: "first arc out of the source is on the dearer route",
			n:    4,
			arcs: []testArc{
				{0, 1, 5, 0}, {0, 2, 5, 0},
				{1, 3, 5, 10}, {2, 3, 5, 1},
			},
			source:    0,
			sink:      3,
			demand:    3,
			wantCost:  3,
			wantFlows: []int64{0, 3, 0, 3},
		},
		{
			name: "cheap route fills, the rest takes the dear one",
			n:    4,
			arcs: []testArc{
				{0, 1, 1, 0}, {0, 2, 5, 3},
				{1, 3, 5, 1}, {2, 3, 5, 1},
			},
			source:    0,
			sink:      3,
			demand:    3,
			wantCost:  1*1 + 2*4,
			wantFlows: []int64{1, 2, 1, 2},
		},
		{
			name:      "zero-capacity arcs carry nothing",
			n:         3,
			arcs:      []testArc{{0, 2, 0, -100}, {0, 1, 3, 1}, {1, 2, 3, 1}, {2, 0, 0, -100}},
			source:    0,
			sink:      2,
			demand:    3,
			wantCost:  6,
			wantFlows: []int64{0, 3, 3, 0},
		},
		{
			name:      "self-loop of non-negative cost is ignored",
			n:         2,
			arcs:      []testArc{{0, 0, 5, 0}, {0, 1, 1, 2}, {1, 1, 5, 1}},
			source:    0,
			sink:      1,
			demand:    1,
			wantCost:  2,
			wantFlows: []int64{0, 1, 0},
		},
		{
			name:      "unbounded capacity",
			n:         2,
			arcs:      []testArc{{0, 1, Inf, 7}},
			source:    0,
			sink:      1,
			demand:    1 << 40,
			wantCost:  7 << 40,
			wantFlows: []int64{1 << 40},
		},
		{
			name:      "zero demand",
			n:         2,
			arcs:      []testArc{{0, 1, 1, 7}},
			source:    0,
			sink:      1,
			demand:    0,
			wantCost:  0,
			wantFlows: []int64{0},
		},
		{
			name:      "overflow arc takes only the shortfall",
			n:         3,
			arcs:      []testArc{{0, 1, 2, 1}, {1, 2, 2, 1}, {0, 2, 5, 1000}},
			source:    0,
			sink:      2,
			demand:    5,
			wantCost:  2*2 + 3*1000,
			wantFlows: []int64{2, 2, 3},
		},
		{
			name:    "demand above capacity",
			n:       3,
			arcs:    []testArc{{0, 1, 2, 1}, {1, 2, 5, 1}},
			source:  0,
			sink:    2,
			demand:  3,
			wantErr: ErrInfeasible,
		},
		{
			name:    "sink disconnected",
			n:       4,
			arcs:    []testArc{{0, 1, 2, 1}, {2, 3, 2, 1}},
			source:  0,
			sink:    3,
			demand:  1,
			wantErr: ErrInfeasible,
		},
		{
			name:    "no arcs",
			n:       2,
			source:  0,
			sink:    1,
			demand:  1,
			wantErr: ErrInfeasible,
		},
		{
			name:    "source is sink",
			n:       2,
			arcs:    []testArc{{0, 1, 1, 1}},
			source:  1,
			sink:    1,
			demand:  1,
			wantErr: ErrInvalid,
		},
		{
			name:    "source out of range",
			n:       2,
			arcs:    []testArc{{0, 1, 1, 1}},
			source:  -1,
			sink:    1,
			demand:  1,
			wantErr: ErrInvalid,
		},
		{
			name:    "sink out of range",
			n:       2,
			arcs:    []testArc{{0, 1, 1, 1}},
			source:  0,
			sink:    2,
			demand:  1,
			wantErr: ErrInvalid,
		},
		{
			name:    "arc head out of range",
			n:       2,
			arcs:    []testArc{{0, 1, 1, 1}, {1, 2, 1, 1}},
			source:  0,
			sink:    1,
			demand:  1,
			wantErr: ErrInvalid,
		},
		{
			name:    "arc tail negative",
			n:       2,
			arcs:    []testArc{{-3, 1, 1, 1}},
			source:  0,
			sink:    1,
			demand:  1,
			wantErr: ErrInvalid,
		},
		{
			name:    "negative capacity",
			n:       2,
			arcs:    []testArc{{0, 1, -1, 1}},
			source:  0,
			sink:    1,
			demand:  0,
			wantErr: ErrInvalid,
		},
		{
			name:    "negative demand",
			n:       2,
			arcs:    []testArc{{0, 1, 1, 1}},
			source:  0,
			sink:    1,
			demand:  -1,
			wantErr: ErrInvalid,
		},
		{
			name:    "negative node count",
			n:       -1,
			source:  0,
			sink:    1,
			demand:  1,
			wantErr: ErrInvalid,
		},
		{
			name:    "negative cycle on the way",
			n:       4,
			arcs:    []testArc{{0, 1, 1, 1}, {1, 2, 1, -3}, {2, 1, 1, 1}, {2, 3, 1, 1}},
			source:  0,
			sink:    3,
			demand:  1,
			wantErr: ErrNegativeCycle,
		},
		{
			name:    "negative cycle the source cannot reach",
			n:       5,
			arcs:    []testArc{{0, 1, 1, 1}, {2, 3, 1, -1}, {3, 4, 1, -1}, {4, 2, 1, 1}},
			source:  0,
			sink:    1,
			demand:  1,
			wantErr: ErrNegativeCycle,
		},
		{
			name:    "negative self-loop",
			n:       2,
			arcs:    []testArc{{0, 1, 1, 1}, {1, 1, 1, -1}},
			source:  0,
			sink:    1,
			demand:  1,
			wantErr: ErrNegativeCycle,
		},
		{
			name:      "negative cycle closed by a zero-capacity arc is no cycle",
			n:         3,
			arcs:      []testArc{{0, 1, 1, -5}, {1, 0, 0, 1}, {1, 2, 1, 1}},
			source:    0,
			sink:      2,
			demand:    1,
			wantCost:  -4,
			wantFlows: []int64{1, 0, 1},
		},
		{
			name:    "cost too large",
			n:       2,
			arcs:    []testArc{{0, 1, 1, 1 << 60}},
			source:  0,
			sink:    1,
			demand:  1,
			wantErr: ErrOverflow,
		},
		{
			name:    "most negative cost",
			n:       2,
			arcs:    []testArc{{0, 1, 1, -1 << 63}},
			source:  0,
			sink:    1,
			demand:  1,
			wantErr: ErrOverflow,
		},
		{
			name:    "total cost too large",
			n:       2,
			arcs:    []testArc{{0, 1, Inf, 1 << 30}},
			source:  0,
			sink:    1,
			demand:  1 << 40,
			wantErr: ErrOverflow,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, ids := buildGraph(tt.n, tt.arcs)
			res, err := g.Solve(tt.source, tt.sink, tt.demand)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Solve() error = %v, want %v", err, tt.wantErr)
				}
				if got := flows(g, ids); slices.ContainsFunc(got, func(f int64) bool { return f != 0 }) {
					t.Errorf("flows after a failed Solve = %v, want all 0", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("Solve() error = %v", err)
			}
			if res.Flow != tt.demand || res.Cost != tt.wantCost || res.FromFlow {
				t.Errorf("Solve() = %+v, want flow %d cost %d", res, tt.demand, tt.wantCost)
			}
			got := flows(g, ids)
			if tt.wantFlows != nil && !slices.Equal(got, tt.wantFlows) {
				t.Errorf("flows = %v, want %v", got, tt.wantFlows)
			}
			checkFlow(t, tt.n, tt.arcs, got, tt.source, tt.sink, tt.demand)
			checkReducedCosts(t, g, tt.arcs, ids)
		})
	}
}

// TestResolve checks that a Graph can be solved again, after changing a
// capacity or after Reset, with the same answers as a fresh one.
func TestResolve(t *testing.T) {
	arcs := []testArc{{0, 1, 2, 1}, {0, 2, 2, 2}, {1, 3, 2, 1}, {2, 3, 2, 1}, {0, 3, 4, 10}}
	g, ids := buildGraph(4, arcs)
	solve := func(name string, demand, wantCost int64) {
		t.Helper()
		res, err := g.Solve(0, 3, demand)
		if err != nil {
			t.Fatalf("%s: Solve() error = %v", name, err)
		}
		if res.Cost != wantCost {
			t.Errorf("%s: cost = %d, want %d", name, res.Cost, wantCost)
		}
	}
	solve("first", 3, 2*2+1*3)
	solve("again", 3, 2*2+1*3)
	g.SetCapacity(ids[0], 0)
	if f := g.Flow(ids[1]); f != 0 {
		t.Errorf("Flow after SetCapacity = %d, want 0 until the next Solve", f)
	}
	solve("closed arc", 3, 2*3+1*10)
	g.SetCapacity(ids[0], 2)
	solve("reopened arc", 3, 2*2+1*3)
	if _, err := g.Solve(0, 3, 9); !errors.Is(err, ErrInfeasible) {
		t.Errorf("Solve for too much: error = %v, want %v", err, ErrInfeasible)
	}
	if got := flows(g, ids); slices.ContainsFunc(got, func(f int64) bool { return f != 0 }) {
		t.Errorf("flows after a failed Solve = %v, want all 0", got)
	}
	solve("after a failure", 3, 2*2+1*3)

	g.SetCapacity(ids[0], -1)
	if _, err := g.Solve(0, 3, 3); !errors.Is(err, ErrInvalid) {
		t.Errorf("Solve after a negative SetCapacity: error = %v, want %v", err, ErrInvalid)
	}

	g.Reset(3)
	a := g.AddArc(0, 1, 1, 5)
	b := g.AddArc(1, 2, 1, -2)
	res, err := g.Solve(0, 2, 1)
	if err != nil {
		t.Fatalf("after Reset: Solve() error = %v", err)
	}
	if res.Cost != 3 || g.Flow(a) != 1 || g.Flow(b) != 1 {
		t.Errorf("after Reset: cost %d, flows %d %d; want 3, 1 1", res.Cost, g.Flow(a), g.Flow(b))
	}
	g.AddArc(0, 2, 1, 0)
	res, err = g.Solve(0, 2, 1)
	if err != nil || res.Cost != 0 {
		t.Errorf("after growing: Solve() = %+v, %v; want cost 0", res, err)
	}
}

func TestBadArcIDPanics(t *testing.T) {
	g := New(2)
	g.AddArc(0, 1, 1, 1)
	for _, id := range []ArcID{-1, 1} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Flow(%d) did not panic", id)
				}
			}()
			g.Flow(id)
		}()
	}
}

// checkFlow fails t unless flow respects capacities and moves exactly demand
// from source to sink with every other node balanced.
func checkFlow(t *testing.T, n int, arcs []testArc, flow []int64, source, sink int, demand int64) {
	t.Helper()
	net := make([]int64, n) // inflow - outflow
	for i, a := range arcs {
		if flow[i] < 0 || flow[i] > a.capacity {
			t.Errorf("arc %d %+v carries %d, outside [0, capacity]", i, a, flow[i])
		}
		net[a.from] -= flow[i]
		net[a.to] += flow[i]
	}
	for v, x := range net {
		want := int64(0)
		switch v {
		case source:
			want = -demand
		case sink:
			want = demand
		}
		if x != want {
			t.Errorf("node %d: inflow - outflow = %d, want %d", v, x, want)
		}
	}
}

// checkReducedCosts fails t unless ReducedCost proves the flow optimal:
// non-negative wherever flow could grow, non-positive wherever it could
// shrink.
func checkReducedCosts(t *testing.T, g *Graph, arcs []testArc, ids []ArcID) {
	t.Helper()
	for i, id := range ids {
		rc, f := g.ReducedCost(id), g.Flow(id)
		if want := arcs[i].cost + g.basis.potential[arcs[i].from] - g.basis.potential[arcs[i].to]; rc != want {
			t.Errorf("arc %d: ReducedCost = %d, want %d from the potentials", i, rc, want)
		}
		if f < arcs[i].capacity && rc < 0 {
			t.Errorf("arc %d with spare capacity has reduced cost %d < 0", i, rc)
		}
		if f > 0 && rc > 0 {
			t.Errorf("arc %d with flow has reduced cost %d > 0", i, rc)
		}
	}
}
