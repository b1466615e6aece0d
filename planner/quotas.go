package planner

import (
	"slices"

	"github.com/gpufleet/gpufleet/planner/mcf"
)

// Quotas as the plan sees them. A quota limits the units (vCPUs or GPUs)
// that nodes of several offers use together: Σ per(o)·nodes(o) ≤ room. With
// one unit count per quota that is a capacity on a node of the flow; with
// several (p5.48xlarge and p4d.24xlarge in one vCPU quota) it is a knapsack
// constraint, which no flow holds. So the network gives each quota a node
// per unit count, a class, capped at what the room holds of that class
// alone, and branch and bound splits a quota the relaxation overfills: at
// most n−1 nodes of its heaviest class there, or at least n, which leaves
// the others less (search.go). The quotas of one offer nest (an Azure
// family's inside the region's vCPUs, a GCE model's inside
// GPUS_ALL_REGIONS), and a class of the inner one is inside the same class
// of the outer one, so an offer's nodes pass through one class node per
// quota in turn.

// quotaKey names a quota of the input: Region "" for a global one.
type quotaKey struct{ cloud, region, name string }

// quotaState is a quota of the input, prepared.
type quotaState struct {
	Quota
	// room is what the plan's movable and new nodes may use: the limit,
	// less what others use, less what nodes that must stay use. When the
	// account already uses more than the limit allows, what gpufleet runs
	// there now may stay: a quota cut is no reason to delete a node.
	room int64
	// binding says the candidates could use more than the room.
	binding bool
}

// offerQuota is what one node of an offer counts against a quota of the
// input.
type offerQuota struct {
	quota int // index into planning.quotas
	per   int64
}

// prepareQuotas matches every offer's quota counts to the input's quotas,
// works out each quota's room from what runs, and marks those the
// candidates could overfill. Counts naming a quota the input does not have
// are not planned against: nothing is known of its limit.
func (p *planning) prepareQuotas() {
	index := map[quotaKey]int{}
	for _, q := range p.in.Quotas {
		if q.Limit < 0 {
			continue
		}
		k := quotaKey{q.Cloud, q.Region, q.Name}
		if _, dup := index[k]; dup {
			continue
		}
		index[k] = len(p.quotas)
		p.quotas = append(p.quotas, &quotaState{Quota: q})
	}
	p.offerQuotas = make([][]offerQuota, len(p.offers))
	for i, o := range p.offers {
		for _, c := range o.Quotas {
			if c.Per <= 0 {
				continue
			}
			q, ok := index[quotaKey{o.Cloud, o.Region, c.Quota}]
			if !ok {
				q, ok = index[quotaKey{o.Cloud, "", c.Quota}]
			}
			if ok {
				p.offerQuotas[i] = append(p.offerQuotas[i], offerQuota{q, c.Per})
			}
		}
	}
	if len(p.quotas) == 0 {
		return
	}
	use := func(key OfferKey, n int64, into []int64) {
		i, ok := slices.BinarySearchFunc(p.offers, key, func(o Offer, k OfferKey) int { return o.Compare(k) })
		if !ok {
			return
		}
		for _, oq := range p.offerQuotas[i] {
			into[oq.quota] = saturatingAdd(into[oq.quota], saturatingMul(oq.per, n))
		}
	}
	ours := make([]int64, len(p.quotas))
	for _, inst := range p.in.Observed {
		if inst.State.Live() {
			use(inst.OfferKey, 1, ours)
		}
	}
	fixed := make([]int64, len(p.quotas))
	potential := make([]int64, len(p.quotas))
	for _, w := range p.workloads {
		for _, f := range w.fixed {
			use(p.offers[f.offer].OfferKey, int64(f.count), fixed)
		}
		for _, h := range w.held {
			use(h.offer, int64(h.count), fixed)
		}
		// The most the workload's movable and new nodes could use of each.
		most := map[int]int64{}
		for _, c := range w.candidates {
			for _, oq := range p.offerQuotas[c.offer] {
				most[oq.quota] = max(most[oq.quota], oq.per)
			}
		}
		for q, per := range most {
			potential[q] = saturatingAdd(potential[q], saturatingMul(per, int64(w.demand)))
		}
	}
	for i, q := range p.quotas {
		others := int64(0)
		if q.Used != UsedUnknown && q.Used > ours[i] {
			others = q.Used - ours[i]
		}
		q.room = max(0, max(q.Limit-others, ours[i])-fixed[i])
		q.binding = potential[i] > q.room
	}
}

// bindingQuotas are the quotas an offer counts against that could bind, in
// the order the catalog gives them, the offer's own first.
func (p *planning) bindingQuotas(offer int) []offerQuota {
	var out []offerQuota
	for _, oq := range p.offerQuotas[offer] {
		if p.quotas[oq.quota].binding {
			out = append(out, oq)
		}
	}
	return out
}

func saturatingAdd(a, b int64) int64 {
	if s := a + b; s >= a {
		return s
	}
	return 1 << 62
}

func saturatingMul(a, b int64) int64 {
	if a == 0 || b == 0 {
		return 0
	}
	if a > (1<<62)/b {
		return 1 << 62
	}
	return a * b
}

// resetClasses clears the quota classes' decisions: none at least, and at
// most what the room holds of each class alone.
func (c *component) resetClasses() {
	for i, qc := range c.classes {
		c.classLo[i] = 0
		c.classHi[i] = min(mcf.Inf, c.p.quotas[qc.quota].room/qc.per)
	}
}

// tightenClasses caps each class at what its quota's room leaves after the
// other classes' lower bounds, and reports false if the bounds cannot all
// hold.
func (c *component) tightenClasses() bool {
	least := map[int]int64{}
	for i, qc := range c.classes {
		least[qc.quota] += qc.per * c.classLo[i]
	}
	for i, qc := range c.classes {
		room := c.p.quotas[qc.quota].room
		if least[qc.quota] > room {
			return false
		}
		others := least[qc.quota] - qc.per*c.classLo[i]
		c.classHi[i] = min(c.classHi[i], (room-others)/qc.per)
		if c.classLo[i] > c.classHi[i] {
			return false
		}
	}
	return true
}

// classNodes is how many nodes the current flow puts through a class.
func (c *component) classNodes(i int) int64 { return c.g.Flow(c.classes[i].arc) }

// overQuota returns a class to branch on when the current flow uses more
// of some quota than its room, and the nodes it has there: the heaviest
// class above its lower bound, of the quota overfilled most. It returns -1
// when every quota holds.
func (c *component) overQuota() (class int, nodes int64) {
	use := map[int]int64{}
	for i, qc := range c.classes {
		use[qc.quota] += qc.per * c.classNodes(i)
	}
	class, worst := -1, int64(0)
	for i, qc := range c.classes {
		over := use[qc.quota] - c.p.quotas[qc.quota].room
		n := c.classNodes(i)
		if over <= 0 || n <= c.classLo[i] {
			continue
		}
		if class < 0 || over > worst || over == worst && qc.per > c.classes[class].per {
			class, worst, nodes = i, over, n
		}
	}
	return class, nodes
}

// needsQuotaSearch reports whether some quota of the component has classes
// of more than one unit count: a knapsack the flow alone cannot hold.
func (c *component) needsQuotaSearch() bool {
	per := map[int]int64{}
	for _, qc := range c.classes {
		if p, ok := per[qc.quota]; ok && p != qc.per {
			return true
		}
		per[qc.quota] = qc.per
	}
	return false
}

// shareQuotas caps each class at an even share of its quota's room, so that
// any flow keeps every quota, however its classes fill: the plan of last
// resort when the search finds none.
func (c *component) shareQuotas() {
	classes := map[int]int64{}
	for _, qc := range c.classes {
		classes[qc.quota]++
	}
	for i, qc := range c.classes {
		c.classHi[i] = min(c.classHi[i], c.p.quotas[qc.quota].room/classes[qc.quota]/qc.per)
	}
}
