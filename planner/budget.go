package planner

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	"github.com/gpufleet/gpufleet/schema/catalog"
)

// A budget is not a flow constraint: it couples every workload of a fleet
// through their prices. So the planner solves without it, and a fleet over
// budget sheds nodes from its lowest-priority workloads, most expensive
// first, until it fits; the components it touched are solved again, since
// freed capacity may serve others.

// maxBudgetRounds bounds the shed-and-resolve loop. Every round sheds at
// least one node, so it ends anyway; the bound guards against a bug.
const maxBudgetRounds = 1000

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
			if budget == nil {
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
			var err error
			if results[i], err = p.solveComponent(comps[i]); err != nil {
				return err
			}
		}
	}
	return fmt.Errorf("budgets did not settle after %d rounds", maxBudgetRounds)
}

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
