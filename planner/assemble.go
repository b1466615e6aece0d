// SPDX-License-Identifier: Apache-2.0

package planner

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/gpufleet/gpufleet/schema"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// placements merges a workload's fixed nodes and its flow into placements
// sorted by offer.
func (p *planning) placements(w *workload) []Placement {
	byOffer := map[int]*Placement{}
	get := func(offer int) *Placement {
		pl := byOffer[offer]
		if pl == nil {
			o := &p.offers[offer]
			pl = &Placement{Offer: o.OfferKey, PriceMicros: o.PriceMicros, AccountTerms: o.AccountTerms, EgressMicros: p.egressCost(w.spec, o), Derived: o.Derived}
			byOffer[offer] = pl
		}
		return pl
	}
	for _, f := range w.fixed {
		pl := get(f.offer)
		pl.Count += f.count
		pl.Kept += f.count
		pl.Reserved += w.reservedFixed[f.offer]
	}
	for offer, fr := range w.flows {
		pl := get(offer)
		pl.Count += fr.count
		pl.Kept += fr.kept
		pl.Reserved += fr.reserved
	}
	out := make([]Placement, 0, len(byOffer)+len(w.held))
	for _, i := range slices.Sorted(maps.Keys(byOffer)) {
		out = append(out, *byOffer[i])
	}
	if len(w.held) > 0 {
		for _, h := range w.held {
			out = append(out, Placement{Offer: h.offer, Count: h.count, Kept: h.count, Unpriced: true})
		}
		slices.SortFunc(out, func(a, b Placement) int { return a.Offer.Compare(b.Offer) })
	}
	return out
}

func (p *planning) assemble(result componentResult, components int) *Plan {
	plan := &Plan{
		Version:   PlanVersion,
		Prices:    p.in.Prices,
		Optimal:   result.optimal,
		GapMicros: result.gapMicros,
		GapNodes:  result.gapNodes,
		Fleets:    []FleetPlan{},
		Stats:     SolveStats{Workloads: len(p.workloads), Offers: len(p.offers), Components: components, Solves: p.solves, Warm: p.started},
	}
	var fleet *FleetPlan
	for _, w := range p.workloads {
		if fleet == nil || fleet.Name != w.fleet.Name {
			plan.Fleets = append(plan.Fleets, FleetPlan{Name: w.fleet.Name, Owner: w.fleet.Owner, Workloads: []WorkloadPlan{}})
			fleet = &plan.Fleets[len(plan.Fleets)-1]
			if b := w.fleet.Budget; b != nil {
				micros := catalog.Micros(*b)
				fleet.BudgetMicros = &micros
			}
		}
		wp := p.explain(w)
		fleet.Workloads = append(fleet.Workloads, wp)
		fleet.CostMicros += wp.CostMicros
		fleet.NowMicros += wp.NowMicros
	}
	plan.NowMicros = p.strayCost()
	for i := range plan.Fleets {
		f := &plan.Fleets[i]
		f.BaselineMicros, f.BaselineCloud = p.baseline(f)
		plan.CostMicros += f.CostMicros
		plan.NowMicros += f.NowMicros
		plan.BaselineMicros += f.BaselineMicros
		for _, w := range f.Workloads {
			if w.Shortfall != nil {
				plan.Warnings = append(plan.Warnings, fmt.Sprintf("%s/%s: %d of %d nodes not placed: %s", f.Name, w.Name, w.Shortfall.Nodes, w.Desired, w.Shortfall.Message))
			}
			var unpriced []string
			nodes := 0
			for _, pl := range w.Placements {
				if pl.Unpriced {
					unpriced = append(unpriced, pl.Offer.String())
					nodes += pl.Count
				}
			}
			if nodes > 0 {
				plan.Warnings = append(plan.Warnings, fmt.Sprintf("%s/%s: %d running nodes are kept on offers with no valid price (%s): they are not moved for their price, and their cost is left out",
					f.Name, w.Name, nodes, strings.Join(unpriced, ", ")))
			}
		}
	}
	if w := derivedWarning(plan); w != "" {
		plan.Warnings = append(plan.Warnings, w)
	}
	if n := len(p.blocked); n > 0 {
		plan.Warnings = append(plan.Warnings, fmt.Sprintf("%d offers are blocklisted after capacity errors or preemptions", n))
	}
	return plan
}

// nowCost is what a workload's live nodes cost per hour now: those the plan
// keeps as they cost in the plan, reserved ones first, and the others at
// their offer's price and the workload's egress, nothing where the price is
// not known.
func (p *planning) nowCost(w *workload, placements []Placement) int64 {
	kept := map[OfferKey]int{}
	total := int64(0)
	for _, pl := range placements {
		kept[pl.Offer] = pl.Kept
		total += int64(pl.Kept-min(pl.Kept, pl.Reserved))*pl.PriceMicros + int64(pl.Kept)*pl.EgressMicros
	}
	for key, n := range w.live {
		if gone := n - kept[key]; gone > 0 {
			if o, ok := p.offer(key); ok && ValidPrice(*o) {
				total += int64(gone) * (o.PriceMicros + p.egressCost(w.spec, o))
			}
		}
	}
	return total
}

// leaving lists the live nodes the placements do not keep, by offer, with
// the offer's price where it has a valid one: what a move away from them
// saves is told from it.
func (p *planning) leaving(w *workload, placements []Placement) []Placement {
	kept := map[OfferKey]int{}
	for _, pl := range placements {
		kept[pl.Offer] = pl.Kept
	}
	var out []Placement
	for _, key := range slices.SortedFunc(maps.Keys(w.live), OfferKey.Compare) {
		gone := w.live[key] - kept[key]
		if gone <= 0 {
			continue
		}
		pl := Placement{Offer: key, Count: gone}
		if o, ok := p.offer(key); ok && ValidPrice(*o) {
			pl.PriceMicros, pl.AccountTerms, pl.EgressMicros = o.PriceMicros, o.AccountTerms, p.egressCost(w.spec, o)
		}
		out = append(out, pl)
	}
	return out
}

// strayCost prices the live instances of workloads the specs no longer
// have: their offer's price, with no spec to say more.
func (p *planning) strayCost() int64 {
	known := map[string]bool{}
	for _, w := range p.workloads {
		known[w.key()] = true
	}
	total := int64(0)
	for _, inst := range p.in.Observed {
		if !inst.State.Live() || known[inst.Fleet+"/"+inst.Workload] {
			continue
		}
		if o, ok := p.offer(inst.OfferKey); ok && ValidPrice(*o) {
			total += o.PriceMicros
		}
	}
	return total
}

// offer finds an offer by its key.
func (p *planning) offer(key OfferKey) (*Offer, bool) {
	i, found := slices.BinarySearchFunc(p.offers, key, func(o Offer, k OfferKey) int { return o.Compare(k) })
	if !found {
		return nil, false
	}
	return &p.offers[i], true
}

// explain assembles one workload's plan and the reasons behind it.
func (p *planning) explain(w *workload) WorkloadPlan {
	wp := WorkloadPlan{
		Name:       w.spec.Name,
		Fleet:      w.fleet.Name,
		Desired:    w.spec.Nodes,
		Placements: p.placements(w),
		File:       w.spec.Pos.File,
		Line:       w.spec.Pos.Line,
		Bootstrap:  p.in.Bootstraps[w.key()],
		Outdated:   p.outdated[w.key()],
	}
	wp.KeepOutdated = wp.Outdated > 0 && !w.spec.Movable
	if len(w.rejected) > 0 {
		wp.Rejected = maps.Clone(w.rejected)
	}
	wp.Unfit = w.unfit
	for _, pl := range wp.Placements {
		wp.Placed += pl.Count
		wp.CostMicros += pl.Cost()
		wp.EgressMicros += int64(pl.Count) * pl.EgressMicros
	}
	wp.NowMicros = p.nowCost(w, wp.Placements)
	wp.Leaving = p.leaving(w, wp.Placements)
	// The offers placed on, by index in order, as the candidates are:
	// held nodes run on offers that are not candidates.
	used := slices.Collect(maps.Keys(w.flows))
	for _, f := range w.fixed {
		used = append(used, f.offer)
	}
	slices.Sort(used)
	var runnerUp *candidate
	for i := range w.candidates {
		c := &w.candidates[i]
		for len(used) > 0 && used[0] < c.offer {
			used = used[1:]
		}
		if len(used) > 0 && used[0] == c.offer || !p.hasAddArc(c.offer) {
			continue
		}
		if runnerUp == nil || c.cost < runnerUp.cost {
			runnerUp = c
		}
	}
	if runnerUp != nil {
		o := &p.offers[runnerUp.offer]
		wp.RunnerUp = &Alternative{Offer: o.OfferKey, PriceMicros: o.PriceMicros, AccountTerms: o.AccountTerms, EgressMicros: runnerUp.egress}
	}
	if slices.ContainsFunc(wp.Placements, func(pl Placement) bool { return !slices.Contains(catalog.Hyperscalers, pl.Offer.Cloud) }) {
		wp.Hyperscaler = p.cheapestHyperscaler(w)
	}
	if missing := wp.Desired - wp.Placed; missing > 0 {
		wp.Shortfall = p.shortfall(w, missing)
	}
	return wp
}

// cheapestHyperscaler is the cheapest on-demand offer of a hyperscaler a
// workload may use, egress included; nil when it may use none.
func (p *planning) cheapestHyperscaler(w *workload) *Alternative {
	var best *candidate
	for i := range w.candidates {
		c := &w.candidates[i]
		o := &p.offers[c.offer]
		if o.Market != catalog.OnDemand || !slices.Contains(catalog.Hyperscalers, o.Cloud) {
			continue
		}
		if best == nil || o.PriceMicros+c.egress < p.offers[best.offer].PriceMicros+best.egress {
			best = c
		}
	}
	if best == nil {
		return nil
	}
	o := &p.offers[best.offer]
	return &Alternative{Offer: o.OfferKey, PriceMicros: o.PriceMicros, AccountTerms: o.AccountTerms, EgressMicros: best.egress}
}

// shortfall names the first cause, in order, that explains missing nodes.
func (p *planning) shortfall(w *workload, missing int) *Shortfall {
	s := &Shortfall{Nodes: missing}
	spec := w.spec
	switch {
	case w.shed > 0:
		s.Cause, s.Message = CauseBudget, w.shedCause
	case len(w.candidates) == 0:
		s.Cause, s.Message = CauseNoOffer, "no offer can serve it ("+reasonSummary(w.rejected)+")"
	default:
		room, roomByCloud, roomByRegion, roomByGroup := p.roomByGroup(w)
		perCloud := shareOf(spec.Spread.MaxPerCloud, spec.Nodes)
		perRegion := shareOf(spec.Spread.MaxPerRegion, spec.Nodes)
		spreadRoom := 0
		for _, cloud := range slices.Sorted(maps.Keys(roomByCloud)) {
			inCloud := 0
			for region, n := range roomByRegion {
				if strings.HasPrefix(region, cloud+"/") {
					inCloud += min(n, perRegion)
				}
			}
			spreadRoom += min(perCloud, inCloud, roomByCloud[cloud])
		}
		zoneRoom := math.MaxInt32
		if perZone := spec.Spread.MaxPerZone; perZone > 0 {
			zoneRoom = 0
			for _, n := range p.roomByZone(w) {
				zoneRoom += min(n, perZone)
			}
		}
		bestRegion := 0
		for _, n := range roomByGroup {
			bestRegion = max(bestRegion, n)
		}
		switch {
		case room < spec.Nodes:
			s.Cause = CauseCapacity
			s.Message = fmt.Sprintf("the eligible offers have room for %d of %d nodes", room, spec.Nodes)
			if b := p.blockedCandidates(w); b > 0 {
				s.Message += fmt.Sprintf(" (%d offers blocklisted)", b)
			}
		case p.quotaHolds(w, s):
		case spec.Gang() && bestRegion < spec.Nodes:
			s.Cause = CauseGang
			s.Message = fmt.Sprintf("no single %s has room for all %d nodes together (at most %d)", spec.Placement.Gang, spec.Nodes, bestRegion)
		case spreadRoom < spec.Nodes:
			s.Cause = CauseSpread
			s.Message = fmt.Sprintf("the spread limits (%d per cloud, %d per region) leave room for %d of %d nodes", perCloud, perRegion, spreadRoom, spec.Nodes)
		case zoneRoom < spec.Nodes:
			s.Cause = CauseSpread
			s.Message = fmt.Sprintf("the spread limit of %d per zone leaves room for %d of %d nodes", spec.Spread.MaxPerZone, zoneRoom, spec.Nodes)
		case w.budgetCause != "":
			s.Cause, s.Message = CauseBudget, w.budgetCause
		default:
			s.Cause = CausePriority
			s.Message = "the capacity it could use went to workloads of higher priority"
		}
	}
	return s
}

// room is how many nodes a workload could have if it were alone: what its
// eligible offers have free, plus its nodes running on them.
func (p *planning) room(w *workload) (total int, byCloud, byRegion map[string]int) {
	total, byCloud, byRegion, _ = p.roomByGroup(w)
	return total, byCloud, byRegion
}

// roomByGroup is room, with the room in each of the gang's groups too:
// regions, or zones for a zone gang.
func (p *planning) roomByGroup(w *workload) (total int, byCloud, byRegion, byGroup map[string]int) {
	byCloud, byRegion, byGroup = map[string]int{}, map[string]int{}, map[string]int{}
	add := func(o *Offer, n int) {
		total = satAdd(total, n)
		byCloud[o.Cloud] = satAdd(byCloud[o.Cloud], n)
		region := schema.RegionKey(o.Cloud, o.Region)
		byRegion[region] = satAdd(byRegion[region], n)
		g := w.spec.GangGroup(o.Cloud, o.Region, o.Zone)
		byGroup[g] = satAdd(byGroup[g], n)
	}
	for _, c := range w.candidates {
		o := &p.offers[c.offer]
		n := c.running
		if !p.blocked[o.OfferKey] {
			if o.Available == Unlimited {
				n = math.MaxInt32
			} else {
				n += o.Available
			}
		}
		add(o, n)
	}
	return total, byCloud, byRegion, byGroup
}

// roomByZone is room, zone by zone.
func (p *planning) roomByZone(w *workload) map[string]int {
	out := map[string]int{}
	for _, c := range w.candidates {
		o := &p.offers[c.offer]
		n := c.running
		if !p.blocked[o.OfferKey] {
			if o.Available == Unlimited {
				n = math.MaxInt32
			} else {
				n += o.Available
			}
		}
		out[zoneOf(o.OfferKey)] = satAdd(out[zoneOf(o.OfferKey)], n)
	}
	return out
}

func satAdd(a, b int) int { return int(min(int64(a)+int64(b), math.MaxInt32)) }

func (p *planning) blockedCandidates(w *workload) int {
	n := 0
	for _, c := range w.candidates {
		if p.blocked[p.offers[c.offer].OfferKey] {
			n++
		}
	}
	return n
}

func reasonSummary(rejected map[Reason]int) string {
	if len(rejected) == 0 {
		return "the catalog has no offers"
	}
	var parts []string
	for _, r := range slices.Sorted(maps.Keys(rejected)) {
		parts = append(parts, fmt.Sprintf("%d %s", rejected[r], r))
	}
	return strings.Join(parts, ", ")
}

// baseline prices a fleet's placed nodes on the cheapest single
// hyperscaler (catalog.Hyperscalers), on-demand, ignoring capacity, spread
// and the blocklist: what a team without gpufleet would most likely pay, so
// that nodes on a GPU cloud show what they save against the hyperscalers.
// When no one hyperscaler can serve every workload, each workload takes its
// own cheapest cloud of all, GPU clouds included, and the cloud is "".
func (p *planning) baseline(f *FleetPlan) (int64, string) {
	var ws []*workload
	for _, w := range p.workloads {
		if w.fleet.Name == f.Name {
			ws = append(ws, w)
		}
	}
	placed := map[string]int{}
	for _, wp := range f.Workloads {
		placed[wp.Name] = wp.Placed
	}
	cheapest := make([]map[string]int64, len(ws))
	for i, w := range ws {
		cheapest[i] = p.cheapestOnDemand(w.spec)
	}
	best, bestCloud := int64(math.MaxInt64), ""
	for _, cloud := range catalog.Hyperscalers {
		total, ok := int64(0), true
		for i, w := range ws {
			price, found := cheapest[i][cloud]
			if !found && placed[w.spec.Name] > 0 {
				ok = false
				break
			}
			total += int64(placed[w.spec.Name]) * price
		}
		if ok && total < best {
			best, bestCloud = total, cloud
		}
	}
	if bestCloud != "" {
		return best, bestCloud
	}
	total := int64(0)
	for i, w := range ws {
		least := int64(math.MaxInt64)
		for _, cloud := range catalog.Clouds {
			if price, ok := cheapest[i][cloud]; ok {
				least = min(least, price)
			}
		}
		if least != math.MaxInt64 {
			total += int64(placed[w.spec.Name]) * least
		}
	}
	return total, ""
}

// cheapestOnDemand is, by cloud, the lowest on-demand price per node the
// cloud asks for a workload's nodes where the spec allows them; a cloud
// that cannot serve them is absent.
func (p *planning) cheapestOnDemand(w *schema.Workload) map[string]int64 {
	best := map[string]int64{}
	s := shape{w.GPU.Model, w.GPU.PerNode}
	shaped := p.byShape[s]
	for _, run := range p.shapeRuns[s] {
		group := shaped[run.from:run.to]
		first := &p.offers[group[0]]
		if !slices.Contains(w.Placement.Clouds, first.Cloud) || !p.regionAllowed(w, first.Cloud, first.Region) {
			continue
		}
		for _, i := range group {
			o := &p.offers[i]
			if o.Market != catalog.OnDemand || !ValidPrice(*o) {
				continue
			}
			if len(w.Placement.Zones) > 0 && !slices.Contains(w.Placement.Zones, o.Zone) {
				continue
			}
			cost := o.PriceMicros + p.egressCost(w, o)
			if b, ok := best[o.Cloud]; !ok || cost < b {
				best[o.Cloud] = cost
			}
		}
	}
	return best
}

// derivedWarning says, once for the plan, which of the places it uses are
// priced by the catalog's estimate rather than a quote, and how to get the
// clouds' own prices; "" when none is.
func derivedWarning(plan *Plan) string {
	var places []string
	nodes := 0
	for _, f := range plan.Fleets {
		for _, w := range f.Workloads {
			for _, pl := range w.Placements {
				if !pl.Derived {
					continue
				}
				nodes += pl.Count
				if place := pl.Offer.Cloud + " " + pl.Offer.Region; !slices.Contains(places, place) {
					places = append(places, place)
				}
			}
		}
	}
	if nodes == 0 {
		return ""
	}
	slices.Sort(places)
	return fmt.Sprintf("%d nodes are priced with derived prices, estimates for places no price source quotes (%s): gpufleet catalog refresh reads the clouds' own",
		nodes, strings.Join(places, ", "))
}
