// SPDX-License-Identifier: Apache-2.0

package planner

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpufleet/gpufleet/schema"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

var updateGolden = os.Getenv("GPUFLEET_UPDATE_GOLDEN") != ""

func exampleRepo(t testing.TB) *schema.Repo {
	t.Helper()
	repo, err := schema.Load("../examples/fleet-repo")
	if err != nil {
		t.Fatal(err)
	}
	return repo
}

func exampleInput(t testing.TB) Input {
	return NewInput(exampleRepo(t), catalog.Default())
}

func solve(t testing.TB, in Input) *Plan {
	t.Helper()
	plan, err := Solve(in)
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

func planJSON(t testing.TB, plan *Plan) []byte {
	t.Helper()
	data, err := json.MarshalIndent(plan, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestSolveIsDeterministic(t *testing.T) {
	in := exampleInput(t)
	want := planJSON(t, solve(t, in))
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 5 {
		// The same input in another order is the same input.
		shuffled := in
		shuffled.Offers = slices.Clone(in.Offers)
		r.Shuffle(len(shuffled.Offers), func(a, b int) { shuffled.Offers[a], shuffled.Offers[b] = shuffled.Offers[b], shuffled.Offers[a] })
		shuffled.Fleets = slices.Clone(in.Fleets)
		r.Shuffle(len(shuffled.Fleets), func(a, b int) { shuffled.Fleets[a], shuffled.Fleets[b] = shuffled.Fleets[b], shuffled.Fleets[a] })
		if got := planJSON(t, solve(t, shuffled)); !bytes.Equal(got, want) {
			t.Fatalf("run %d: plan differs from the first run", i)
		}
	}
}

// TestGangSearchIsDeterministic solves an instance whose gangs need a real
// search, with the offers in other orders: the search, its warm starts and
// its neighbourhoods must give the same plan every time.
func TestGangSearchIsDeterministic(t *testing.T) {
	in := benchInputRoom(100, 2000, 20, 3, 5, func(r *rand.Rand) int { return 1 + r.IntN(2) })
	first := solve(t, in)
	if first.Stats.Solves < 100 {
		t.Fatalf("only %d solves: the instance does not exercise the search", first.Stats.Solves)
	}
	want := planJSON(t, first)
	r := rand.New(rand.NewPCG(5, 6))
	for i := range 3 {
		shuffled := in
		shuffled.Offers = slices.Clone(in.Offers)
		r.Shuffle(len(shuffled.Offers), func(a, b int) { shuffled.Offers[a], shuffled.Offers[b] = shuffled.Offers[b], shuffled.Offers[a] })
		if got := planJSON(t, solve(t, shuffled)); !bytes.Equal(got, want) {
			t.Fatalf("run %d: plan differs from the first run", i)
		}
	}
}

// observe turns a plan into the instances it would leave running.
func observe(plan *Plan) []Instance {
	var out []Instance
	for _, f := range plan.Fleets {
		for _, w := range f.Workloads {
			for _, pl := range w.Placements {
				boot := ""
				for _, b := range w.Bootstrap {
					if b.Cloud == pl.Offer.Cloud {
						boot = b.Tag()
					}
				}
				for i := range pl.Count {
					out = append(out, Instance{
						ID: pl.Offer.String() + "#" + string(rune('a'+i)), OfferKey: pl.Offer,
						Fleet: f.Name, Workload: w.Name, State: StateRunning, Bootstrap: boot,
					})
				}
			}
		}
	}
	return out
}

func TestPriceNoiseBelowTheThresholdMovesNothing(t *testing.T) {
	in := exampleInput(t)
	in.Defaults.MigrationThreshold = 0.10
	in.Observed = observe(solve(t, in))
	r := rand.New(rand.NewPCG(3, 4))
	// Prices each moving by up to 5% change any two prices' ratio by less
	// than the 10% threshold: (1-0.05)/(1+0.05) > 0.9.
	for round := range 50 {
		noisy := in
		noisy.Offers = slices.Clone(in.Offers)
		for i := range noisy.Offers {
			f := 1 + (r.Float64()*2-1)*0.0499
			noisy.Offers[i].PriceMicros = int64(float64(noisy.Offers[i].PriceMicros) * f)
		}
		changes := Diff(solve(t, noisy), in.Observed, DiffOptions{})
		if len(changes.Actions) != 0 {
			t.Fatalf("round %d: price noise moved nodes: %v", round, changes.Actions)
		}
	}
}

func TestACheaperOfferBeyondTheThresholdMovesMovableNodes(t *testing.T) {
	in := exampleInput(t)
	in.Defaults.MigrationThreshold = 0.10
	plan := solve(t, in)
	in.Observed = observe(plan)
	chat := plan.Workload("inference", "chat")
	gcp := chat.Placements[len(chat.Placements)-1].Offer
	if gcp.Cloud != "gcp" {
		t.Fatalf("expected chat's last placement on gcp, got %s", gcp)
	}
	// An L4 offer in another GCP zone becomes 20% cheaper: chat's GCP nodes
	// move; the non-movable training gang does not, whatever the prices.
	for i, o := range in.Offers {
		if o.Cloud == "gcp" && o.Region == gcp.Region && o.Zone != gcp.Zone && o.InstanceType == gcp.InstanceType && o.Market == gcp.Market {
			in.Offers[i].PriceMicros = o.PriceMicros * 8 / 10
			break
		}
		if o.GPUModel == "H100" {
			in.Offers[i].PriceMicros = o.PriceMicros / 4
		}
	}
	// The movable finetune workload may follow the cheaper H100s too;
	// chat's three nodes must move, and the gang must stay.
	changes := Diff(solve(t, in), in.Observed, DiffOptions{})
	var moved []Action
	for _, a := range changes.Actions {
		switch a.Workload {
		case "chat":
			moved = append(moved, a)
		case "pretrain":
			t.Errorf("the non-movable gang moved: %v", a)
		}
	}
	creates, deletes := Changes{Actions: moved}.Counts()
	if creates != 3 || deletes != 3 {
		t.Fatalf("got %d creates and %d deletes of chat, want its 3 GCP nodes moved: %v", creates, deletes, changes.Actions)
	}
	if moved[0].Kind != Create || moved[5].Kind != Delete {
		t.Errorf("replacements must create before they delete: %v", moved)
	}
}

func TestGoldenPlansForTheExample(t *testing.T) {
	in := exampleInput(t)
	plan := solve(t, in)
	repo := exampleRepo(t)
	report := NewReport(plan, Diff(plan, nil, DiffOptions{Revision: SpecRevisions(repo.Fleets)}))
	js, err := json.MarshalIndent(report, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	// reconcile/render checks the text and Markdown of the same plan.
	for name, got := range map[string][]byte{"fleet-repo.json": append(js, '\n')} {
		golden := filepath.Join("..", "testdata", "plans", name)
		if updateGolden {
			if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(golden, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatalf("%v (set GPUFLEET_UPDATE_GOLDEN=1 to create it)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from the golden file; if the change is intended, rerun with GPUFLEET_UPDATE_GOLDEN=1\ngot:\n%s", name, got)
		}
	}
}

// workloadSpec builds a workload with the defaults the schema applies.
func workloadSpec(name, model string, perNode, nodes int) schema.Workload {
	var w schema.Workload
	w.Name = name
	w.GPU.Model, w.GPU.PerNode = model, perNode
	w.Nodes = nodes
	w.Capacity = schema.CapacitySpotFallback
	w.Priority = 50
	w.Placement.Clouds = []string{"aws", "azure", "gcp"}
	w.Placement.Regions.Allow = []string{"*"}
	w.Spread.MaxPerCloud, w.Spread.MaxPerRegion = 1, 1
	w.Movable = true
	w.RunHours = 720
	return w
}

func offer(cloud, region, zone, typ string, market catalog.Market, model string, gpus int, dollars float64, available int) Offer {
	return Offer{OfferKey: OfferKey{cloud, region, zone, typ, market}, GPUModel: model, GPUs: gpus, PriceMicros: catalog.Micros(dollars), Available: available}
}

func TestBadInput(t *testing.T) {
	good := offer("aws", "us-east-1", "us-east-1a", "p5", catalog.OnDemand, "H100", 8, 98.32, Unlimited)
	tests := []struct {
		name     string
		offers   []Offer
		budget   *float64
		blockAll bool
		cause    ShortfallCause
		detail   string
		placed   int
	}{{
		name: "bad prices are skipped with a reason",
		offers: []Offer{
			offer("aws", "us-east-1", "us-east-1b", "p5", catalog.OnDemand, "H100", 8, 0, Unlimited),
			offer("aws", "us-east-1", "us-east-1c", "p5", catalog.OnDemand, "H100", 8, -3, Unlimited),
			{OfferKey: OfferKey{"aws", "us-east-1", "us-east-1d", "p5", catalog.OnDemand}, GPUModel: "H100", GPUs: 8, PriceMicros: 20_000 * 1_000_000, Available: Unlimited},
			good,
		},
		placed: 2,
	}, {
		name:   "only bad prices",
		offers: []Offer{offer("aws", "us-east-1", "us-east-1b", "p5", catalog.OnDemand, "H100", 8, 0, Unlimited)},
		cause:  CauseNoOffer, detail: "1 bad price data",
	}, {
		name:  "empty catalog",
		cause: CauseNoOffer, detail: "the catalog has no offers",
	}, {
		name:     "every offer blocklisted",
		offers:   []Offer{good},
		blockAll: true,
		cause:    CauseNoOffer, detail: "1 blocklisted",
	}, {
		name:   "no capacity anywhere",
		offers: []Offer{offer("aws", "us-east-1", "us-east-1a", "p5", catalog.OnDemand, "H100", 8, 98.32, 1)},
		cause:  CauseCapacity, detail: "room for 1 of 2 nodes", placed: 1,
	}, {
		name:   "a budget of zero",
		offers: []Offer{good},
		budget: new(float64),
		cause:  CauseBudget, detail: "over its budget of $0.00/h",
	}, {
		name:   "no offer can ever serve it",
		offers: []Offer{offer("gcp", "us-central1", "us-central1-a", "g2-standard-4", catalog.OnDemand, "L4", 1, 0.7, Unlimited)},
		cause:  CauseNoOffer, detail: "1 wrong GPU model",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := Input{
				Fleets:   []schema.Fleet{{Name: "f", Owner: "o", Budget: tt.budget, Workloads: []schema.Workload{workloadSpec("w", "H100", 8, 2)}}},
				Defaults: schema.Defaults{MigrationThreshold: 0.1, SpotRiskPremium: 0.15},
				Offers:   tt.offers,
			}
			if tt.blockAll {
				for _, o := range tt.offers {
					in.Blocked = append(in.Blocked, o.OfferKey)
				}
			}
			w := solve(t, in).Workload("f", "w")
			if w.Placed != tt.placed {
				t.Errorf("placed %d, want %d: %+v", w.Placed, tt.placed, w.Placements)
			}
			for _, pl := range w.Placements {
				if pl.PriceMicros <= 0 || pl.PriceMicros > maxPriceMicros {
					t.Errorf("placed on an offer with a bad price: %+v", pl)
				}
			}
			if tt.cause == "" {
				if w.Shortfall != nil {
					t.Errorf("unexpected shortfall %+v", w.Shortfall)
				}
				if w.Rejected[RejectBadPrice] != 3 {
					t.Errorf("rejected = %v, want 3 for bad price data", w.Rejected)
				}
				return
			}
			if w.Shortfall == nil || w.Shortfall.Cause != tt.cause || !strings.Contains(w.Shortfall.Message, tt.detail) {
				t.Errorf("shortfall = %+v, want cause %s mentioning %q", w.Shortfall, tt.cause, tt.detail)
			}
		})
	}
}

func TestBudgetShedsTheLowestPriorityFirst(t *testing.T) {
	budget := 200.0
	important := workloadSpec("serve", "H100", 8, 1)
	important.Priority = 100
	cheap := workloadSpec("batch", "H100", 8, 3)
	cheap.Priority = 10
	in := Input{
		Fleets:   []schema.Fleet{{Name: "f", Owner: "o", Budget: &budget, Workloads: []schema.Workload{cheap, important}}},
		Defaults: schema.Defaults{MigrationThreshold: 0.1},
		Offers:   []Offer{offer("aws", "us-east-1", "us-east-1a", "p5", catalog.OnDemand, "H100", 8, 60, Unlimited)},
	}
	plan := solve(t, in)
	if f := plan.Fleet("f"); f.CostMicros > catalog.Micros(budget) {
		t.Errorf("fleet costs %d, over its budget", f.CostMicros)
	}
	serve, batch := plan.Workload("f", "serve"), plan.Workload("f", "batch")
	if serve.Placed != 1 || batch.Placed != 2 {
		t.Fatalf("serve %d, batch %d placed; want 1 and 2 ($180/h of $200)", serve.Placed, batch.Placed)
	}
	if batch.Shortfall == nil || batch.Shortfall.Cause != CauseBudget || batch.Shortfall.Nodes != 1 {
		t.Errorf("batch shortfall = %+v", batch.Shortfall)
	}
}

func TestGangIsWholeInOneRegionOrNothing(t *testing.T) {
	gang := workloadSpec("train", "H100", 8, 4)
	gang.Placement.Gang = "region"
	in := Input{
		Fleets: []schema.Fleet{{Name: "f", Owner: "o", Workloads: []schema.Workload{gang}}},
		Offers: []Offer{
			// The two cheapest offers hold 4 nodes only between them, in
			// different regions; the one region that holds all 4 costs more.
			offer("aws", "us-east-1", "us-east-1a", "p5", catalog.OnDemand, "H100", 8, 50, 2),
			offer("aws", "us-west-2", "us-west-2a", "p5", catalog.OnDemand, "H100", 8, 50, 2),
			offer("gcp", "us-central1", "us-central1-a", "a3", catalog.OnDemand, "H100", 8, 60, 3),
			offer("gcp", "us-central1", "us-central1-b", "a3", catalog.OnDemand, "H100", 8, 70, 3),
		},
	}
	w := solve(t, in).Workload("f", "train")
	if w.Placed != 4 {
		t.Fatalf("placed %d, want 4", w.Placed)
	}
	for _, pl := range w.Placements {
		if pl.Offer.Region != "us-central1" {
			t.Errorf("gang node in %s: %+v", pl.Offer.Region, w.Placements)
		}
	}
	if w.CostMicros != catalog.Micros(3*60+70) {
		t.Errorf("cost %d, want 3 × $60 + $70", w.CostMicros)
	}

	// Shrink the one big region: nothing may run rather than a split gang.
	in.Offers[3].Available = 0
	w = solve(t, in).Workload("f", "train")
	if w.Placed != 0 || w.Shortfall == nil || w.Shortfall.Cause != CauseGang {
		t.Errorf("placed %d with shortfall %+v; want none placed, cause gang", w.Placed, w.Shortfall)
	}
}

func TestSpreadAcrossClouds(t *testing.T) {
	w := workloadSpec("serve", "L4", 1, 5)
	w.Spread.MaxPerCloud = 0.6
	in := Input{
		Fleets: []schema.Fleet{{Name: "f", Owner: "o", Workloads: []schema.Workload{w}}},
		Offers: []Offer{
			offer("gcp", "us-central1", "us-central1-a", "g2", catalog.OnDemand, "L4", 1, 0.7, Unlimited),
			offer("aws", "us-east-1", "us-east-1a", "g6", catalog.OnDemand, "L4", 1, 0.98, Unlimited),
		},
	}
	got := solve(t, in).Workload("f", "serve")
	perCloud := map[string]int{}
	for _, pl := range got.Placements {
		perCloud[pl.Offer.Cloud] += pl.Count
	}
	if perCloud["gcp"] != 3 || perCloud["aws"] != 2 {
		t.Errorf("per cloud %v, want the cheaper gcp filled to its 60%% share (3) and aws the rest", perCloud)
	}
}

func TestReservationsAreUsedFirst(t *testing.T) {
	in := exampleInput(t)
	chat := solve(t, in).Workload("inference", "chat")
	reserved := 0
	for _, pl := range chat.Placements {
		reserved += pl.Reserved
		if pl.Reserved > 0 && (pl.Offer.InstanceType != "g6.2xlarge" || pl.Offer.Region != "us-east-1") {
			t.Errorf("reserved nodes on %s", pl.Offer)
		}
	}
	if reserved != 2 {
		t.Errorf("%d reserved nodes, want the example's 2 g6.2xlarge reservations used", reserved)
	}
}

func TestEgressIsItsOwnLine(t *testing.T) {
	in := exampleInput(t)
	pretrain := solve(t, in).Workload("training", "pretrain")
	// 2,000 GB leaving AWS for GCP at $0.09/GB over 336 hours.
	want := catalog.Micros(2000 * 0.09 / 336)
	for _, pl := range pretrain.Placements {
		if pl.Offer.Cloud != "aws" && pl.EgressMicros != want {
			t.Errorf("egress on %s = %d, want %d", pl.Offer, pl.EgressMicros, want)
		}
	}
	if pretrain.EgressMicros == 0 {
		t.Error("no egress line for a workload placed away from its data")
	}
}

// The converged fixture is what runs once the example's plan is applied;
// the plan command's tests use it to show a plan with nothing to do.
func TestConvergedFixtureMatchesThePlan(t *testing.T) {
	plan := solve(t, exampleInput(t))
	golden := filepath.Join("..", "testdata", "observed", "fleet-repo-converged.json")
	if updateGolden {
		// The file is in the format of plan --observed.
		file := struct {
			FormatVersion int        `json:"formatVersion"`
			Kind          string     `json:"kind"`
			Instances     []Instance `json:"instances"`
		}{1, "observed", observe(plan)}
		data, err := json.MarshalIndent(file, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, append(data, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Instances []Instance `json:"instances"`
	}
	if err := json.Unmarshal(data, &file); err != nil {
		t.Fatal(err)
	}
	if changes := Diff(plan, file.Instances, DiffOptions{}); len(changes.Actions) != 0 {
		t.Errorf("the converged fixture is stale (rerun with GPUFLEET_UPDATE_GOLDEN=1): %v", changes.Actions)
	}
}

// A start that no longer fits (an offer gone from the catalog, one the
// workload may not use, more nodes than it asks for, a workload that is
// gone) is left out where it does not fit: the plan is worth what the plan
// from nothing is, and a start from that plan finds it again.
func TestStartThatNoLongerFitsChangesNothing(t *testing.T) {
	in := exampleInput(t)
	cold := solve(t, in)
	start := startOf(cold)
	var any OfferKey
	for key, placements := range start {
		placements = slices.Clone(placements)
		any = placements[0].Offer
		placements[0].Count += 50
		gone := placements[0]
		gone.Offer.Region = "gone-1"
		start[key] = append(placements, gone)
	}
	start["nofleet/noworkload"] = []Placement{{Offer: any, Count: 3}}
	for name, s := range map[string]map[string][]Placement{"the plan's own": startOf(cold), "one that no longer fits": start} {
		in.Start = s
		warm, p, err := solvePlanning(in)
		if err != nil {
			t.Fatal(err)
		}
		if warm.CostMicros != cold.CostMicros || warm.Optimal != cold.Optimal || warm.GapMicros != cold.GapMicros {
			t.Errorf("from %s placements: cost %d optimal %v, from nothing %d %v", name, warm.CostMicros, warm.Optimal, cold.CostMicros, cold.Optimal)
		}
		if p.started == 0 {
			t.Errorf("from %s placements no solve started from them", name)
		}
	}
}
