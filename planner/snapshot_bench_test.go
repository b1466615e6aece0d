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

// everyRegion is an input over every region of the embedded snapshot, the
// universe a repository that lists no regions plans over.
func everyRegion(fleets []schema.Fleet, defaults schema.Defaults) Input {
	cat := catalog.Default()
	regions := map[string][]string{}
	for _, r := range cat.Regions {
		regions[r.Cloud] = append(regions[r.Cloud], r.Name)
	}
	return Input{Fleets: fleets, Defaults: defaults, Offers: Expand(cat, regions), Egress: cat.Egress,
		Prices: PriceInfo{Source: cat.Source, AsOf: cat.FetchedAt}}
}

// The example repository's fleets, free to go to every region and zone of
// the embedded snapshot of the public price data.
func BenchmarkPlanExampleOnTheSnapshot(b *testing.B) {
	repo, err := schema.Load("../examples/fleet-repo")
	if err != nil {
		b.Fatal(err)
	}
	in := everyRegion(repo.Fleets, repo.Config.Defaults)
	benchmarkSolve(b, in)
}

// 1,000 workloads of the snapshot's own models and sizes over every offer
// it has: a third anywhere, a third in the EU, a third in the US; spot,
// on-demand and either; some spread over clouds and regions.
func BenchmarkPlan1000WorkloadsOnTheSnapshot(b *testing.B) {
	cat := catalog.Default()
	type shape struct {
		model string
		gpus  int
	}
	var shapes []shape
	for _, o := range cat.Offers {
		if s := (shape{o.GPUModel, o.GPUs}); !slices.Contains(shapes, s) {
			shapes = append(shapes, s)
		}
	}
	slices.SortFunc(shapes, func(a, b shape) int {
		if a.model != b.model {
			if a.model < b.model {
				return -1
			}
			return 1
		}
		return a.gpus - b.gpus
	})
	r := rand.New(rand.NewPCG(1, 2))
	var fleets []schema.Fleet
	for f := range 100 {
		fleets = append(fleets, schema.Fleet{Name: fmt.Sprintf("fleet%03d", f), Owner: "team"})
	}
	for i := range 1000 {
		s := shapes[r.IntN(len(shapes))]
		w := workloadSpec(fmt.Sprintf("w%04d", i), s.model, s.gpus, 1+r.IntN(16))
		w.Priority = r.IntN(100)
		w.Capacity = []string{schema.CapacityOnDemand, schema.CapacitySpot, schema.CapacitySpotFallback}[r.IntN(3)]
		w.Placement.Regions.Allow = [][]string{{"*"}, {"geo:eu"}, {"geo:us"}}[r.IntN(3)]
		if r.IntN(3) == 0 {
			w.Spread.MaxPerCloud, w.Spread.MaxPerRegion = 0.5, 0.34
			w.Nodes = max(w.Nodes, 6)
		}
		fleets[i%len(fleets)].Workloads = append(fleets[i%len(fleets)].Workloads, w)
	}
	in := everyRegion(fleets, schema.Defaults{MigrationThreshold: 0.1, SpotRiskPremium: 0.15})
	benchmarkSolve(b, in)
}
