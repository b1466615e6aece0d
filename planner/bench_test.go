// SPDX-License-Identifier: Apache-2.0

package planner

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gpufleet/gpufleet/schema"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

var benchModels = []string{"H100", "H200", "A100-40GB", "A100-80GB", "L40S", "L4", "A10G", "T4"}

// benchInput builds a synthetic fleet: regions spread over three clouds,
// offers of every model in 1, 4 and 8 GPU sizes, most with little room left,
// so that workloads compete for capacity across the whole catalog.
func benchInput(workloads, offers, regions int, gang bool, seed uint64) Input {
	gangEvery := 0
	if gang {
		gangEvery = 1
	}
	return benchInputRoom(workloads, offers, regions, gangEvery, seed, nil)
}

// benchInputRoom is benchInput with every gangEvery-th workload a gang (none
// for 0), and every offer's room drawn by room, when set: tight capacity
// everywhere.
func benchInputRoom(workloads, offers, regions, gangEvery int, seed uint64, room func(*rand.Rand) int) Input {
	r := rand.New(rand.NewPCG(seed, seed+1))
	clouds := []string{"aws", "azure", "gcp"}
	in := Input{Defaults: schema.Defaults{MigrationThreshold: 0.1, SpotRiskPremium: 0.15}}
	for i := 0; len(in.Offers) < offers; i++ {
		region := i % regions
		zone := (i / regions) % 4
		shape := i / (regions * 4)
		model := benchModels[shape%len(benchModels)]
		gpus := []int{1, 4, 8}[(shape/len(benchModels))%3]
		market := []catalog.Market{catalog.OnDemand, catalog.Spot}[(shape/(len(benchModels)*3))%2]
		cloud := clouds[region%3]
		regionName := fmt.Sprintf("%s-r%02d", cloud, region)
		price := int64(gpus) * int64(1+slicesIndex(benchModels, model)) * (500_000 + r.Int64N(500_000))
		if market == catalog.Spot {
			price = price * 4 / 10
		}
		available := Unlimited
		if r.IntN(5) != 0 {
			available = r.IntN(12)
		}
		if room != nil {
			available = room(r)
		}
		in.Offers = append(in.Offers, Offer{
			OfferKey:    OfferKey{cloud, regionName, fmt.Sprintf("%s-%c", regionName, 'a'+zone), fmt.Sprintf("%s.%dx", model, gpus), market},
			GPUModel:    model,
			GPUs:        gpus,
			PriceMicros: price,
			Available:   available,
		})
	}
	fleets := max(1, workloads/10)
	for f := range fleets {
		in.Fleets = append(in.Fleets, schema.Fleet{Name: fmt.Sprintf("fleet%03d", f), Owner: "team"})
	}
	for i := range workloads {
		w := workloadSpec(fmt.Sprintf("w%04d", i), benchModels[r.IntN(len(benchModels))], []int{1, 4, 8}[r.IntN(3)], 1+r.IntN(16))
		w.Priority = r.IntN(100)
		w.Capacity = []string{schema.CapacityOnDemand, schema.CapacitySpot, schema.CapacitySpotFallback}[r.IntN(3)]
		if gangEvery > 0 && i%gangEvery == 0 {
			w.Placement.Gang = "region"
			w.GPU.PerNode = 8
			w.Nodes = 2 + r.IntN(7)
		} else if r.IntN(3) == 0 {
			w.Spread.MaxPerCloud = 0.5
			w.Spread.MaxPerRegion = 0.34
			w.Nodes = max(w.Nodes, 6)
		}
		if r.IntN(4) == 0 {
			w.Placement.Regions.Allow = []string{clouds[r.IntN(3)] + "-*"}
		}
		f := &in.Fleets[i%fleets]
		f.Workloads = append(f.Workloads, w)
	}
	return in
}

func slicesIndex(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

func benchmarkSolve(b *testing.B, in Input) {
	b.ReportAllocs()
	var plan *Plan
	for b.Loop() {
		var err error
		if plan, err = Solve(in); err != nil {
			b.Fatal(err)
		}
	}
	placed, desired := 0, 0
	for _, f := range plan.Fleets {
		for _, w := range f.Workloads {
			placed += w.Placed
			desired += w.Desired
		}
	}
	b.ReportMetric(float64(plan.Stats.Offers), "offers")
	b.ReportMetric(float64(plan.Stats.Components), "components")
	b.ReportMetric(float64(plan.Stats.Solves), "solves")
	b.ReportMetric(float64(placed)/float64(max(1, desired)), "placed/desired")
	b.ReportMetric(float64(plan.CostMicros)/1e6, "$/h")
	b.ReportMetric(100*float64(plan.GapMicros)/float64(max(1, plan.CostMicros)), "gap%")
	b.ReportMetric(float64(plan.GapNodes), "gap-nodes")
	b.ReportMetric(float64(placed), "placed")
}

func BenchmarkSolve100x10000(b *testing.B) { benchmarkSolve(b, benchInput(100, 10_000, 50, false, 1)) }
func BenchmarkSolve1000x10000(b *testing.B) {
	benchmarkSolve(b, benchInput(1000, 10_000, 50, false, 1))
}

// 100 gangs, each free to go to any of 50 regions, competing for room.
func BenchmarkSolveGang100x50(b *testing.B) { benchmarkSolve(b, benchInput(100, 10_000, 50, true, 1)) }

// Every offer holds 1 to 6 more nodes: capacity binds everywhere.
func BenchmarkSolveTight1000x10000(b *testing.B) {
	benchmarkSolve(b, benchInputRoom(1000, 10_000, 50, 0, 1, func(r *rand.Rand) int { return 1 + r.IntN(6) }))
}

// A quarter of the workloads are gangs, and every offer holds 1 or 2 more
// nodes: gangs and everything else compete for scarce room.
func BenchmarkSolveMixedGangs200x5000(b *testing.B) {
	for seed := uint64(1); seed <= 4; seed++ {
		b.Run(fmt.Sprintf("seed=%d", seed), func(b *testing.B) { benchmarkSolve(b, mixedGangs(seed)) })
	}
}

func mixedGangs(seed uint64) Input {
	in := benchInputRoom(200, 5000, 50, 4, seed, func(r *rand.Rand) int { return 1 + r.IntN(2) })
	// Three priorities, so that CBC can be given the same lexicographic
	// objective in a few stages (milp_test.go).
	for f := range in.Fleets {
		for w := range in.Fleets[f].Workloads {
			in.Fleets[f].Workloads[w].Priority = in.Fleets[f].Workloads[w].Priority % 3 * 50
		}
	}
	return in
}

// denseInput is one dense component: offers of a single shape (H100, 8 a
// node) in 100 regions of three clouds, four zones each, on demand and
// spot, every one with room for 1 to 6 nodes; each workload may go to 9
// of the regions, drawn at random, and takes 1 to 16 nodes, so that every
// workload shares offers with many others and the whole fleet is one
// component of about 600 eligible offers a workload.
func denseInput(workloads, offers int, seed uint64) Input {
	r := rand.New(rand.NewPCG(seed, seed+1))
	clouds := []string{"aws", "azure", "gcp"}
	const regions = 100
	in := Input{Defaults: schema.Defaults{MigrationThreshold: 0.1, SpotRiskPremium: 0.15}}
	for i := 0; len(in.Offers) < offers; i++ {
		region := i % regions
		zone := (i / regions) % 4
		market := []catalog.Market{catalog.OnDemand, catalog.Spot}[(i/(regions*4))%2]
		cloud := clouds[region%3]
		regionName := fmt.Sprintf("%s-r%02d", cloud, region)
		price := 8 * (3_000_000 + r.Int64N(1_000_000))
		if market == catalog.Spot {
			price = price * 4 / 10
		}
		in.Offers = append(in.Offers, Offer{
			OfferKey:    OfferKey{cloud, regionName, fmt.Sprintf("%s-%c", regionName, 'a'+zone), fmt.Sprintf("h100.8x.v%d", i/(regions*8)), market},
			GPUModel:    "H100",
			GPUs:        8,
			PriceMicros: price,
			Available:   1 + r.IntN(6),
		})
	}
	fleets := max(1, workloads/10)
	for f := range fleets {
		in.Fleets = append(in.Fleets, schema.Fleet{Name: fmt.Sprintf("fleet%03d", f), Owner: "team"})
	}
	for i := range workloads {
		w := workloadSpec(fmt.Sprintf("w%04d", i), "H100", 8, 1+r.IntN(16))
		w.Priority = r.IntN(100)
		w.Capacity = []string{schema.CapacityOnDemand, schema.CapacitySpot, schema.CapacitySpotFallback}[r.IntN(3)]
		w.Placement.Regions.Allow = nil
		for _, region := range r.Perm(regions)[:9] {
			w.Placement.Regions.Allow = append(w.Placement.Regions.Allow, fmt.Sprintf("%s-r%02d", clouds[region%3], region))
		}
		f := &in.Fleets[i%fleets]
		f.Workloads = append(f.Workloads, w)
	}
	return in
}

// eligiblePairs counts the (workload, offer) pairs a plan of in may use.
func eligiblePairs(in Input) int {
	p := newPlanning(in)
	p.prepare()
	n := 0
	for _, w := range p.workloads {
		n += len(w.candidates)
	}
	return n
}

// network counts the arcs and the hubs of the flow networks a plan of in
// solves on.
func network(in Input) (arcs, hubs int) {
	p := newPlanning(in)
	p.prepare()
	p.reserveFixed()
	p.prepareQuotas()
	for _, ws := range p.components() {
		c := p.build(ws)
		arcs += len(c.money)
		hubs += len(c.hubs)
	}
	return arcs, hubs
}

// One dense component of 1,000 workloads over 10,000 offers, capacity
// tight everywhere (denseInput). pairs counts the (workload, offer) pairs
// it may use, arcs the arcs of its network, which shares offers among
// workloads through hubs (hub.go).
func BenchmarkSolveDense1000x10000(b *testing.B) {
	in := denseInput(1000, 10_000, 1)
	pairs := eligiblePairs(in)
	arcs, _ := network(in)
	benchmarkSolve(b, in)
	// After the loop, which clears what was reported before it.
	b.ReportMetric(float64(pairs), "pairs")
	b.ReportMetric(float64(arcs), "arcs")
}

// startOf is where a plan puts each workload's nodes, as Input.Start
// takes them.
func startOf(plan *Plan) map[string][]Placement {
	start := map[string][]Placement{}
	for _, f := range plan.Fleets {
		for _, w := range f.Workloads {
			start[f.Name+"/"+w.Name] = w.Placements
		}
	}
	return start
}

// movePrices returns in with one offer in every hundred repriced by up to
// 5 % either way, as a catalog refresh moves a few prices.
func movePrices(in Input, seed uint64) Input {
	r := rand.New(rand.NewPCG(seed, 99))
	in.Offers = slices.Clone(in.Offers)
	for _, i := range r.Perm(len(in.Offers))[:len(in.Offers)/100] {
		o := &in.Offers[i]
		o.PriceMicros += o.PriceMicros * int64(r.IntN(11)-5) / 100
	}
	return in
}

// The dense component again after 1 % of its prices moved: solved from
// nothing (cold), and from the placements of the plan before the move
// (warm), which must reach the same optimum. started counts the solves
// that began from a start, pivots the network simplex's pivots.
func BenchmarkSolveDenseAfterPriceMoves(b *testing.B) {
	before := denseInput(1000, 10_000, 1)
	first, err := Solve(before)
	if err != nil {
		b.Fatal(err)
	}
	after := movePrices(before, 1)
	cold, err := Solve(after)
	if err != nil {
		b.Fatal(err)
	}
	for _, start := range []bool{false, true} {
		in := after
		name := "cold"
		if start {
			in.Start = startOf(first)
			name = "warm"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			var plan *Plan
			var p *planning
			for b.Loop() {
				if plan, p, err = solvePlanning(in); err != nil {
					b.Fatal(err)
				}
			}
			if plan.CostMicros != cold.CostMicros || !plan.Optimal {
				b.Fatalf("from the start the plan costs %d (optimal %v), from nothing %d", plan.CostMicros, plan.Optimal, cold.CostMicros)
			}
			b.ReportMetric(float64(p.started), "started")
			b.ReportMetric(float64(p.pivots), "pivots")
		})
	}
}
