// SPDX-License-Identifier: Apache-2.0

package mcf

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
)

// SolveFrom, given the sum of two optimal flows of the same graph under
// other costs (a feasible start with many arcs between their bounds, whose
// cycles it has to cancel), or the last optimum after a few costs moved,
// finds a flow as cheap as a fresh graph's cold Solve, with a consistent
// basis and reduced costs that prove it; given a flow that does not fit, it
// starts cold and is still right.
func TestSolveFromMatchesACold(t *testing.T) {
	starts := map[string]int{}
	for seed := range uint64(600) {
		rng := rand.New(rand.NewPCG(seed, 5))
		var n int
		var arcs []testArc
		var source, sink int
		var demand int64
		if seed%2 == 0 {
			n, arcs = randomLayered(rng)
			source, sink, demand = 0, n-1, int64(1+rng.IntN(6))
		} else {
			p := placement{workloads: 3 + rng.IntN(15), offers: 5 + rng.IntN(40), maxEligible: 3 + rng.IntN(8), families: 1 + rng.IntN(2), keepBonus: true}
			var total int64
			n, arcs, total = p.build(rng)
			source, sink, demand = 0, 1, max(1, total/2)
		}
		solveWith := func(costs func(int) int64) ([]int64, bool) {
			moved := slices.Clone(arcs)
			for i := range moved {
				moved[i].cost = costs(i)
			}
			g, ids := buildGraph(n, moved)
			if _, err := g.Solve(source, sink, demand); err != nil {
				return nil, false
			}
			return flows(g, ids), true
		}
		random := func(int) int64 { return int64(rng.IntN(40)) }
		f1, ok1 := solveWith(random)
		f2, ok2 := solveWith(random)
		if !ok1 || !ok2 {
			continue
		}
		// The doubled graph carries twice the demand, and f1 + f2 fits it.
		doubled := slices.Clone(arcs)
		sum := make([]int64, len(arcs))
		for i := range doubled {
			doubled[i].capacity *= 2
			sum[i] = f1[i] + f2[i]
		}
		cases := []struct {
			name   string
			arcs   []testArc
			demand int64
			start  []int64
			warm   bool
		}{
			{"sum of two optima", doubled, 2 * demand, sum, true},
			{"the optimum of other costs", arcs, demand, f1, true},
			{"a flow of another demand", arcs, demand + 1, f1, false},
			{"a flow over a capacity", arcs, demand, append(slices.Clone(f1[:len(f1)-1]), arcs[len(arcs)-1].capacity+1), false},
		}
		for _, c := range cases {
			g, ids := buildGraph(n, c.arcs)
			res, err := g.SolveFrom(source, sink, c.demand, c.start)
			fresh, _ := buildGraph(n, c.arcs)
			want, werr := fresh.Solve(source, sink, c.demand)
			if errors.Is(werr, ErrInfeasible) && errors.Is(err, ErrInfeasible) {
				continue
			}
			if err != nil || werr != nil {
				t.Fatalf("seed %d, %s: SolveFrom() error = %v, Solve() error = %v", seed, c.name, err, werr)
			}
			if res.FromFlow != c.warm {
				t.Fatalf("seed %d, %s: FromFlow = %v, want %v", seed, c.name, res.FromFlow, c.warm)
			}
			checkBasis(t, g)
			got := flows(g, ids)
			checkFlow(t, n, c.arcs, got, source, sink, c.demand)
			checkReducedCosts(t, g, c.arcs, ids)
			if res.Cost != want.Cost || dot(c.arcs, got) != res.Cost {
				t.Fatalf("seed %d, %s: from the flow cost %d (flows %d), cold %d", seed, c.name, res.Cost, dot(c.arcs, got), want.Cost)
			}
			if residualHasNegativeCycle(n, c.arcs, got) {
				t.Fatalf("seed %d, %s: the flow is not minimal", seed, c.name)
			}
			if res.FromFlow {
				starts[c.name]++
			}
		}
	}
	for _, name := range []string{"sum of two optima", "the optimum of other costs"} {
		if starts[name] < 200 {
			t.Errorf("only %d Solves started from %s", starts[name], name)
		}
	}
}
