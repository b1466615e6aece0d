// SPDX-License-Identifier: Apache-2.0

package planner

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/gpufleet/gpufleet/schema"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// The cross-check: the planner against an integer program written here
// from the rules alone — who may run where, capacity, spread, gangs,
// reservations, egress, budgets and the lexicographic objective — and
// solved by CBC, a solver that shares none of the planner's code or
// modelling. Priorities are solved one after the other, each level's count
// fixed before the next, then the cost; the answer must equal the
// planner's exactly, and a plan the planner calls optimal must never be
// beaten.

// milpInstance is a random planning problem of one of four kinds, over
// two hyperscalers and a GPU cloud of regions without zones, spot market,
// quotas or egress charges, as Lambda Cloud is.
func milpInstance(r *rand.Rand, kind int) Input {
	zones := []struct{ cloud, region, zone string }{
		{"aws", "us-east-1", "us-east-1a"}, {"aws", "us-east-1", "us-east-1b"}, {"aws", "eu-west-1", "eu-west-1a"},
		{"gcp", "us-central1", "us-central1-a"}, {"gcp", "us-central1", "us-central1-b"}, {"gcp", "europe-west4", "europe-west4-a"},
		{"lambda", "us-east-1", "us-east-1"}, {"lambda", "europe-central-1", "europe-central-1"},
	}
	types := []struct {
		name, model string
		gpus        int
	}{{"big", "H100", 8}, {"mid", "L4", 4}}
	in := Input{Egress: []catalog.Egress{
		{Cloud: "aws", InterRegionMicrosPerGB: 20_000, InternetMicrosPerGB: 90_000},
		{Cloud: "gcp", InterRegionMicrosPerGB: 20_000, InternetMicrosPerGB: 120_000},
		{Cloud: "lambda"},
	}}
	in.Defaults = schema.Defaults{
		MigrationThreshold: []float64{0, 0.1, 0.3}[r.IntN(3)],
		SpotRiskPremium:    []float64{0, 0.15}[r.IntN(2)],
	}
	// kind 0: small; 1: larger; 2: tight, every offer with room for 1 or
	// 2; 3: tight, and most workloads gangs that compete for regions; 4:
	// larger, with quotas. Kinds 1 to 3 have quotas two times in three.
	nOffers, nWorkloads := 4+r.IntN(5), 1+r.IntN(4)
	if kind > 0 {
		nOffers, nWorkloads = 10+r.IntN(14), 3+r.IntN(6)
	}
	if kind == 3 {
		nWorkloads = 5 + r.IntN(5)
	}
	seen := map[OfferKey]bool{}
	for len(in.Offers) < nOffers {
		z := zones[r.IntN(len(zones))]
		t := types[0]
		if r.IntN(4) == 0 {
			t = types[1]
		}
		market := []catalog.Market{catalog.OnDemand, catalog.Spot}[r.IntN(2)]
		if z.cloud == "lambda" {
			market = catalog.OnDemand
		}
		k := OfferKey{z.cloud, z.region, z.zone, t.name, market}
		if seen[k] {
			continue
		}
		seen[k] = true
		avail := Unlimited
		switch {
		case kind >= 2:
			avail = 1 + r.IntN(2)
		case r.IntN(3) != 0:
			avail = r.IntN(6)
		}
		in.Offers = append(in.Offers, Offer{OfferKey: k, GPUModel: t.model, GPUs: t.gpus, PriceMicros: int64(1+r.IntN(40)) * 250_000, Available: avail})
	}
	for _, o := range in.Offers {
		if r.IntN(12) == 0 {
			in.Blocked = append(in.Blocked, o.OfferKey)
		}
		if o.Market == catalog.OnDemand && r.IntN(6) == 0 {
			in.Reservations = append(in.Reservations, schema.Reservation{Cloud: o.Cloud, Region: o.Region, InstanceType: o.InstanceType, Count: 1 + r.IntN(3)})
		}
	}
	// A budget binds a fleet of its own; two fleets otherwise.
	fleets := 1 + r.IntN(2)
	budget := r.IntN(4) == 0
	if budget {
		fleets = 1
	}
	for f := range fleets {
		fl := schema.Fleet{Name: fmt.Sprintf("f%d", f), Owner: "team"}
		if budget {
			b := float64(5 + r.IntN(60))
			fl.Budget = &b
		}
		in.Fleets = append(in.Fleets, fl)
	}
	for i := range nWorkloads {
		t := types[0]
		if r.IntN(4) == 0 {
			t = types[1]
		}
		w := workloadSpec(fmt.Sprintf("w%d", i), t.model, t.gpus, 1+r.IntN(4))
		w.Priority = r.IntN(3) * 10
		w.Capacity = []string{schema.CapacityOnDemand, schema.CapacitySpot, schema.CapacitySpotFallback}[r.IntN(3)]
		w.Placement.Clouds = [][]string{{"aws", "gcp", "lambda"}, {"aws", "gcp"}, {"aws"}, {"gcp"}, {"lambda"}, {"gcp", "lambda"}}[r.IntN(6)]
		w.Placement.Regions.Allow = [][]string{{"*"}, {"*"}, {"us-*"}, {"*-1", "europe-*"}}[r.IntN(4)]
		roll := r.IntN(4)
		if kind == 3 && roll != 1 {
			roll = 0 // three in four are gangs
		}
		switch roll {
		case 0:
			// Some gangs share a zone rather than a region.
			w.Placement.Gang = []string{"region", "region", "zone"}[r.IntN(3)]
			if w.Placement.Gang == "region" {
				// A region gang spread over the region's zones.
				w.Spread.MaxPerZone = []int{0, 0, 1, 2}[r.IntN(4)]
			}
		case 1:
			w.Spread.MaxPerCloud = []float64{0.5, 0.67}[r.IntN(2)]
			w.Spread.MaxPerRegion = []float64{1, 0.5}[r.IntN(2)]
			w.Spread.MaxPerZone = []int{0, 1, 2}[r.IntN(3)]
		}
		if r.IntN(3) == 0 {
			z := zones[r.IntN(len(zones))]
			w.Data = &schema.Data{Cloud: z.cloud, Region: z.region, SizeGB: float64(r.IntN(3000))}
		}
		f := &in.Fleets[r.IntN(len(in.Fleets))]
		f.Workloads = append(f.Workloads, w)
		// Running nodes, kept or moved at the keep bonus.
		for range r.IntN(3) {
			o := in.Offers[r.IntN(len(in.Offers))]
			state := []State{StateRunning, StateRunning, StatePending}[r.IntN(3)]
			in.Observed = append(in.Observed, Instance{ID: fmt.Sprintf("i-%d", len(in.Observed)), OfferKey: o.OfferKey, Fleet: f.Name, Workload: w.Name, State: state})
		}
	}
	if kind == 4 || kind > 0 && r.IntN(3) > 0 {
		addQuotas(r, &in)
	}
	return in
}

// addQuotas puts weighted limits on an instance, the way the clouds count
// them: vCPUs per region, on-demand and spot apart (a big node counts 96, a
// mid one 36), and GPUs across every region (8 and 4), with use by others
// or, for some, no use reported at all.
func addQuotas(r *rand.Rand, in *Input) {
	vcpus := map[string]int64{"big": 96, "mid": 36}
	gpus := map[string]int64{"big": 8, "mid": 4}
	for i := range in.Offers {
		o := &in.Offers[i]
		if o.Cloud == "lambda" {
			continue // no quota API
		}
		name := "od-vcpus"
		if o.Market == catalog.Spot {
			name = "spot-vcpus"
		}
		o.Quotas = []QuotaCount{{name, vcpus[o.InstanceType]}, {"gpus", gpus[o.InstanceType]}}
	}
	used := func(limit int64) int64 {
		if r.IntN(3) == 0 {
			return UsedUnknown
		}
		return int64(r.IntN(int(limit)/2 + 1))
	}
	seen := map[string]bool{}
	for _, o := range in.Offers {
		if o.Cloud == "lambda" {
			continue
		}
		for _, name := range []string{"od-vcpus", "spot-vcpus"} {
			if seen[o.Cloud+o.Region+name] || r.IntN(4) == 0 {
				seen[o.Cloud+o.Region+name] = true
				continue
			}
			seen[o.Cloud+o.Region+name] = true
			limit := int64(r.IntN(500))
			in.Quotas = append(in.Quotas, Quota{Cloud: o.Cloud, Region: o.Region, Name: name, Unit: catalog.VCPUs, Limit: limit, Used: used(limit)})
		}
		if !seen[o.Cloud+"gpus"] {
			seen[o.Cloud+"gpus"] = true
			limit := int64(4 + r.IntN(60))
			in.Quotas = append(in.Quotas, Quota{Cloud: o.Cloud, Name: "gpus", Unit: catalog.GPUs, Limit: limit, Used: used(limit)})
		}
	}
}

// quotaRooms is what each quota of the instance leaves the plan, by the
// documented rule: its limit less what others use (the reported use less
// gpufleet's own running and pending nodes, when use is reported), or what
// gpufleet runs there already if that is more.
func (ru *rules) quotaRooms() []int64 {
	rooms := make([]int64, len(ru.in.Quotas))
	for qi, q := range ru.in.Quotas {
		var ours int64
		for _, inst := range ru.in.Observed {
			if !inst.State.Live() {
				continue
			}
			for _, o := range ru.in.Offers {
				if o.OfferKey == inst.OfferKey {
					ours += ru.countOf(o, q)
				}
			}
		}
		others := int64(0)
		if q.Used != UsedUnknown {
			others = max(0, q.Used-ours)
		}
		rooms[qi] = max(q.Limit-others, ours)
	}
	return rooms
}

// quotaFull reports whether a plan leaves some quota too little room for
// one more node of any offer counting against it.
func (ru *rules) quotaFull(plan *Plan) bool {
	rooms := ru.quotaRooms()
	for qi, q := range ru.in.Quotas {
		var use, least int64
		for _, o := range ru.in.Offers {
			if per := ru.countOf(o, q); per > 0 && (least == 0 || per < least) {
				least = per
			}
		}
		for _, f := range plan.Fleets {
			for _, w := range f.Workloads {
				for _, pl := range w.Placements {
					for _, o := range ru.in.Offers {
						if o.OfferKey == pl.Offer {
							use += int64(pl.Count) * ru.countOf(o, q)
						}
					}
				}
			}
		}
		if least > 0 && use > 0 && rooms[qi]-use < least {
			return true
		}
	}
	return false
}

// countOf is what one node of an offer counts against a quota.
func (ru *rules) countOf(o Offer, q Quota) int64 {
	if o.Cloud != q.Cloud || q.Region != "" && q.Region != o.Region {
		return 0
	}
	for _, c := range o.Quotas {
		if c.Quota == q.Name {
			return c.Per
		}
	}
	return 0
}

// rules are the costs and permissions of an instance, from the documented
// rules, for the MILP and for pricing the planner's answer.
type rules struct {
	in Input
	// fixOp holds each earlier level's count in later stages: "=" for a
	// proven count, ">=" for one found in limited time.
	fixOp string
	// per workload: the eligible offers, what a node costs there new and
	// kept, and how many run there now.
	ws []ruleWorkload
	// reservation pools: on-demand offers of a (cloud, region, type).
	pools []rulePool
}

type ruleWorkload struct {
	fleet   string
	spec    schema.Workload
	offers  []int
	add     []bool // a new node may go there
	cost    []int64
	keep    []int64
	actual  []int64 // price and egress: what a budget counts
	running []int
}

type rulePool struct {
	cloud, region, typ string
	count              int
	refund             int64
}

func newRules(in Input) *rules {
	ru := &rules{in: in, fixOp: "="}
	blocked := map[OfferKey]bool{}
	for _, k := range in.Blocked {
		blocked[k] = true
	}
	egress := map[string]catalog.Egress{}
	for _, e := range in.Egress {
		egress[e.Cloud] = e
	}
	for _, f := range in.Fleets {
		for _, spec := range f.Workloads {
			w := ruleWorkload{fleet: f.Name, spec: spec}
			for i, o := range in.Offers {
				if o.GPUModel != spec.GPU.Model || o.GPUs != spec.GPU.PerNode || !slices.Contains(spec.Placement.Clouds, o.Cloud) ||
					!schema.MatchRegion(o.Cloud, o.Region, spec.Placement.Regions.Allow, spec.Placement.Regions.Deny) || !ruleMarket(spec.Capacity, o.Market) {
					continue
				}
				running := 0
				for _, inst := range in.Observed {
					if inst.Fleet == f.Name && inst.Workload == spec.Name && inst.OfferKey == o.OfferKey && inst.State.Live() {
						running++
					}
				}
				e := int64(0)
				if d := spec.Data; d != nil && d.SizeGB > 0 && !(d.Cloud == o.Cloud && d.Region == o.Region) {
					rate := egress[d.Cloud].InternetMicrosPerGB
					if d.Cloud == o.Cloud {
						rate = egress[d.Cloud].InterRegionMicrosPerGB
					}
					e = int64(math.Round(d.SizeGB * float64(rate) / math.Max(spec.RunHours, 1)))
				}
				cost := o.PriceMicros + e
				if o.Market == catalog.Spot {
					cost += int64(math.Round(float64(o.PriceMicros) * in.Defaults.SpotRiskPremium))
				}
				w.offers = append(w.offers, i)
				w.add = append(w.add, !blocked[o.OfferKey] && o.Available != 0)
				w.cost = append(w.cost, cost)
				w.keep = append(w.keep, cost-max(1, int64(math.Round(float64(cost)*in.Defaults.MigrationThreshold))))
				w.actual = append(w.actual, o.PriceMicros+e)
				w.running = append(w.running, running)
			}
			ru.ws = append(ru.ws, w)
		}
	}
	for _, res := range in.Reservations {
		i := slices.IndexFunc(ru.pools, func(p rulePool) bool {
			return p.cloud == res.Cloud && p.region == res.Region && p.typ == res.InstanceType
		})
		if i < 0 {
			ru.pools = append(ru.pools, rulePool{cloud: res.Cloud, region: res.Region, typ: res.InstanceType, refund: math.MaxInt64})
			i = len(ru.pools) - 1
		}
		ru.pools[i].count += res.Count
	}
	for i := range ru.pools {
		p := &ru.pools[i]
		for _, o := range in.Offers {
			if o.Cloud == p.cloud && o.Region == p.region && o.InstanceType == p.typ && o.Market == catalog.OnDemand {
				p.refund = min(p.refund, o.PriceMicros)
			}
		}
	}
	ru.pools = slices.DeleteFunc(ru.pools, func(p rulePool) bool { return p.refund == math.MaxInt64 })
	return ru
}

// ruleMarket is the capacity setting as the schema documents it.
func ruleMarket(capacity string, m catalog.Market) bool {
	switch capacity {
	case schema.CapacitySpot:
		return m == catalog.Spot
	case schema.CapacitySpotFallback:
		return m == catalog.Spot || m == catalog.OnDemand
	}
	return m == catalog.OnDemand
}

// ruleShare is the most nodes of n a share of them allows: 0.5 of 3 is 1.
func ruleShare(share float64, n int) int {
	for k := n; k >= 0; k-- {
		if float64(k) <= share*float64(n)+1e-9 {
			return k
		}
	}
	return 0
}

func (ru *rules) levels() []int {
	var out []int
	for _, w := range ru.ws {
		if !slices.Contains(out, w.spec.Priority) {
			out = append(out, w.spec.Priority)
		}
	}
	slices.SortFunc(out, func(a, b int) int { return b - a })
	return out
}

func (ru *rules) inPool(o Offer, p rulePool) bool {
	return o.Market == catalog.OnDemand && o.Cloud == p.cloud && o.Region == p.region && o.InstanceType == p.typ
}

// lp writes the integer program: placed nodes of level fixed to counts for
// the levels before it, and the objective: the nodes of level, or, with
// level past the last, the cost.
func (ru *rules) lp(level int, counts []int64) string {
	var b strings.Builder
	levels := ru.levels()
	sum := func(terms []string) string {
		if len(terms) == 0 {
			return "0 zero"
		}
		return strings.Join(terms, " + ")
	}
	placedOf := func(wi int) []string {
		var t []string
		for j := range ru.ws[wi].offers {
			t = append(t, fmt.Sprintf("a_%d_%d", wi, j), fmt.Sprintf("k_%d_%d", wi, j))
		}
		return t
	}
	levelTerms := func(l int) []string {
		var t []string
		for wi, w := range ru.ws {
			if w.spec.Priority == levels[l] {
				t = append(t, placedOf(wi)...)
			}
		}
		return t
	}
	if level < len(levels) {
		fmt.Fprintf(&b, "Maximize\n obj: %s\n", sum(levelTerms(level)))
	} else {
		b.WriteString("Minimize\n obj: 0 zero")
		for wi, w := range ru.ws {
			for j := range w.offers {
				fmt.Fprintf(&b, " + %d a_%d_%d + %d k_%d_%d", w.cost[j], wi, j, w.keep[j], wi, j)
			}
		}
		for pi, p := range ru.pools {
			fmt.Fprintf(&b, " - %d r_%d", p.refund, pi)
		}
		b.WriteString("\n")
	}
	b.WriteString("Subject To\n zero_is: zero = 0\n")
	for l := range level {
		fmt.Fprintf(&b, " level%d: %s %s %d\n", l, sum(levelTerms(l)), ru.fixOp, counts[l])
	}
	offerUse := map[int][]string{}
	for wi, w := range ru.ws {
		spec := w.spec
		fmt.Fprintf(&b, " demand%d: %s <= %d\n", wi, sum(placedOf(wi)), spec.Nodes)
		for j, oi := range w.offers {
			offerUse[oi] = append(offerUse[oi], fmt.Sprintf("a_%d_%d", wi, j))
		}
		byCloud, byRegion, byGroup, byZone := map[string][]string{}, map[string][]string{}, map[string][]string{}, map[string][]string{}
		var regions, groups, zones []string
		for j, oi := range w.offers {
			o := ru.in.Offers[oi]
			zone := o.Cloud + "/" + o.Region + "/" + o.Zone
			if _, ok := byZone[zone]; !ok {
				zones = append(zones, zone)
			}
			byZone[zone] = append(byZone[zone], fmt.Sprintf("a_%d_%d", wi, j), fmt.Sprintf("k_%d_%d", wi, j))
			byCloud[o.Cloud] = append(byCloud[o.Cloud], fmt.Sprintf("a_%d_%d", wi, j), fmt.Sprintf("k_%d_%d", wi, j))
			// Regions are the cloud's: Lambda's us-east-1 is not AWS's.
			region := o.Cloud + "/" + o.Region
			if _, ok := byRegion[region]; !ok {
				regions = append(regions, region)
			}
			byRegion[region] = append(byRegion[region], fmt.Sprintf("a_%d_%d", wi, j), fmt.Sprintf("k_%d_%d", wi, j))
			g := milpGangGroup(spec, o)
			if _, ok := byGroup[g]; !ok {
				groups = append(groups, g)
			}
			byGroup[g] = append(byGroup[g], fmt.Sprintf("a_%d_%d", wi, j), fmt.Sprintf("k_%d_%d", wi, j))
		}
		if spec.Spread.MaxPerCloud < 1 {
			for _, c := range slices.Sorted(func(yield func(string) bool) {
				for c := range byCloud {
					if !yield(c) {
						return
					}
				}
			}) {
				fmt.Fprintf(&b, " cloud%d_%s: %s <= %d\n", wi, c, sum(byCloud[c]), ruleShare(spec.Spread.MaxPerCloud, spec.Nodes))
			}
		}
		if spec.Spread.MaxPerRegion < 1 {
			for ri, reg := range regions {
				fmt.Fprintf(&b, " region%d_%d: %s <= %d\n", wi, ri, sum(byRegion[reg]), ruleShare(spec.Spread.MaxPerRegion, spec.Nodes))
			}
		}
		if spec.Spread.MaxPerZone > 0 {
			for zi, zone := range zones {
				fmt.Fprintf(&b, " zone%d_%d: %s <= %d\n", wi, zi, sum(byZone[zone]), spec.Spread.MaxPerZone)
			}
		}
		if spec.Placement.Gang != "" {
			var zs []string
			for ri, g := range groups {
				fmt.Fprintf(&b, " gang%d_%d: %s - %d z_%d_%d = 0\n", wi, ri, sum(byGroup[g]), spec.Nodes, wi, ri)
				zs = append(zs, fmt.Sprintf("z_%d_%d", wi, ri))
			}
			if len(zs) > 0 {
				fmt.Fprintf(&b, " onegang%d: %s <= 1\n", wi, sum(zs))
			}
		}
	}
	for _, oi := range slices.Sorted(func(yield func(int) bool) {
		for oi := range offerUse {
			if !yield(oi) {
				return
			}
		}
	}) {
		if a := ru.in.Offers[oi].Available; a != Unlimited {
			fmt.Fprintf(&b, " room%d: %s <= %d\n", oi, sum(offerUse[oi]), a)
		}
	}
	for pi, p := range ru.pools {
		var t []string
		for wi, w := range ru.ws {
			for j, oi := range w.offers {
				if ru.inPool(ru.in.Offers[oi], p) {
					t = append(t, fmt.Sprintf("a_%d_%d", wi, j), fmt.Sprintf("k_%d_%d", wi, j))
				}
			}
		}
		fmt.Fprintf(&b, " pool%d: r_%d - %s <= 0\n", pi, pi, strings.ReplaceAll(sum(t), " + ", " - "))
	}
	for qi, q := range ru.in.Quotas {
		var terms []string
		for wi, w := range ru.ws {
			for j, oi := range w.offers {
				if per := ru.countOf(ru.in.Offers[oi], q); per > 0 {
					terms = append(terms, fmt.Sprintf("%d a_%d_%d + %d k_%d_%d", per, wi, j, per, wi, j))
				}
			}
		}
		if len(terms) > 0 {
			fmt.Fprintf(&b, " quota%d: %s <= %d\n", qi, strings.Join(terms, " + "), ru.quotaRooms()[qi])
		}
	}
	for fi, f := range ru.in.Fleets {
		if f.Budget == nil {
			continue
		}
		fmt.Fprintf(&b, " budget%d: 0 zero", fi)
		for wi, w := range ru.ws {
			if w.fleet != f.Name {
				continue
			}
			for j := range w.offers {
				fmt.Fprintf(&b, " + %d a_%d_%d + %d k_%d_%d", w.actual[j], wi, j, w.actual[j], wi, j)
			}
		}
		for pi, p := range ru.pools {
			fmt.Fprintf(&b, " - %d r_%d", p.refund, pi)
		}
		fmt.Fprintf(&b, " <= %d\n", catalog.Micros(*f.Budget))
	}
	b.WriteString("Bounds\n zero = 0\n")
	var general, binary []string
	for wi, w := range ru.ws {
		for j := range w.offers {
			if !w.add[j] {
				fmt.Fprintf(&b, " a_%d_%d = 0\n", wi, j)
			}
			keep := 0
			if w.spec.Movable {
				keep = w.running[j]
			}
			fmt.Fprintf(&b, " 0 <= k_%d_%d <= %d\n", wi, j, keep)
			general = append(general, fmt.Sprintf("a_%d_%d", wi, j), fmt.Sprintf("k_%d_%d", wi, j))
		}
		if w.spec.Placement.Gang != "" {
			groups := map[string]bool{}
			for _, oi := range w.offers {
				if g := milpGangGroup(w.spec, ru.in.Offers[oi]); !groups[g] {
					groups[g] = true
					binary = append(binary, fmt.Sprintf("z_%d_%d", wi, len(groups)-1))
				}
			}
		}
	}
	for pi, p := range ru.pools {
		fmt.Fprintf(&b, " 0 <= r_%d <= %d\n", pi, p.count)
		general = append(general, fmt.Sprintf("r_%d", pi))
	}
	if len(general) > 0 {
		fmt.Fprintf(&b, "General\n %s\n", strings.Join(general, " "))
	}
	if len(binary) > 0 {
		fmt.Fprintf(&b, "Binary\n %s\n", strings.Join(binary, " "))
	}
	b.WriteString("End\n")
	return wrapLP(b.String())
}

// wrapLP breaks long lines between terms: CBC's reader refuses very long
// ones.
func wrapLP(model string) string {
	var out strings.Builder
	for _, line := range strings.Split(model, "\n") {
		for len(line) > 200 {
			cut := strings.LastIndexAny(line[:200], "+-")
			if cut <= 0 {
				break
			}
			out.WriteString(line[:cut] + "\n")
			line = "  " + line[cut:]
		}
		out.WriteString(line + "\n")
	}
	return out.String()
}

// cbcSolve solves an LP file and returns the value of every variable.
func cbcSolve(t *testing.T, cbc, dir, model string) (map[string]float64, bool) {
	t.Helper()
	values, ok, _ := cbcSolveWithin(t, cbc, dir, model, 0)
	return values, ok
}

// cbcSolveWithin is cbcSolve stopping after seconds (0 for no limit), with
// the best solution found then, and whether it was proven optimal.
func cbcSolveWithin(t *testing.T, cbc, dir, model string, seconds int) (map[string]float64, bool, bool) {
	t.Helper()
	f, err := os.CreateTemp(dir, "model-*.lp")
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(model)
	f.Close()
	solution := f.Name() + ".sol"
	args := []string{f.Name()}
	if seconds > 0 {
		args = append(args, "-sec", strconv.Itoa(seconds))
	}
	out, err := exec.Command(cbc, append(args, "-solve", "-solu", solution)...).CombinedOutput()
	if err != nil {
		t.Fatalf("cbc: %v\n%s\n%s", err, out, model)
	}
	data, err := os.ReadFile(solution)
	if err != nil {
		t.Fatalf("cbc wrote no solution: %v\n%s\n%s", err, out, model)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	if !sc.Scan() {
		t.Fatalf("empty solution file")
	}
	status := sc.Text()
	if strings.HasPrefix(status, "Infeasible") {
		return nil, false, false
	}
	proven := strings.HasPrefix(status, "Optimal")
	if !proven && (seconds == 0 || !strings.HasPrefix(status, "Stopped on time")) {
		t.Fatalf("cbc did not prove optimality: %s\n%s", status, model)
	}
	values := map[string]float64{}
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 3 {
			v, err := strconv.ParseFloat(fields[2], 64)
			if err != nil {
				t.Fatalf("solution line %q: %v", sc.Text(), err)
			}
			values[fields[1]] = v
		}
	}
	os.Remove(f.Name())
	os.Remove(solution)
	return values, true, proven
}

// milpOptimum solves the instance lexicographically with CBC: each
// priority's count, then the cost, as integers.
func (ru *rules) milpOptimum(t *testing.T, cbc, dir string) bruteValue {
	t.Helper()
	levels := ru.levels()
	var counts []int64
	for l := range levels {
		values, ok := cbcSolve(t, cbc, dir, ru.lp(l, counts))
		if !ok {
			t.Fatalf("level %d infeasible", l)
		}
		n := int64(0)
		for name, v := range values {
			if strings.HasPrefix(name, "a_") || strings.HasPrefix(name, "k_") {
				if w := ru.ws[workloadOf(name)]; w.spec.Priority == levels[l] {
					n += int64(math.Round(v))
				}
			}
		}
		counts = append(counts, n)
	}
	values, ok := cbcSolve(t, cbc, dir, ru.lp(len(levels), counts))
	if !ok {
		t.Fatal("cost stage infeasible")
	}
	cost := int64(0)
	for name, v := range values {
		n := int64(math.Round(v))
		parts := strings.Split(name, "_")
		switch parts[0] {
		case "a", "k":
			wi, _ := strconv.Atoi(parts[1])
			j, _ := strconv.Atoi(parts[2])
			if parts[0] == "a" {
				cost += n * ru.ws[wi].cost[j]
			} else {
				cost += n * ru.ws[wi].keep[j]
			}
		case "r":
			pi, _ := strconv.Atoi(parts[1])
			cost -= n * ru.pools[pi].refund
		}
	}
	return bruteValue{placed: counts, cost: cost}
}

func workloadOf(variable string) int {
	wi, _ := strconv.Atoi(strings.Split(variable, "_")[1])
	return wi
}

// valueOf prices a plan by the rules: its nodes per priority and its cost,
// and fails if it breaks one.
func (ru *rules) valueOf(t *testing.T, plan *Plan) bruteValue {
	t.Helper()
	levels := ru.levels()
	v := bruteValue{placed: make([]int64, len(levels))}
	used := map[OfferKey]int{}
	pool := make([]int, len(ru.pools))
	fleetCost := map[string]int64{}
	for _, w := range ru.ws {
		wp := plan.Workload(w.fleet, w.spec.Name)
		regions := map[string]bool{}
		for _, pl := range wp.Placements {
			j := slices.IndexFunc(w.offers, func(oi int) bool { return ru.in.Offers[oi].OfferKey == pl.Offer })
			if j < 0 {
				t.Fatalf("%s placed on %s, which the rules do not allow", w.spec.Name, pl.Offer)
			}
			kept := pl.Kept
			if kept > w.running[j] || (kept > 0 && !w.spec.Movable) || (pl.Count > kept && !w.add[j]) {
				t.Fatalf("%s: %d kept of %d running, %d new on %s", w.spec.Name, kept, w.running[j], pl.Count-kept, pl.Offer)
			}
			used[pl.Offer] += pl.Count - kept
			v.cost += int64(kept)*w.keep[j] + int64(pl.Count-kept)*w.cost[j]
			fleetCost[w.fleet] += int64(pl.Count) * w.actual[j]
			regions[milpGangGroup(w.spec, ru.in.Offers[w.offers[j]])] = true
			v.placed[slices.Index(levels, w.spec.Priority)] += int64(pl.Count)
			for pi, p := range ru.pools {
				if ru.inPool(ru.in.Offers[w.offers[j]], p) {
					pool[pi] += pl.Count
				}
			}
		}
		if w.spec.Placement.Gang != "" && wp.Placed > 0 && (wp.Placed != w.spec.Nodes || len(regions) != 1) {
			t.Fatalf("gang %s split or partial: %+v", w.spec.Name, wp.Placements)
		}
		if most := w.spec.Spread.MaxPerZone; most > 0 {
			inZone := map[string]int{}
			for _, pl := range wp.Placements {
				inZone[pl.Offer.Cloud+"/"+pl.Offer.Region+"/"+pl.Offer.Zone] += pl.Count
			}
			for zone, n := range inZone {
				if n > most {
					t.Fatalf("%s has %d nodes in %s, over its maxPerZone of %d", w.spec.Name, n, zone, most)
				}
			}
		}
	}
	for _, o := range ru.in.Offers {
		if o.Available != Unlimited && used[o.OfferKey] > o.Available {
			t.Fatalf("%d new nodes on %s, room for %d", used[o.OfferKey], o.OfferKey, o.Available)
		}
	}
	rooms := ru.quotaRooms()
	for qi, q := range ru.in.Quotas {
		var use int64
		for _, f := range plan.Fleets {
			for _, w := range f.Workloads {
				for _, pl := range w.Placements {
					for _, o := range ru.in.Offers {
						if o.OfferKey == pl.Offer {
							use += int64(pl.Count) * ru.countOf(o, q)
						}
					}
				}
			}
		}
		if use > rooms[qi] {
			t.Fatalf("the plan uses %d of quota %s %s, which leaves it %d", use, q.Name, q.Region, rooms[qi])
		}
	}
	for pi, p := range ru.pools {
		reserved := int64(min(pool[pi], p.count))
		v.cost -= reserved * p.refund
		for _, f := range ru.in.Fleets {
			fleetCost[f.Name] -= reserved * p.refund // budgets are on single-fleet instances
		}
	}
	for _, f := range ru.in.Fleets {
		if f.Budget != nil && fleetCost[f.Name] > catalog.Micros(*f.Budget) {
			t.Fatalf("fleet %s costs %d, over its budget of %v", f.Name, fleetCost[f.Name], *f.Budget)
		}
	}
	return v
}

// TestSolveMatchesAnIntegerProgram compares the planner with CBC on
// GPUFLEET_MILP_INSTANCES seeded instances (1,000 by default); -short
// skips it. CI installs coinor-cbc; without it the test says so and skips.
func TestSolveMatchesAnIntegerProgram(t *testing.T) {
	if testing.Short() {
		t.Skip("CBC on a thousand instances; run without -short")
	}
	cbc, err := exec.LookPath("cbc")
	if err != nil {
		t.Skip("cbc is not installed (Debian: apt-get install coinor-cbc): skipping the cross-check against an integer program")
	}
	instances := 1000
	if v, err := strconv.Atoi(os.Getenv("GPUFLEET_MILP_INSTANCES")); err == nil {
		instances = v
	}
	dir := t.TempDir()
	type outcome struct {
		optimal, shortfall, gang, zoneGang, budget, reserved, quota, quotaFull, hub, warm, gpuCloud bool
	}
	results := make([]outcome, instances)
	var wg sync.WaitGroup
	jobs := make(chan int)
	for range 2 {
		wg.Go(func() {
			for i := range jobs {
				t.Run(fmt.Sprint(i), func(t *testing.T) {
					r := rand.New(rand.NewPCG(uint64(i), 31))
					in := milpInstance(r, i%5)
					plan, err := Solve(in)
					if err != nil {
						t.Fatal(err)
					}
					ru := newRules(in)
					got := ru.valueOf(t, plan)
					want := ru.milpOptimum(t, cbc, filepath.Join(dir))
					if got.better(want) {
						t.Fatalf("the plan (%v) beats the integer program (%v): one of them breaks a rule", got, want)
					}
					if plan.Optimal && want.better(got) {
						t.Fatalf("plan %v marked optimal, the integer program finds %v", got, want)
					}
					warmed := checkWarm(t, in, plan, ru, want, uint64(i))
					o := outcome{optimal: plan.Optimal, budget: in.Fleets[0].Budget != nil, quota: len(in.Quotas) > 0, quotaFull: ru.quotaFull(plan), hub: hubsOf(in) > 0, warm: warmed}
					for _, w := range ru.ws {
						o.gang = o.gang || w.spec.Gang()
						o.zoneGang = o.zoneGang || w.spec.Placement.Gang == "zone"
					}
					for _, f := range plan.Fleets {
						for _, w := range f.Workloads {
							o.shortfall = o.shortfall || w.Shortfall != nil
							for _, pl := range w.Placements {
								o.reserved = o.reserved || pl.Reserved > 0
								o.gpuCloud = o.gpuCloud || pl.Offer.Cloud == "lambda"
							}
						}
					}
					results[i] = o
				})
			}
		})
	}
	for i := range instances {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	var optimal, shortfall, gang, zoneGang, budget, reserved, quota, quotaFull, hub, warm, gpuCloud int
	for _, o := range results {
		for _, c := range []struct {
			on bool
			n  *int
		}{{o.optimal, &optimal}, {o.shortfall, &shortfall}, {o.gang, &gang}, {o.zoneGang, &zoneGang}, {o.budget, &budget}, {o.reserved, &reserved}, {o.quota, &quota}, {o.quotaFull, &quotaFull}, {o.hub, &hub}, {o.warm, &warm}, {o.gpuCloud, &gpuCloud}} {
			if c.on {
				*c.n++
			}
		}
	}
	t.Logf("%d instances: %d proven optimal, %d with a shortfall, %d with gangs (%d of them zone gangs), %d with budgets, %d using reservations, %d with quotas, %d filling one, %d sharing offers through hubs, %d started warm, %d placing nodes on the GPU cloud",
		instances, optimal, shortfall, gang, zoneGang, budget, reserved, quota, quotaFull, hub, warm, gpuCloud)
	if optimal < instances*9/10 {
		t.Errorf("only %d of %d plans proven optimal", optimal, instances)
	}
	if warm < instances/2 {
		t.Errorf("only %d of %d instances started warm: too few to check the warm path", warm, instances)
	}
	if gpuCloud < instances/5 {
		t.Errorf("only %d of %d plans place nodes on the GPU cloud: too few to check it", gpuCloud, instances)
	}
	if hub < instances/10 {
		t.Errorf("only %d of %d instances share offers through hubs: too few to check them", hub, instances)
	}
}

func hubsOf(in Input) int {
	_, hubs := network(in)
	return hubs
}

// checkWarm solves an instance again from its own plan's placements, which
// must be worth what the integer program finds (want) just as the cold
// plan must, and then after a fifth of its prices moved, from the same
// placements and from nothing, which must be worth the same. It reports
// whether a solve started from the placements.
func checkWarm(t *testing.T, in Input, plan *Plan, ru *rules, want bruteValue, seed uint64) bool {
	t.Helper()
	in.Start = startOf(plan)
	again, p, err := solvePlanning(in)
	if err != nil {
		t.Fatal(err)
	}
	got := ru.valueOf(t, again)
	if got.better(want) || again.Optimal && want.better(got) {
		t.Fatalf("from its own placements the plan is worth %v (optimal %v), the integer program %v", got, again.Optimal, want)
	}
	started := p.started > 0

	moved := in
	moved.Offers = slices.Clone(in.Offers)
	r := rand.New(rand.NewPCG(seed, 47))
	for i := range moved.Offers {
		if r.IntN(5) == 0 {
			moved.Offers[i].PriceMicros = int64(1+r.IntN(40)) * 250_000
		}
	}
	warm, p, err := solvePlanning(moved)
	if err != nil {
		t.Fatal(err)
	}
	started = started || p.started > 0
	moved.Start = nil
	cold, err := Solve(moved)
	if err != nil {
		t.Fatal(err)
	}
	mru := newRules(moved)
	w, c := mru.valueOf(t, warm), mru.valueOf(t, cold)
	if w.better(c) && cold.Optimal || c.better(w) && warm.Optimal {
		t.Fatalf("after prices moved, from the placements %v (optimal %v), from nothing %v (optimal %v)", w, warm.Optimal, c, cold.Optimal)
	}
	return started
}

// TestMixedGangsAgainstCBC gives BenchmarkSolveMixedGangs200x5000's
// instance (or GPUFLEET_MIXED_SEED's from the same generator) to CBC for
// up to five minutes (GPUFLEET_CBC_SECONDS), shared
// between its stages, and compares what the two find: the planner must
// place at least as many nodes, priority by priority, and at no higher
// cost where it places as many; and if CBC proves a better plan, the
// planner's must not say it is optimal. CBC proves this one in about ten
// seconds; -short skips it.
func TestMixedGangsAgainstCBC(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping CBC on the 200 x 5,000 instance")
	}
	seconds := 300
	if v, err := strconv.Atoi(os.Getenv("GPUFLEET_CBC_SECONDS")); err == nil {
		seconds = v
	}
	cbc, err := exec.LookPath("cbc")
	if err != nil {
		t.Skip("cbc is not installed (Debian: apt-get install coinor-cbc): skipping the cross-check against an integer program")
	}
	seed := uint64(1)
	if v, err := strconv.ParseUint(os.Getenv("GPUFLEET_MIXED_SEED"), 10, 64); err == nil {
		seed = v // another instance from the same generator
	}
	in := mixedGangs(seed)
	plan, err := Solve(in)
	if err != nil {
		t.Fatal(err)
	}
	ru := newRules(in)
	ru.fixOp = ">="
	got := ru.valueOf(t, plan)
	t.Logf("planner: %v, optimal %v, gap %d nodes, $%d", got, plan.Optimal, plan.GapNodes, plan.GapMicros)
	dir := t.TempDir()
	levels := ru.levels()
	stage := seconds / (len(levels) + 1)
	var counts []int64
	for l := range levels {
		values, ok, proven := cbcSolveWithin(t, cbc, dir, ru.lp(l, counts), stage)
		if !ok {
			t.Fatalf("level %d: no solution", l)
		}
		n := int64(0)
		for name, v := range values {
			if (strings.HasPrefix(name, "a_") || strings.HasPrefix(name, "k_")) && ru.ws[workloadOf(name)].spec.Priority == levels[l] {
				n += int64(math.Round(v))
			}
		}
		counts = append(counts, n)
		t.Logf("cbc, priority %d: %d nodes (proven %v)", levels[l], n, proven)
	}
	values, ok, proven := cbcSolveWithin(t, cbc, dir, ru.lp(len(levels), counts), stage)
	if !ok {
		t.Fatal("cost stage: no solution")
	}
	want := bruteValue{placed: counts}
	for name, v := range values {
		n := int64(math.Round(v))
		parts := strings.Split(name, "_")
		switch parts[0] {
		case "a", "k":
			wi, _ := strconv.Atoi(parts[1])
			j, _ := strconv.Atoi(parts[2])
			if parts[0] == "a" {
				want.cost += n * ru.ws[wi].cost[j]
			} else {
				want.cost += n * ru.ws[wi].keep[j]
			}
		case "r":
			pi, _ := strconv.Atoi(parts[1])
			want.cost -= n * ru.pools[pi].refund
		}
	}
	t.Logf("cbc in %d s: %v (cost stage proven %v)", seconds, want, proven)
	if want.better(got) {
		t.Errorf("CBC finds %v, better than the planner's %v", want, got)
	}
	// A proven optimum must lie within the gap the plan reports.
	if proven && slices.Equal(got.placed, want.placed) && got.cost-plan.GapMicros > want.cost {
		t.Errorf("the plan's bound, $%d, is above CBC's proven optimum of $%d: its gap of $%d is too small",
			got.cost-plan.GapMicros, want.cost, plan.GapMicros)
	}
}

// milpGangGroup is, from the rules alone, what a gang's nodes must all
// share on an offer: its zone for a zone gang, its region otherwise, each
// of its cloud (a region or zone name may be another cloud's too).
func milpGangGroup(spec schema.Workload, o Offer) string {
	if spec.Placement.Gang == "zone" {
		return o.Cloud + "/" + o.Region + "/" + o.Zone
	}
	return o.Cloud + "/" + o.Region
}
