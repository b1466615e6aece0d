// SPDX-License-Identifier: Apache-2.0

package planner

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/gpufleet/gpufleet/schema"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// The exactness test compares Solve with a brute force that enumerates
// every assignment of every workload's nodes. The brute force is written
// from the rules, not from the planner's code: its own eligibility, costs,
// capacities, spread, gangs, reservations and objective. Budgets are not
// part of it: shedding over budget is a rule applied after the optimum.

// bruteRegions are the places random instances draw offers from.
var bruteZones = []struct{ cloud, region, zone string }{
	{"aws", "us-east-1", "us-east-1a"},
	{"aws", "us-east-1", "us-east-1b"},
	{"aws", "eu-west-1", "eu-west-1a"},
	{"gcp", "us-central1", "us-central1-a"},
	{"gcp", "europe-west4", "europe-west4-a"},
}

var bruteTypes = []struct {
	name  string
	model string
	gpus  int
}{{"big", "H100", 8}, {"small", "L4", 1}, {"small4", "L4", 4}}

var bruteEgress = []catalog.Egress{
	{Cloud: "aws", InterRegionMicrosPerGB: 20_000, InternetMicrosPerGB: 90_000},
	{Cloud: "gcp", InterRegionMicrosPerGB: 20_000, InternetMicrosPerGB: 120_000},
}

// randomInput draws a small instance. One in three is crowded: every
// workload wants the same kind of node and the offers have little room, so
// workloads compete and priorities decide who goes short.
func randomInput(r *rand.Rand) Input {
	crowded := r.IntN(3) == 0
	var in Input
	in.Egress = bruteEgress
	in.Defaults = schema.Defaults{
		MigrationThreshold: []float64{0, 0.1, 0.3}[r.IntN(3)],
		SpotRiskPremium:    []float64{0, 0.15}[r.IntN(2)],
	}
	seen := map[OfferKey]bool{}
	for range 4 + r.IntN(4) {
		z := bruteZones[r.IntN(len(bruteZones))]
		t := bruteTypes[0]
		if r.IntN(6) == 0 && !crowded {
			t = bruteTypes[1+r.IntN(2)]
		}
		market := []catalog.Market{catalog.OnDemand, catalog.Spot}[r.IntN(2)]
		k := OfferKey{z.cloud, z.region, z.zone, t.name, market}
		if seen[k] {
			continue
		}
		seen[k] = true
		price := int64(1+r.IntN(40)) * 250_000
		switch r.IntN(20) {
		case 0:
			price = 0
		case 1:
			price = -price
		}
		avail := Unlimited
		if crowded {
			avail = r.IntN(3)
		} else if r.IntN(3) != 0 {
			avail = max(0, r.IntN(5)-1)
		}
		in.Offers = append(in.Offers, Offer{OfferKey: k, GPUModel: t.model, GPUs: t.gpus, PriceMicros: price, Available: avail})
	}
	for _, o := range in.Offers {
		if r.IntN(10) == 0 {
			in.Blocked = append(in.Blocked, o.OfferKey)
		}
	}
	for _, o := range in.Offers {
		if o.Market == catalog.OnDemand && r.IntN(2) == 0 {
			in.Reservations = append(in.Reservations, schema.Reservation{Cloud: o.Cloud, Region: o.Region, InstanceType: o.InstanceType, Count: 1 + r.IntN(2)})
			break
		}
	}
	fleets := []string{"alpha", "beta"}
	workloads := 1 + r.IntN(3)
	priorities := r.Perm(4)
	if crowded {
		workloads = 3
	}
	for i := range workloads {
		fleetName := fleets[r.IntN(2)]
		var fleet *schema.Fleet
		for j := range in.Fleets {
			if in.Fleets[j].Name == fleetName {
				fleet = &in.Fleets[j]
			}
		}
		if fleet == nil {
			in.Fleets = append(in.Fleets, schema.Fleet{Name: fleetName, Owner: "team"})
			fleet = &in.Fleets[len(in.Fleets)-1]
		}
		var w schema.Workload
		w.Name = fmt.Sprintf("w%d", i)
		t := bruteTypes[0]
		if r.IntN(6) == 0 && !crowded {
			t = bruteTypes[1+r.IntN(2)]
		}
		w.GPU.Model, w.GPU.PerNode = t.model, t.gpus
		w.Nodes = r.IntN(4)
		if crowded {
			w.Nodes = 2 + r.IntN(2)
		}
		w.Capacity = []string{schema.CapacityOnDemand, schema.CapacitySpot, schema.CapacitySpotFallback, schema.CapacitySpotFallback, schema.CapacitySpotFallback}[r.IntN(5)]
		w.Priority = r.IntN(4)
		if crowded {
			w.Priority = priorities[i]
		}
		w.Placement.Clouds = [][]string{{"aws", "gcp"}, {"aws", "gcp"}, {"aws", "gcp"}, {"aws", "gcp"}, {"aws"}, {"gcp"}}[r.IntN(6)]
		w.Placement.Regions.Allow = [][]string{{"*"}, {"*"}, {"*"}, {"*"}, {"us-*"}, {"*-1", "europe-*"}}[r.IntN(6)]
		if r.IntN(5) == 0 {
			w.Placement.Regions.Deny = []string{"eu-*"}
		}
		if r.IntN(12) == 0 {
			w.Placement.Zones = []string{"us-east-1a", "us-central1-a"}
		}
		w.Spread.MaxPerCloud, w.Spread.MaxPerRegion = 1, 1
		if r.IntN(4) == 0 {
			w.Placement.Gang = "region"
			w.Spread.MaxPerZone = []int{0, 0, 2}[r.IntN(3)]
		} else {
			w.Spread.MaxPerCloud = []float64{1, 0.5, 0.67}[r.IntN(3)]
			w.Spread.MaxPerRegion = []float64{1, 0.5}[r.IntN(2)]
			w.Spread.MaxPerZone = []int{0, 0, 1, 2}[r.IntN(4)]
		}
		w.Movable = r.IntN(4) != 0
		if r.IntN(6) == 0 && !crowded {
			limit := float64(1 + r.IntN(8))
			w.MaxPricePerNodeHour = &limit
		}
		if crowded {
			w.Capacity = schema.CapacitySpotFallback
			w.Placement.Clouds = []string{"aws", "gcp"}
			w.Placement.Regions.Allow = []string{"*"}
			w.Placement.Regions.Deny, w.Placement.Zones = nil, nil
		}
		w.RunHours = 100
		if r.IntN(3) == 0 {
			z := bruteZones[r.IntN(len(bruteZones))]
			w.Data = &schema.Data{Cloud: z.cloud, Region: z.region, SizeGB: float64(r.IntN(2000))}
		}
		fleet.Workloads = append(fleet.Workloads, w)
		for range r.IntN(3) {
			if len(in.Offers) == 0 {
				break
			}
			o := in.Offers[r.IntN(len(in.Offers))]
			state := []State{StateRunning, StateRunning, StatePending, StatePreempted}[r.IntN(4)]
			in.Observed = append(in.Observed, Instance{
				ID: fmt.Sprintf("i-%d", len(in.Observed)), OfferKey: o.OfferKey,
				Fleet: fleet.Name, Workload: w.Name, State: state,
			})
		}
	}
	return in
}

// brute holds an instance prepared from the rules alone.
type brute struct {
	in        Input
	workloads []*bruteWorkload
	maxCost   int64
	// pool: reservation left after fixed nodes, per pool key, and refund.
	poolLeft   map[reservationKey]int
	poolRefund map[reservationKey]int64
	fixedResv  int
}

type bruteWorkload struct {
	fleet    string
	spec     schema.Workload
	offers   []int // offers that may take a node of this workload
	cost     []int64
	keepCost []int64
	running  []int
	// canAdd says a new node may go there (not blocked, capacity not zero).
	canAdd []bool
	fixed  map[int]int
	// held are running nodes on offers the rules allow but whose price is
	// not valid, by offer index into the input: they stay and count.
	held       map[int]int
	demand     int
	forcedGang string // region a non-movable gang is held to, "-" for none
}

func newBrute(in Input) *brute {
	b := &brute{in: in, poolLeft: map[reservationKey]int{}, poolRefund: map[reservationKey]int64{}}
	for _, r := range in.Reservations {
		k := reservationKey{r.Cloud, r.Region, r.InstanceType}
		refund := int64(math.MaxInt64)
		for _, o := range in.Offers {
			if o.Cloud == r.Cloud && o.Region == r.Region && o.InstanceType == r.InstanceType && o.Market == catalog.OnDemand && o.PriceMicros > 0 {
				refund = min(refund, o.PriceMicros)
			}
		}
		if refund != math.MaxInt64 {
			b.poolLeft[k] += r.Count
			b.poolRefund[k] = refund
		}
	}
	blocked := map[OfferKey]bool{}
	for _, k := range in.Blocked {
		blocked[k] = true
	}
	fleets := slices.Clone(in.Fleets)
	slices.SortFunc(fleets, func(a, c schema.Fleet) int { return strings.Compare(a.Name, c.Name) })
	for _, f := range fleets {
		ws := slices.Clone(f.Workloads)
		slices.SortFunc(ws, func(a, c schema.Workload) int { return strings.Compare(a.Name, c.Name) })
		for _, spec := range ws {
			w := &bruteWorkload{fleet: f.Name, spec: spec, fixed: map[int]int{}, held: map[int]int{}}
			unpriced := map[int]int{}
			for i, o := range in.Offers {
				running := 0
				for _, inst := range in.Observed {
					if inst.Fleet == f.Name && inst.Workload == spec.Name && inst.OfferKey == o.OfferKey && (inst.State == StateRunning || inst.State == StatePending) {
						running++
					}
				}
				if !bruteEligible(spec, o) {
					if running > 0 && o.PriceMicros <= 0 {
						priced := o
						priced.PriceMicros = 1
						if bruteEligible(spec, priced) {
							unpriced[i] = running
						}
					}
					continue
				}
				add := !blocked[o.OfferKey] && o.Available != 0
				if !add && running == 0 {
					continue
				}
				cost := o.PriceMicros + bruteEgressCost(spec, o)
				if o.Market == catalog.Spot {
					cost += int64(math.Round(float64(o.PriceMicros) * in.Defaults.SpotRiskPremium))
				}
				w.offers = append(w.offers, i)
				w.cost = append(w.cost, cost)
				w.keepCost = append(w.keepCost, cost-max(1, int64(math.Round(float64(cost)*in.Defaults.MigrationThreshold))))
				w.running = append(w.running, running)
				w.canAdd = append(w.canAdd, add)
				b.maxCost = max(b.maxCost, cost)
			}
			w.demand = spec.Nodes
			if !spec.Movable {
				b.fix(w)
			}
			b.hold(w, unpriced)
			b.workloads = append(b.workloads, w)
		}
	}
	// Fixed nodes take reservations first, in workload order.
	for _, w := range b.workloads {
		for _, j := range slices.Sorted(maps.Keys(w.fixed)) {
			o := in.Offers[w.offers[j]]
			k := reservationKey{o.Cloud, o.Region, o.InstanceType}
			if _, ok := b.poolLeft[k]; !ok || o.Market != catalog.OnDemand {
				continue
			}
			n := min(b.poolLeft[k], w.fixed[j])
			b.poolLeft[k] -= n
			b.fixedResv += n
		}
	}
	return b
}

func (b *brute) fix(w *bruteWorkload) {
	left := w.spec.Nodes
	region := ""
	if w.spec.Placement.Gang == "region" {
		per := map[string]int{}
		for j, i := range w.offers {
			per[bruteRegion(b.in.Offers[i])] += w.running[j]
		}
		best := 0
		for _, r := range slices.Sorted(maps.Keys(per)) {
			if per[r] > best {
				region, best = r, per[r]
			}
		}
	}
	order := make([]int, len(w.offers))
	for j := range order {
		order[j] = j
	}
	slices.SortFunc(order, func(a, c int) int { return b.in.Offers[w.offers[a]].Compare(b.in.Offers[w.offers[c]].OfferKey) })
	for _, j := range order {
		o := b.in.Offers[w.offers[j]]
		if w.running[j] == 0 || left == 0 || (region != "" && bruteRegion(o) != region) {
			continue
		}
		n := min(w.running[j], left)
		w.fixed[j] = n
		left -= n
	}
	w.demand = left
	if w.spec.Placement.Gang == "region" && len(w.fixed) > 0 {
		w.forcedGang = region
	}
}

// hold keeps running nodes on offers without a valid price, in offer
// order, up to what the workload still asks for; a gang keeps only those in
// its fixed region, or else in the region holding most of them.
func (b *brute) hold(w *bruteWorkload, unpriced map[int]int) {
	region := ""
	if w.spec.Placement.Gang == "region" {
		per := map[string]int{}
		for i, n := range unpriced {
			per[bruteRegion(b.in.Offers[i])] += n
		}
		best := 0
		for _, r := range slices.Sorted(maps.Keys(per)) {
			if per[r] > best {
				region, best = r, per[r]
			}
		}
		if len(w.fixed) > 0 {
			region = w.forcedGang
		}
	}
	order := slices.SortedFunc(maps.Keys(unpriced), func(a, c int) int { return b.in.Offers[a].Compare(b.in.Offers[c].OfferKey) })
	for _, i := range order {
		if w.demand == 0 || (region != "" && bruteRegion(b.in.Offers[i]) != region) {
			continue
		}
		n := min(unpriced[i], w.demand)
		w.held[i] = n
		w.demand -= n
	}
	if len(w.held) > 0 && w.spec.Placement.Gang == "region" {
		w.forcedGang = region
	}
}

// bruteRegion names an offer's region with its cloud: a region's name
// alone may be another cloud's too.
func bruteRegion(o Offer) string { return o.Cloud + "/" + o.Region }

func bruteEligible(w schema.Workload, o Offer) bool {
	if o.GPUModel != w.GPU.Model || o.GPUs != w.GPU.PerNode || !slices.Contains(w.Placement.Clouds, o.Cloud) {
		return false
	}
	allowed := false
	for _, g := range w.Placement.Regions.Allow {
		if ok, _ := path.Match(g, o.Region); ok {
			allowed = true
		}
	}
	for _, g := range w.Placement.Regions.Deny {
		if ok, _ := path.Match(g, o.Region); ok {
			allowed = false
		}
	}
	if !allowed || (len(w.Placement.Zones) > 0 && !slices.Contains(w.Placement.Zones, o.Zone)) {
		return false
	}
	switch w.Capacity {
	case schema.CapacityOnDemand:
		if o.Market != catalog.OnDemand {
			return false
		}
	case schema.CapacitySpot:
		if o.Market != catalog.Spot {
			return false
		}
	}
	if o.PriceMicros <= 0 {
		return false
	}
	return w.MaxPricePerNodeHour == nil || float64(o.PriceMicros) <= *w.MaxPricePerNodeHour*1e6
}

func bruteEgressCost(w schema.Workload, o Offer) int64 {
	d := w.Data
	if d == nil || (d.Cloud == o.Cloud && d.Region == o.Region) {
		return 0
	}
	for _, e := range bruteEgress {
		if e.Cloud == d.Cloud {
			rate := e.InternetMicrosPerGB
			if d.Cloud == o.Cloud {
				rate = e.InterRegionMicrosPerGB
			}
			return int64(math.Round(d.SizeGB * float64(rate) / w.RunHours))
		}
	}
	return 0
}

// evaluate checks an assignment (nodes per workload per candidate, beyond
// fixed ones) against every rule and returns its objective, or false.
func (b *brute) evaluate(assign [][]int) (bruteValue, bool) {
	used := map[int]int{}
	pool := map[reservationKey]int{}
	total := int64(0)
	value := bruteValue{placed: make([]int64, len(b.levels()))}
	for wi, w := range b.workloads {
		placed := 0
		perCloud, perRegion, perZone := map[string]int{}, map[string]int{}, map[string]int{}
		for j, n := range assign[wi] {
			if n == 0 {
				continue
			}
			o := b.in.Offers[w.offers[j]]
			kept := 0
			if w.spec.Movable {
				kept = min(n, w.running[j])
			}
			add := n - kept
			if add > 0 && !w.canAdd[j] {
				return bruteValue{}, false
			}
			used[w.offers[j]] += add
			total += int64(kept)*w.keepCost[j] + int64(add)*w.cost[j]
			placed += n
			perCloud[o.Cloud] += n
			perRegion[bruteRegion(o)] += n
			perZone[o.Cloud+"/"+o.Region+"/"+o.Zone] += n
			if o.Market == catalog.OnDemand {
				pool[reservationKey{o.Cloud, o.Region, o.InstanceType}] += n
			}
		}
		fixedCloud, fixedRegion, fixedZone := map[string]int{}, map[string]int{}, map[string]int{}
		for j, n := range w.fixed {
			o := b.in.Offers[w.offers[j]]
			fixedCloud[o.Cloud] += n
			fixedRegion[bruteRegion(o)] += n
			fixedZone[o.Cloud+"/"+o.Region+"/"+o.Zone] += n
		}
		for i, n := range w.held {
			o := b.in.Offers[i]
			fixedCloud[o.Cloud] += n
			fixedRegion[bruteRegion(o)] += n
			fixedZone[o.Cloud+"/"+o.Region+"/"+o.Zone] += n
		}
		if most := w.spec.Spread.MaxPerZone; most > 0 {
			for z, n := range perZone {
				if n > max(0, most-fixedZone[z]) {
					return bruteValue{}, false
				}
			}
		}
		nodes := w.spec.Nodes
		if w.spec.Spread.MaxPerCloud < 1 {
			for c, n := range perCloud {
				if n > max(0, shareOf(w.spec.Spread.MaxPerCloud, nodes)-fixedCloud[c]) {
					return bruteValue{}, false
				}
			}
		}
		if w.spec.Spread.MaxPerRegion < 1 {
			for r, n := range perRegion {
				if n > max(0, shareOf(w.spec.Spread.MaxPerRegion, nodes)-fixedRegion[r]) {
					return bruteValue{}, false
				}
			}
		}
		if w.spec.Placement.Gang == "region" && placed > 0 {
			if placed != w.demand || len(perRegion) != 1 {
				return bruteValue{}, false
			}
			if w.forcedGang != "" && perRegion[w.forcedGang] == 0 {
				return bruteValue{}, false
			}
		}
		value.placed[b.levelOf(w.spec.Priority)] += int64(w.kept() + placed)
	}
	for i, n := range used {
		if a := b.in.Offers[i].Available; a != Unlimited && n > a {
			return bruteValue{}, false
		}
	}
	for k, n := range pool {
		if left, ok := b.poolLeft[k]; ok {
			total -= int64(min(n, left)) * b.poolRefund[k]
		}
	}
	value.cost = total
	return value, true
}

// bruteValue is an assignment's objective as the rules state it: nodes
// placed at each priority, highest first, then the cost.
type bruteValue struct {
	placed []int64
	cost   int64
}

func (a bruteValue) better(o bruteValue) bool {
	for i := range a.placed {
		if a.placed[i] != o.placed[i] {
			return a.placed[i] > o.placed[i]
		}
	}
	return a.cost < o.cost
}

func (a bruteValue) String() string { return fmt.Sprintf("%v nodes at $%d", a.placed, a.cost) }

// levels are the instance's priorities, highest first.
func (b *brute) levels() []int {
	var out []int
	for _, w := range b.workloads {
		if !slices.Contains(out, w.spec.Priority) {
			out = append(out, w.spec.Priority)
		}
	}
	slices.SortFunc(out, func(x, y int) int { return y - x })
	return out
}

func (b *brute) levelOf(priority int) int { return slices.Index(b.levels(), priority) }

// kept counts the nodes that stay where they run, outside the flow.
func (w *bruteWorkload) kept() int {
	n := 0
	for _, c := range w.fixed {
		n += c
	}
	for _, c := range w.held {
		n += c
	}
	return n
}

// priorityMatters reports whether the best assignment changes when every
// workload has the same priority: the instances that test shortfalls
// falling on the lowest priority.
func priorityMatters(b *brute) bool {
	flat := *b
	flat.workloads = nil
	for _, w := range b.workloads {
		c := *w
		c.spec.Priority = 0
		flat.workloads = append(flat.workloads, &c)
	}
	return flat.bestAssignmentUnplaced() != b.bestAssignmentUnplaced()
}

// bestAssignmentUnplaced is the unplaced count per workload of the best
// assignment, as a string for comparison.
func (b *brute) bestAssignmentUnplaced() string {
	var best *bruteValue
	bestAssign := ""
	b.enumerate(func(assign [][]int) {
		if v, ok := b.evaluate(assign); ok && (best == nil || v.better(*best)) {
			best = &v
			var unplaced []int
			for wi, w := range b.workloads {
				n := w.demand
				for _, k := range assign[wi] {
					n -= k
				}
				unplaced = append(unplaced, n)
			}
			bestAssign = fmt.Sprint(unplaced)
		}
	})
	return bestAssign
}

// best enumerates every assignment.
func (b *brute) best() bruteValue {
	var best *bruteValue
	b.enumerate(func(assign [][]int) {
		if v, ok := b.evaluate(assign); ok && (best == nil || v.better(*best)) {
			best = &v
		}
	})
	return *best
}

// enumerate calls visit with every way to share each workload's demand
// among its offers, the rest unplaced.
func (b *brute) enumerate(visit func([][]int)) {
	assign := make([][]int, len(b.workloads))
	for i, w := range b.workloads {
		assign[i] = make([]int, len(w.offers))
	}
	var place func(wi, j, left int)
	place = func(wi, j, left int) {
		if wi == len(b.workloads) {
			visit(assign)
			return
		}
		w := b.workloads[wi]
		if j == len(w.offers) {
			// Whatever is left stays unplaced.
			place(wi+1, 0, nextDemand(b, wi+1))
			return
		}
		for n := 0; n <= left; n++ {
			assign[wi][j] = n
			place(wi, j+1, left-n)
		}
		assign[wi][j] = 0
	}
	place(0, 0, nextDemand(b, 0))
}

func nextDemand(b *brute, wi int) int {
	if wi < len(b.workloads) {
		return b.workloads[wi].demand
	}
	return 0
}

// fromPlan reads the plan's flow (placements less fixed nodes) as an
// assignment.
func (b *brute) fromPlan(t *testing.T, plan *Plan) [][]int {
	assign := make([][]int, len(b.workloads))
	for wi, w := range b.workloads {
		assign[wi] = make([]int, len(w.offers))
		wp := plan.Workload(w.fleet, w.spec.Name)
		if wp == nil {
			t.Fatalf("plan has no workload %s/%s", w.fleet, w.spec.Name)
		}
		for i, n := range w.held {
			if !slices.ContainsFunc(wp.Placements, func(pl Placement) bool { return pl.Unpriced && pl.Offer == b.in.Offers[i].OfferKey }) {
				t.Fatalf("%s/%s: the plan lets go of %d running nodes on %s, whose only fault is their price", w.fleet, w.spec.Name, n, b.in.Offers[i].OfferKey)
			}
		}
		for _, pl := range wp.Placements {
			if pl.Unpriced {
				i := slices.IndexFunc(b.in.Offers, func(o Offer) bool { return o.OfferKey == pl.Offer })
				if i < 0 || w.held[i] != pl.Count {
					t.Fatalf("%s/%s keeps %d unpriced nodes on %s; the rules keep %d", w.fleet, w.spec.Name, pl.Count, pl.Offer, w.held[i])
				}
				continue
			}
			j := slices.IndexFunc(w.offers, func(i int) bool { return b.in.Offers[i].OfferKey == pl.Offer })
			if j < 0 {
				t.Fatalf("%s/%s placed on %s, which the rules do not allow", w.fleet, w.spec.Name, pl.Offer)
			}
			assign[wi][j] = pl.Count - w.fixed[j]
			if assign[wi][j] < 0 {
				t.Fatalf("%s/%s: %d nodes on %s, fewer than the %d that must stay", w.fleet, w.spec.Name, pl.Count, pl.Offer, w.fixed[j])
			}
		}
	}
	return assign
}

func TestSolveMatchesBruteForce(t *testing.T) {
	if testing.Short() {
		t.Skip("2,000 instances solved by brute force; run without -short")
	}
	const instances = 2000
	r := rand.New(rand.NewPCG(7, 11))
	shortfalls, gangs, reserved, contested := 0, 0, 0, 0
	for i := range instances {
		in := randomInput(r)
		plan, err := Solve(in)
		if err != nil {
			t.Fatalf("instance %d: %v", i, err)
		}
		b := newBrute(in)
		want := b.best()
		got, ok := b.evaluate(b.fromPlan(t, plan))
		if !ok {
			t.Fatalf("instance %d: the plan breaks a rule\ninput: %+v\nplan: %+v", i, in, plan.Fleets)
		}
		if got.better(want) || want.better(got) {
			t.Fatalf("instance %d: plan objective %v, brute force %v\ninput: %+v\nplan: %+v", i, got, want, in, plan.Fleets)
		}
		if !plan.Optimal {
			t.Fatalf("instance %d: small plan not marked optimal (gap %d)", i, plan.GapMicros)
		}
		for _, f := range plan.Fleets {
			for _, w := range f.Workloads {
				if w.Shortfall != nil {
					shortfalls++
				}
				for _, pl := range w.Placements {
					reserved += pl.Reserved
				}
			}
		}
		for _, w := range b.workloads {
			if w.spec.Placement.Gang == "region" && w.demand > 0 {
				gangs++
			}
		}
		if priorityMatters(b) {
			contested++
		}
	}
	// The generator must exercise the hard parts, or the test proves little.
	if shortfalls < instances/10 || gangs < instances/10 || reserved < instances/40 || contested < instances/20 {
		t.Errorf("weak coverage: %d shortfalls, %d gangs, %d reserved nodes, %d contested in %d instances", shortfalls, gangs, reserved, contested, instances)
	}
	t.Logf("%d instances: %d shortfalls, %d gangs, %d reserved nodes, %d where priority decides", instances, shortfalls, gangs, reserved, contested)
}
