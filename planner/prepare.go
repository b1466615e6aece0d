// SPDX-License-Identifier: Apache-2.0

package planner

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/gpufleet/gpufleet/schema"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// planning is the state of one call to Solve.
type planning struct {
	in Input
	// outdated counts, per workload, the live nodes launched with another
	// bootstrap than its nodes now run.
	outdated map[string]int
	offers   []Offer
	blocked  map[OfferKey]bool
	// byShape indexes offers by GPU model and GPUs per node, the filters
	// that reject most offers, so each workload looks at few.
	byShape map[shape][]int
	byModel map[string]int
	// shapeRuns splits each shape's offers into runs of one region.
	shapeRuns map[shape][]regionRun
	// lastRegion memoizes regionAllowed, and regionRules holds each
	// workload's rules ready to match.
	lastRegion regionMemo
	// regionID and zoneID number, by offer, its cloud's region and its
	// zone in key order, so that runs of one place compare numbers.
	regionID, zoneID []int32
	// offerOK says, by offer, that it passes the checks of the offer
	// alone (offersOK).
	offerOK     []bool
	regionRules map[*schema.Workload]*schema.RegionRules
	workloads   []*workload
	// reserved holds the reservation pools by (cloud, region, type).
	reserved map[reservationKey]*reservation
	egress   map[string]catalog.Egress
	// quotas are the input's quotas, and offerQuotas what a node of each
	// offer counts against them (quotas.go).
	quotas      []*quotaState
	offerQuotas [][]offerQuota
	// quotaPlanned, quotaFull and quotaRelevant are what the plan uses of
	// each, whether it is full, and whether the fleets touch it at all.
	quotaPlanned  []int64
	quotaFull     []bool
	quotaRelevant []bool
	solves        int
	// started counts the solves that started from a given flow, and
	// pivots the simplex's pivots, for benchmarks.
	started, pivots int
	// gangBudget is the work, in solves times arcs, each component's branch
	// and bound may spend.
	gangBudget int
}

type shape struct {
	model string
	gpus  int
}

type reservationKey struct{ cloud, region, instanceType string }

type reservation struct {
	key   reservationKey
	count int
	// refund is what one reserved node saves: the on-demand price it would
	// otherwise cost.
	refund int64
}

// workload is one workload being planned.
type workload struct {
	index int
	fleet *schema.Fleet
	spec  *schema.Workload
	// candidates are the eligible offers, sorted by offer key.
	candidates []candidate
	rejected   map[Reason]int
	// fixed nodes stay where they run: the workload is not movable.
	fixed []fixedNodes
	// held nodes run on offers without a valid price. They stay, counted
	// as placed: nothing known says they are misplaced.
	held []heldNodes
	// unfit are offers the workload has nodes on that its spec no longer
	// allows, with the reason, so their deletion can say why.
	unfit []UnfitOffer
	// reservedFixed counts fixed nodes that use a reservation, by offer.
	reservedFixed map[int]int
	// demand is what the flow must place: desired minus fixed minus shed.
	demand int
	// shed nodes were dropped to meet the fleet's budget; budgetCause,
	// when set, says the budget held the workload to what it was placed.
	shed        int
	shedCause   string
	budgetCause string
	// live counts the workload's running and pending nodes by offer.
	live map[OfferKey]int
	// result
	flows map[int]*flowResult // by offer index
}

type fixedNodes struct {
	offer int
	count int
}

type heldNodes struct {
	offer OfferKey
	count int
}

type candidate struct {
	offer int
	// cost is what one node costs the optimiser per hour: price, spot risk
	// premium and egress.
	cost   int64
	egress int64
	// running nodes of this workload on the offer, and what keeping one
	// costs: cost less the migration threshold's share, so that a cheaper
	// offer wins only by more than the threshold.
	running  int
	keepCost int64
}

type flowResult struct {
	count, kept, reserved int
}

func (w *workload) key() string { return w.fleet.Name + "/" + w.spec.Name }

func (w *workload) fixedCount() int {
	n := 0
	for _, f := range w.fixed {
		n += f.count
	}
	return n
}

func newPlanning(in Input) *planning {
	p := &planning{
		in:          in,
		offers:      sortedOffers(in.Offers),
		blocked:     map[OfferKey]bool{},
		regionRules: map[*schema.Workload]*schema.RegionRules{},
		byShape:     map[shape][]int{},
		byModel:     map[string]int{},
		reserved:    map[reservationKey]*reservation{},
		egress:      map[string]catalog.Egress{},
	}
	p.offers = slices.CompactFunc(p.offers, func(a, b Offer) bool { return a.OfferKey == b.OfferKey })
	for i, o := range p.offers {
		s := shape{o.GPUModel, o.GPUs}
		p.byShape[s] = append(p.byShape[s], i)
		p.byModel[o.GPUModel]++
	}
	p.regionID, p.zoneID = placeIDs(p.offers)
	p.shapeRuns = make(map[shape][]regionRun, len(p.byShape))
	for s, shaped := range p.byShape {
		p.shapeRuns[s] = regionRuns(p.offers, shaped)
	}
	for _, k := range in.Blocked {
		p.blocked[k] = true
	}
	if len(in.Learned) > 0 {
		live := map[OfferKey]int{}
		for _, inst := range in.Observed {
			if inst.State.Live() {
				live[inst.OfferKey]++
			}
		}
		for i := range p.offers {
			o := &p.offers[i]
			if n, ok := in.Learned[o.OfferKey]; ok {
				if room := max(0, n-live[o.OfferKey]); o.Available == Unlimited || room < o.Available {
					o.Available = room
				}
			}
		}
	}
	for _, e := range in.Egress {
		p.egress[e.Cloud] = e
	}
	for _, r := range in.Reservations {
		k := reservationKey{r.Cloud, r.Region, r.InstanceType}
		res := p.reserved[k]
		if res == nil {
			res = &reservation{key: k, refund: math.MaxInt64}
			p.reserved[k] = res
		}
		res.count += r.Count
	}
	for _, o := range p.offers {
		if res := p.reserved[reservationKey{o.Cloud, o.Region, o.InstanceType}]; res != nil && o.Market == catalog.OnDemand && ValidPrice(o) {
			res.refund = min(res.refund, o.PriceMicros)
		}
	}
	for k, res := range p.reserved {
		if res.refund == math.MaxInt64 {
			// No price for the reserved type here: nothing can use it.
			delete(p.reserved, k)
		}
	}
	return p
}

// sortedOffers returns a copy of offers in key order, equal keys in the
// order given. It sorts indices, not the offers themselves, which are big
// to move.
func sortedOffers(offers []Offer) []Offer {
	if slices.IsSortedFunc(offers, func(a, b Offer) int { return a.Compare(b.OfferKey) }) {
		return slices.Clone(offers)
	}
	order := make([]int32, len(offers))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortStableFunc(order, func(a, b int32) int { return offers[a].Compare(offers[b].OfferKey) })
	out := make([]Offer, len(offers))
	for i, j := range order {
		out[i] = offers[j]
	}
	return out
}

func (p *planning) prepare() {
	movable := map[string]bool{}
	for _, f := range p.in.Fleets {
		for _, w := range f.Workloads {
			movable[f.Name+"/"+w.Name] = w.Movable
		}
	}
	running := map[string]map[OfferKey]int{}
	live := map[string]map[OfferKey]int{}
	p.outdated = map[string]int{}
	for _, inst := range p.in.Observed {
		if !inst.State.Live() {
			continue
		}
		k := inst.Fleet + "/" + inst.Workload
		if live[k] == nil {
			live[k] = map[OfferKey]int{}
		}
		live[k][inst.OfferKey]++
		if outdated(inst, p.in.Bootstraps[k]) {
			p.outdated[k]++
			// A node of an older bootstrap is planned as if gone, and
			// replaced; one a workload may not move stays as it is.
			if movable[k] {
				continue
			}
		}
		if running[k] == nil {
			running[k] = map[OfferKey]int{}
		}
		running[k][inst.OfferKey]++
	}
	fleets := slices.Clone(p.in.Fleets)
	slices.SortFunc(fleets, func(a, b schema.Fleet) int { return cmp.Compare(a.Name, b.Name) })
	filters := p.filters()
	p.offerOK = p.offersOK()
	for fi := range fleets {
		f := &fleets[fi]
		workloads := slices.Clone(f.Workloads)
		slices.SortFunc(workloads, func(a, b schema.Workload) int { return cmp.Compare(a.Name, b.Name) })
		for wi := range workloads {
			w := &workload{index: len(p.workloads), fleet: f, spec: &workloads[wi], rejected: map[Reason]int{}, flows: map[int]*flowResult{}}
			w.live = live[w.key()]
			p.eligible(w, filters, running[w.key()])
			p.workloads = append(p.workloads, w)
		}
	}
}

// eligible fills a workload's candidates and counts the rest by reason.
func (p *planning) eligible(w *workload, filters []filter, running map[OfferKey]int) {
	spec := w.spec
	s := shape{spec.GPU.Model, spec.GPU.PerNode}
	shaped := p.byShape[s]
	if n := len(p.offers) - p.byModel[spec.GPU.Model]; n > 0 {
		w.rejected[RejectWrongGPU] = n
	}
	if n := p.byModel[spec.GPU.Model] - len(shaped); n > 0 {
		w.rejected[RejectGPUsPerNode] = n
	}
	defaults := p.in.Defaults.For(w.fleet)
	threshold := defaults.MigrationThreshold
	// The cloud and region filters come after the shape's, and decide for
	// a whole run of one region at once; the rest look at each offer.
	if filters[2].reason != RejectCloud || filters[3].reason != RejectRegion {
		panic("planner: the filters are not in the order eligible reads them")
	}
	var allowed []regionRun
	room := 0
	for _, run := range p.shapeRuns[s] {
		first := &p.offers[shaped[run.from]]
		switch {
		case !filters[2].ok(spec, first, false):
			w.rejected[RejectCloud] += run.to - run.from
		case !filters[3].ok(spec, first, false):
			w.rejected[RejectRegion] += run.to - run.from
		default:
			allowed = append(allowed, run)
			room += run.to - run.from
		}
	}
	w.candidates = make([]candidate, 0, room)
	// Rejections are counted by filter, and only then by reason: a map
	// update per offer would cost more than the check.
	rejected := make([]int, len(filters)-4)
	for _, run := range allowed {
		p.eligibleIn(w, shaped[run.from:run.to], filters[4:], rejected, running, defaults.SpotRiskPremium, threshold)
	}
	for i, n := range rejected {
		if n > 0 {
			w.rejected[filters[4+i].reason] += n
		}
	}
	w.demand = spec.Nodes
	if !spec.Movable {
		p.fix(w)
	}
	p.hold(w, filters, running)
}

// eligibleIn adds the offers of one region run that pass the filters to a
// workload's candidates.
func (p *planning) eligibleIn(w *workload, group []int, filters []filter, rejected []int, running map[OfferKey]int, riskPremium, threshold float64) {
	spec := w.spec
	maxPrice := int64(math.MaxInt64)
	if spec.MaxPricePerNodeHour != nil {
		maxPrice = catalog.Micros(*spec.MaxPricePerNodeHour)
	}
	for _, i := range group {
		o := &p.offers[i]
		r := running[o.OfferKey]
		// Most offers pass every filter: the checks of the offer alone
		// were made once, and the workload's are inlined here. Only an
		// offer that fails one goes through the filters in order, for the
		// reason to count.
		pass := p.offerOK[i] && o.PriceMicros <= maxPrice && marketAllowed(spec.Capacity, o.Market) &&
			(len(spec.Placement.Zones) == 0 || slices.Contains(spec.Placement.Zones, o.Zone)) &&
			(!spec.EFA || o.Cloud != catalog.AWS || catalog.EFAInterfaces(o.InstanceType) > 0)
		if !pass {
			if f := failing(filters, spec, o, r > 0); f >= 0 {
				rejected[f]++
				continue
			}
		}
		egress := p.egressCost(spec, o)
		cost := o.PriceMicros + egress
		if o.Market == catalog.Spot {
			cost += int64(math.Round(float64(o.PriceMicros) * riskPremium))
		}
		w.candidates = append(w.candidates, candidate{
			offer:    i,
			cost:     cost,
			egress:   egress,
			running:  r,
			keepCost: keepCostOf(cost, threshold),
		})
	}
}

// failing returns the index of the first filter an offer fails for a
// workload, or -1.
func failing(filters []filter, spec *schema.Workload, o *Offer, running bool) int {
	for i, f := range filters {
		if !f.ok(spec, o, running) {
			return i
		}
	}
	return -1
}

// offersOK says, by offer, whether it passes the filters that look at the
// offer alone, running nodes or not: offered in its zone, at a valid
// price, not blocklisted, with room.
func (p *planning) offersOK() []bool {
	ok := make([]bool, len(p.offers))
	for i := range p.offers {
		o := &p.offers[i]
		ok[i] = !o.NotOffered && ValidPrice(*o) && !p.blocked[o.OfferKey] && o.Available != 0
	}
	return ok
}

// regionRun is a run of a shape's offers (from, to index its list) in one
// cloud's region: the offers are sorted by key, so a region's are
// consecutive.
type regionRun struct {
	from, to int
}

// placeIDs numbers the regions and zones of offers in key order.
func placeIDs(offers []Offer) (regions, zones []int32) {
	regions, zones = make([]int32, len(offers)), make([]int32, len(offers))
	for i := range offers {
		if i == 0 {
			continue
		}
		a, b := &offers[i-1], &offers[i]
		regions[i], zones[i] = regions[i-1], zones[i-1]
		if a.Cloud != b.Cloud || a.Region != b.Region {
			regions[i]++
		}
		if regions[i] != regions[i-1] || a.Zone != b.Zone {
			zones[i]++
		}
	}
	return regions, zones
}

// regionRuns splits a shape's offers, in key order, into runs of one
// region.
func regionRuns(offers []Offer, shaped []int) []regionRun {
	var runs []regionRun
	for i, o := range shaped {
		if i == 0 || offers[o].Cloud != offers[shaped[i-1]].Cloud || offers[o].Region != offers[shaped[i-1]].Region {
			runs = append(runs, regionRun{from: i})
		}
		runs[len(runs)-1].to = i + 1
	}
	return runs
}

// keepCostOf is what a running node costs the plan where it runs: its cost
// less the migrationThreshold's share, and at least a micro-dollar less,
// so that a move that saves nothing never wins a tie. The threshold says a
// move must save more than its share; with a threshold of 0, or a share
// that rounds to nothing, the move must still save something.
func keepCostOf(cost int64, threshold float64) int64 {
	return cost - max(1, int64(math.Round(float64(cost)*threshold)))
}

// hold looks at the offers a workload runs nodes on that are not among its
// candidates. Those its spec rules out are unfit, with the filter's
// reason. Those that lack only a valid price (a zero or implausible one,
// or none because the offer left the catalog) keep their nodes, which
// count toward the workload: a missing price is no reason to move a node.
func (p *planning) hold(w *workload, filters []filter, running map[OfferKey]int) {
	if len(running) == 0 {
		return
	}
	isCandidate := map[OfferKey]bool{}
	for _, c := range w.candidates {
		isCandidate[p.offers[c.offer].OfferKey] = true
	}
	var unpriced []heldNodes
	for _, key := range slices.SortedFunc(maps.Keys(running), OfferKey.Compare) {
		if isCandidate[key] {
			continue
		}
		if reason := p.rejection(w.spec, key, filters); reason != RejectBadPrice {
			w.unfit = append(w.unfit, UnfitOffer{Offer: key, Reason: reason})
			continue
		}
		unpriced = append(unpriced, heldNodes{offer: key, count: running[key]})
	}
	if len(unpriced) == 0 {
		return
	}
	// A gang stays in one region: the one its fixed nodes are in, or else
	// the one holding most of these.
	region := ""
	if w.spec.Gang() {
		perRegion := map[string]int{}
		for _, h := range unpriced {
			perRegion[w.spec.GangGroup(h.offer.Cloud, h.offer.Region, h.offer.Zone)] += h.count
		}
		best := 0
		for _, r := range slices.Sorted(maps.Keys(perRegion)) {
			if perRegion[r] > best {
				region, best = r, perRegion[r]
			}
		}
		if len(w.fixed) > 0 {
			o := p.offers[w.fixed[0].offer]
			region = w.spec.GangGroup(o.Cloud, o.Region, o.Zone)
		}
	}
	for _, h := range unpriced {
		if w.demand == 0 || (region != "" && w.spec.GangGroup(h.offer.Cloud, h.offer.Region, h.offer.Zone) != region) {
			continue
		}
		n := min(h.count, w.demand)
		w.held = append(w.held, heldNodes{offer: h.offer, count: n})
		w.demand -= n
	}
}

// rejection is the first filter that rules an offer out for a workload,
// RejectBadPrice for an offer the catalog does not have at all, unless the
// filters on its key alone (cloud, region, zone, market) rule it out.
func (p *planning) rejection(spec *schema.Workload, key OfferKey, filters []filter) Reason {
	if o, found := p.offer(key); found {
		for _, f := range filters {
			if !f.ok(spec, o, true) {
				return f.reason
			}
		}
		return ""
	}
	o := Offer{OfferKey: key, GPUModel: spec.GPU.Model, GPUs: spec.GPU.PerNode}
	for _, f := range filters {
		switch f.reason {
		case RejectCloud, RejectRegion, RejectZone, RejectMarket:
			if !f.ok(spec, &o, true) {
				return f.reason
			}
		}
	}
	return RejectBadPrice
}

// fix keeps a non-movable workload's running nodes where they are. A gang
// keeps only those in the region holding most of them, so that the rest of
// the gang can join it there.
func (p *planning) fix(w *workload) {
	left := w.spec.Nodes
	var region string
	if w.spec.Gang() {
		perRegion := map[string]int{}
		for _, c := range w.candidates {
			o := p.offers[c.offer]
			perRegion[w.spec.GangGroup(o.Cloud, o.Region, o.Zone)] += c.running
		}
		best := 0
		for _, r := range slices.Sorted(maps.Keys(perRegion)) {
			if perRegion[r] > best {
				region, best = r, perRegion[r]
			}
		}
	}
	for _, c := range w.candidates {
		if c.running == 0 || left == 0 || (region != "" && w.spec.GangGroup(p.offers[c.offer].Cloud, p.offers[c.offer].Region, p.offers[c.offer].Zone) != region) {
			continue
		}
		n := min(c.running, left)
		w.fixed = append(w.fixed, fixedNodes{offer: c.offer, count: n})
		left -= n
	}
	w.demand = left
}

// egressCost is what running one node of w on o adds per hour for pulling
// the workload's data across, amortised over its expected run time.
func (p *planning) egressCost(w *schema.Workload, o *Offer) int64 {
	d := w.Data
	if d == nil || d.SizeGB == 0 || (d.Cloud == o.Cloud && d.Region == o.Region) {
		return 0
	}
	rates, ok := p.egress[d.Cloud]
	if !ok {
		return 0
	}
	rate := rates.InternetMicrosPerGB
	if d.Cloud == o.Cloud {
		rate = rates.InterRegionMicrosPerGB
	}
	perHour := d.SizeGB * float64(rate) / math.Max(w.RunHours, 1)
	return int64(math.Min(math.Round(perHour), maxPriceMicros))
}

func (w *workload) String() string { return fmt.Sprintf("%s (%d nodes)", w.key(), w.spec.Nodes) }
