// SPDX-License-Identifier: Apache-2.0

package mcf

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// unplacedCost prices a unit left off every offer, above any real route, as
// the planner's "unplaced" arcs do.
const unplacedCost = 1_000_000

// placement describes a planner-shaped graph: source -> workloads -> offers
// -> sink, plus an unplaced arc from each workload to the sink. Node 0 is the
// source and node 1 the sink. Demands are 1 to 16 and offers hold 1 to 4
// units, so cheap offers fill up and later workloads must route around them.
type placement struct {
	workloads, offers int
	// Each workload is eligible for between maxEligible/4 and maxEligible
	// offers, all from one of families equal groups, as a workload needing
	// one GPU model is. With one family, eligibility is uniform over all
	// offers, which is the hardest case: every workload competes with
	// every other.
	maxEligible, families int
	// keepBonus gives one arc in fifty a cost below zero, as the planner's
	// bonus for keeping a node where it runs.
	keepBonus bool
}

func (p placement) String() string {
	return fmt.Sprintf("%dx%d/families=%d/keep=%t", p.workloads, p.offers, p.families, p.keepBonus)
}

// build returns the graph's node count, its arcs and the total demand.
func (p placement) build(rng *rand.Rand) (int, []testArc, int64) {
	const source, sink = 0, 1
	workload := func(i int) int { return 2 + i }
	offer := func(i int) int { return 2 + p.workloads + i }
	n := 2 + p.workloads + p.offers

	price := make([]int64, p.offers)
	var arcs []testArc
	for o := range p.offers {
		price[o] = 1000 + int64(rng.IntN(9000))
		arcs = append(arcs, testArc{offer(o), sink, 1 + int64(rng.IntN(4)), 0})
	}
	perFamily := p.offers / p.families
	var total int64
	picked := make([]bool, p.offers)
	for w := range p.workloads {
		demand := 1 + int64(rng.IntN(16))
		total += demand
		arcs = append(arcs, testArc{source, workload(w), demand, 0})
		family := rng.IntN(p.families)
		eligible := min(perFamily, p.maxEligible/4+rng.IntN(p.maxEligible-p.maxEligible/4+1))
		clear(picked)
		for range eligible {
			o := family*perFamily + rng.IntN(perFamily)
			for picked[o] {
				o = family*perFamily + (o-family*perFamily+1)%perFamily
			}
			picked[o] = true
			cost := price[o] + int64(rng.IntN(200))
			if p.keepBonus && rng.IntN(50) == 0 {
				cost = -int64(rng.IntN(5000))
			}
			arcs = append(arcs, testArc{workload(w), offer(o), demand, cost})
		}
		arcs = append(arcs, testArc{workload(w), sink, demand, unplacedCost})
	}
	return n, arcs, total
}

// BenchmarkSolve measures Solve on planner-shaped graphs: "solve" on a graph
// built once, as the planner's branch and bound re-solves variants of one
// graph, and "build+solve" from an empty Graph.
func BenchmarkSolve(b *testing.B) {
	for _, p := range []placement{
		{workloads: 100, offers: 1000, maxEligible: 200, families: 1, keepBonus: true},
		{workloads: 1000, offers: 10000, maxEligible: 200, families: 1, keepBonus: true},
		{workloads: 1000, offers: 10000, maxEligible: 200, families: 1},
		{workloads: 1000, offers: 10000, maxEligible: 200, families: 40, keepBonus: true},
	} {
		n, arcs, demand := p.build(rand.New(rand.NewPCG(1, 2)))

		b.Run(p.String()+"/solve", func(b *testing.B) {
			g, _ := buildGraph(n, arcs)
			// The first Solve sizes the scratch space; later ones reuse it.
			if _, err := g.Solve(0, 1, demand); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				g.warm = false // a cold start every time
				if _, err := g.Solve(0, 1, demand); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(arcs)), "arcs")
			b.ReportMetric(float64(g.basis.pivots), "pivots")
		})
		// A warm start after one used arc is priced out, and back.
		b.Run(p.String()+"/warm", func(b *testing.B) {
			g, ids := buildGraph(n, arcs)
			if _, err := g.Solve(0, 1, demand); err != nil {
				b.Fatal(err)
			}
			used := slices.IndexFunc(ids, func(a ArcID) bool { return g.Flow(a) > 0 && arcs[a].cost > 0 })
			pivots := 0
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				cost := arcs[used].cost
				if i%2 == 0 {
					cost += 1 << 40
				}
				g.SetCost(ids[used], cost)
				if _, err := g.Solve(0, 1, demand); err != nil {
					b.Fatal(err)
				}
				pivots = max(pivots, g.basis.pivots)
			}
			b.ReportMetric(float64(pivots), "pivots")
		})
		b.Run(p.String()+"/build+solve", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				g := New(n)
				for _, a := range arcs {
					g.AddArc(a.from, a.to, a.capacity, a.cost)
				}
				if _, err := g.Solve(0, 1, demand); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
