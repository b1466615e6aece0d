// SPDX-License-Identifier: Apache-2.0

package planner

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/gpufleet/gpufleet/planner/mcf"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// A budget is not a flow constraint: it couples every workload of a fleet
// through their prices. Within the lexicographic objective it asks for the
// most nodes, priority by priority, whose cost fits, and then the cheapest
// such placement.
//
// Where one fleet's budget binds in a component, and no other fleet shares
// its reservations, the planner meets it exactly (underBudget): the least
// cost of placing k nodes of a priority, the others fixed, is convex and
// rises with k, so a binary search finds each priority's count; the
// cheapest placement of those counts within the budget is then a
// Lagrangian search, which says how far from optimal it may be when it
// cannot prove it is exact. Elsewhere (several budgets in one component,
// shared reservations, nodes that must stay costing more than the budget)
// the fleet sheds nodes from its lowest priorities, most expensive first,
// and the plan says it is not proven optimal.

// errBudgetInexact says a component's budget cannot be met exactly.
var errBudgetInexact = errors.New("the budget cannot be met exactly")

// componentBudget is the budget of the one fleet of a component that has
// one.
type componentBudget struct {
	fleet string
	// limit is what the fleet's flow may cost: its budget less what its
	// nodes that must stay cost.
	limit int64
	// actual is what each arc costs the fleet: price and egress on its
	// nodes, the refund on reservations only it uses.
	actual []int64
	// exact says the budget can be met exactly.
	exact   bool
	message string
}

func (p *planning) componentBudget(c *component, arcs int) *componentBudget {
	var fleets []string
	for _, w := range c.workloads {
		if w.fleet.Budget != nil && !slices.Contains(fleets, w.fleet.Name) {
			fleets = append(fleets, w.fleet.Name)
		}
	}
	if len(fleets) == 0 {
		return nil
	}
	b := &componentBudget{fleet: fleets[0], actual: make([]int64, arcs), exact: len(fleets) == 1}
	var limit int64
	pools := map[reservationKey]map[string]bool{}
	for _, w := range c.workloads {
		for _, cand := range w.candidates {
			if k, ok := p.pool(&p.offers[cand.offer]); ok {
				if pools[k] == nil {
					pools[k] = map[string]bool{}
				}
				pools[k][w.fleet.Name] = true
			}
		}
	}
	// The budget's fleet reaches its offers by arcs of its own, not hubs.
	for _, a := range c.arcs {
		w := c.workloads[a.workload]
		cand := w.candidates[a.candidate]
		o := &p.offers[cand.offer]
		if w.fleet.Name != b.fleet {
			continue
		}
		limit = catalog.Micros(*w.fleet.Budget)
		for _, arc := range []mcf.ArcID{a.add, a.keep} {
			if arc != noArc {
				b.actual[arc] = o.PriceMicros + cand.egress
			}
		}
	}
	for k, arc := range c.refunds {
		if users := pools[k]; users[b.fleet] {
			b.actual[arc] = -p.reserved[k].refund
			if len(users) > 1 {
				// Whose node a reservation refunds is the flow's choice.
				b.exact = false
			}
		}
	}
	for _, w := range c.workloads {
		if w.fleet.Name == b.fleet {
			limit = catalog.Micros(*w.fleet.Budget)
			for _, f := range w.fixed {
				o := &p.offers[f.offer]
				limit -= int64(f.count-w.reservedFixed[f.offer])*o.PriceMicros + int64(f.count)*p.egressCost(w.spec, o)
			}
		}
	}
	b.limit = limit
	b.exact = b.exact && limit >= 0
	for _, w := range c.workloads {
		if w.fleet.Name == b.fleet {
			b.message = fmt.Sprintf("more nodes would take fleet %s over its budget of %s/h", b.fleet, catalog.Money(catalog.Micros(*w.fleet.Budget)))
			break
		}
	}
	return b
}

// underBudget solves the component again with the budget fleet's flow
// cost held to its limit, from placed, the counts without it.
func (c *component) underBudget(unbudgeted []int64) error {
	b := c.budget
	n := len(c.levels)
	counts := make([]int64, n)
	for l := range n {
		counts[l] = c.forcedAt(l)
	}
	fits := func(counts []int64) (bool, error) {
		cost, err := c.route(counts, b.actual)
		if errors.Is(err, mcf.ErrInfeasible) {
			return false, nil
		}
		return err == nil && cost <= b.limit, err
	}
	if ok, err := fits(counts); err != nil {
		return err
	} else if !ok {
		// The gangs told where to run cost more than the budget.
		return errNoFit
	}
	for l := range n {
		most, err := c.lexMax(counts, l)
		if err != nil {
			return err
		}
		lo, hi := counts[l], most[l]
		for lo < hi {
			mid := lo + (hi-lo+1)/2
			counts[l] = mid
			ok, err := fits(counts)
			if err != nil {
				return err
			}
			if ok {
				lo = mid
			} else {
				hi = mid - 1
			}
		}
		counts[l] = lo
	}
	if !slices.Equal(counts, unbudgeted) {
		c.budgetBinds = true
	}
	return c.cheapestUnder(counts)
}

// cheapestUnder finds the cheapest placement of counts within the budget.
// A placement that is cheapest for money plus p times what it costs the
// fleet, and fits, is a solution; every such p also bounds how cheap any
// placement that fits can be. The search over p stops when the two meet,
// or after a bounded number of solves, leaving the gap.
func (c *component) cheapestUnder(counts []int64) error {
	b := c.budget
	const scale = 16 // p moves in steps of 1/scale
	costs := make([]int64, len(c.money))
	best, bestP := int64(math.MaxInt64), int64(-1)
	bound := int64(math.MinInt64)
	try := func(p int64) (fits bool, err error) {
		for i := range costs {
			costs[i] = scale*c.money[i] + p*b.actual[i]
		}
		total, err := c.route(counts, costs)
		if err != nil {
			return false, err
		}
		money, spend := c.flowCost(c.money), c.flowCost(b.actual)
		// No placement that fits costs less than this.
		bound = max(bound, ceilDiv(total-p*b.limit, scale))
		if spend <= b.limit && money < best {
			best, bestP = money, p
		}
		return spend <= b.limit, nil
	}
	lo, hi := int64(0), int64(1)
	if ok, err := try(0); err != nil {
		return err
	} else if !ok {
		// Raise p until a placement fits; the one that costs the fleet
		// least always does, so this ends.
		for {
			ok, err := try(hi)
			if errors.Is(err, mcf.ErrOverflow) {
				break
			}
			if err != nil {
				return err
			}
			if ok {
				break
			}
			lo, hi = hi, hi*2
		}
		for range 24 {
			if hi-lo <= 1 || bound >= best {
				break
			}
			mid := lo + (hi-lo)/2
			ok, err := try(mid)
			if err != nil {
				return err
			}
			if ok {
				hi = mid
			} else {
				lo = mid
			}
		}
	}
	if bestP < 0 {
		// Costs too large to weigh: the placement that costs the fleet
		// least fits.
		if _, err := c.route(counts, b.actual); err != nil {
			return err
		}
		best, bound = c.flowCost(c.money), math.MinInt64
	} else if _, err := try(bestP); err != nil {
		// The flow is the best solution's again.
		return err
	}
	c.value = objective{placed: counts, cost: best}
	c.bound = objective{placed: counts, cost: min(bound, best)}
	if bound < best {
		c.inexact = true
		c.gap = max(c.gap, best-bound)
		if bound == math.MinInt64 {
			c.gap = max(c.gap, best)
		}
	}
	return nil
}

func ceilDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a > 0) == (b > 0) {
		q++
	}
	return q
}

// markBudget says, for the workloads the budget left short, that it did.
func (c *component) markBudget() {
	if c.budget == nil || !c.budgetBinds {
		return
	}
	for _, w := range c.workloads {
		if w.fleet.Name == c.budget.fleet {
			w.budgetCause = c.budget.message + "; nodes are placed by priority as far as it goes"
		}
	}
}

// enforceBudgets sheds nodes of fleets over budget in the components whose
// budgets could not be met exactly, lowest priority and most expensive
// first, solving those components again, since freed capacity may serve
// others. Such a plan is not proven optimal.
func (p *planning) enforceBudgets(comps [][]*workload, results []componentResult) error {
	compOf := map[*workload]int{}
	for i, ws := range comps {
		for _, w := range ws {
			compOf[w] = i
		}
	}
	byFleet := map[string][]*workload{}
	var fleets []string
	for _, w := range p.workloads {
		if byFleet[w.fleet.Name] == nil {
			fleets = append(fleets, w.fleet.Name)
		}
		byFleet[w.fleet.Name] = append(byFleet[w.fleet.Name], w)
	}
	for range maxBudgetRounds {
		touched := map[int]bool{}
		for _, name := range fleets {
			ws := byFleet[name]
			budget := ws[0].fleet.Budget
			if budget == nil || !results[compOf[ws[0]]].shedding {
				continue
			}
			limit := catalog.Micros(*budget)
			cost := int64(0)
			for _, w := range ws {
				cost += p.workloadCost(w)
			}
			if cost <= limit {
				continue
			}
			for _, w := range p.shed(ws, cost-limit) {
				w.shedCause = fmt.Sprintf("fleet %s would cost %s/h, over its budget of %s/h; nodes are shed from the lowest priority first",
					name, catalog.Money(cost), catalog.Money(limit))
				touched[compOf[w]] = true
			}
		}
		if len(touched) == 0 {
			return nil
		}
		for _, i := range slices.Sorted(maps.Keys(touched)) {
			res, err := p.solveComponent(comps[i], false)
			if err != nil {
				return err
			}
			shed := int64(0)
			for _, w := range comps[i] {
				shed += int64(w.shed)
			}
			res.optimal, res.shedding, res.gapNodes = false, true, max(res.gapNodes, shed)
			results[i] = res
		}
	}
	return fmt.Errorf("budgets did not settle after %d rounds", maxBudgetRounds)
}

// maxBudgetRounds bounds the shed-and-resolve loop. Every round sheds at
// least one node, so it ends anyway; the bound guards against a bug.
const maxBudgetRounds = 1000

// shed lowers the demand of a fleet's workloads, lowest priority first, by
// enough placed nodes to save excess, and returns the workloads it changed.
func (p *planning) shed(ws []*workload, excess int64) []*workload {
	order := slices.Clone(ws)
	slices.SortStableFunc(order, func(a, b *workload) int {
		return cmp.Or(cmp.Compare(a.spec.Priority, b.spec.Priority), cmp.Compare(a.spec.Name, b.spec.Name))
	})
	var changed []*workload
	for _, w := range order {
		if excess <= 0 {
			break
		}
		costs := p.nodeCosts(w)
		if len(costs) == 0 {
			continue
		}
		n := 0
		if w.spec.Gang() {
			// A gang runs whole or not at all.
			n = len(costs)
			for _, c := range costs {
				excess -= c
			}
		} else {
			for _, c := range costs {
				if excess <= 0 {
					break
				}
				excess -= c
				n++
			}
		}
		p.dropNodes(w, n)
		changed = append(changed, w)
	}
	return changed
}

// nodeCosts lists what each placed node of a workload costs per hour, most
// expensive first.
func (p *planning) nodeCosts(w *workload) []int64 {
	var costs []int64
	for _, pl := range p.placements(w) {
		for i := range pl.Count {
			c := pl.EgressMicros
			if i >= pl.Reserved {
				c += pl.PriceMicros
			}
			costs = append(costs, c)
		}
	}
	slices.SortFunc(costs, func(a, b int64) int { return cmp.Compare(b, a) })
	return costs
}

// dropNodes removes n nodes from what a workload asks the flow for, then
// from the nodes it would otherwise keep where they run.
func (p *planning) dropNodes(w *workload, n int) {
	w.shed += n
	fromFlow := min(n, w.demand)
	w.demand -= fromFlow
	n -= fromFlow
	// Fixed nodes go most expensive first.
	slices.SortStableFunc(w.fixed, func(a, b fixedNodes) int {
		return cmp.Compare(p.offers[b.offer].PriceMicros, p.offers[a.offer].PriceMicros)
	})
	for i := range w.fixed {
		f := &w.fixed[i]
		take := min(n, f.count)
		f.count -= take
		n -= take
		// Reserved nodes go last, and hand their reservation back.
		if unreserved := f.count + take - w.reservedFixed[f.offer]; take > unreserved {
			back := take - max(0, unreserved)
			w.reservedFixed[f.offer] -= back
			if k, ok := p.pool(&p.offers[f.offer]); ok {
				p.reserved[k].count += back
			}
		}
	}
	w.fixed = slices.DeleteFunc(w.fixed, func(f fixedNodes) bool { return f.count == 0 })
}

// workloadCost is what a workload's placement costs per hour.
func (p *planning) workloadCost(w *workload) int64 {
	total := int64(0)
	for _, pl := range p.placements(w) {
		total += pl.Cost()
	}
	return total
}
