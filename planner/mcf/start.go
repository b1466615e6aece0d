// SPDX-License-Identifier: Apache-2.0

package mcf

import "math"

// init loads the graph's arcs and builds the starting tree. pot must give
// every arc with capacity a non-negative reduced cost.
//
// The source hangs from the root by its artificial arc carrying the demand
// up, and the sink by its artificial arc carrying it down. Every other node
// that can reach the sink hangs from the next arc of a cheapest path there,
// with no flow; the rest hang from the root by artificial arcs with no flow.
// Every tree arc without flow points up, so each node can send flow to the
// root and the tree is strongly feasible. Starting from paths that already
// lead to the sink cut the pivots on planner-shaped graphs three- to
// sevenfold against hanging every node from the root.
func (s *simplex) init(g *Graph, source, sink int32, demand, artificialCost int64, pot []int64) {
	s.load(g, artificialCost)
	m := int32(s.m)
	s.flow[m+source] = demand
	if demand > 0 {
		e := m + sink
		s.tail[e], s.head[e], s.flow[e] = int32(s.n), sink, demand
	}
	s.hangOnSink(source, sink, pot)
	s.hangRest()
}

// load sizes the basis for g and copies its arcs in, with no flow, and
// the artificial arc of each node, from it to the root at artificialCost.
func (s *simplex) load(g *Graph, artificialCost int64) {
	n, m := g.n, len(g.arcs)
	total := m + n
	s.n, s.m = n, m
	s.tail = grow(s.tail, total)
	s.head = grow(s.head, total)
	s.cost = grow(s.cost, total)
	s.capacity = grow(s.capacity, total)
	s.flow = grow(s.flow, total)
	s.state = grow(s.state, total)
	for i, a := range g.arcs {
		s.tail[i], s.head[i] = a.from, a.to
		s.cost[i], s.capacity[i] = a.cost, a.capacity
		s.flow[i], s.state[i] = 0, atLower
	}
	root := int32(n)
	for v := range int32(n) {
		e := int32(m) + v
		s.tail[e], s.head[e] = v, root
		s.cost[e], s.capacity[e] = artificialCost, math.MaxInt64
		s.flow[e], s.state[e] = 0, atLower
	}
	s.potential = grow(s.potential, n+1)
	s.parent = grow(s.parent, n+1)
	s.pred = grow(s.pred, n+1)
	s.upward = grow(s.upward, n+1)
	s.thread = grow(s.thread, n+1)
	s.revThread = grow(s.revThread, n+1)
	s.size = grow(s.size, n+1)
	s.last = grow(s.last, n+1)
	s.block = max(10, int(math.Sqrt(float64(total))))
	s.next = 0
	s.pivots = 0
}

// hangRest hangs every node without a tree arc from the root by its
// artificial arc, pointing up, and lays the tree out.
func (s *simplex) hangRest() {
	root := int32(s.n)
	for v := range int32(s.n) {
		if s.pred[v] < 0 {
			e := int32(s.m) + v
			s.parent[v], s.pred[v], s.upward[v] = root, e, s.tail[e] == v
		}
		s.state[s.pred[v]] = inTree
	}
	s.parent[root], s.pred[root] = -1, -1
	s.layout()
}

// hangOnSink runs Dijkstra backwards from the sink over arcs with capacity,
// on reduced costs under pot, and records each node's next arc towards the
// sink in pred and parent, or -1 in pred if it has none. Paths do not pass
// through the source, which must hang from the root.
func (s *simplex) hangOnSink(source, sink int32, pot []int64) {
	n := s.n
	first := grow(s.intoFirst, n+1)
	clear(first)
	for e := range s.m {
		if s.capacity[e] > 0 {
			first[s.head[e]+1]++
		}
	}
	for v := 1; v <= n; v++ {
		first[v] += first[v-1]
	}
	into := grow(s.into, int(first[n]))
	slot := s.size[:n] // free until the tree is threaded
	copy(slot, first[:n])
	for e := range int32(s.m) {
		if h := s.head[e]; s.capacity[e] > 0 {
			into[slot[h]] = e
			slot[h]++
		}
	}
	s.intoFirst, s.into = first, into

	dist := s.potential // overwritten once the tree is threaded
	settled := grow(s.settled, n)
	clear(settled)
	s.settled = settled
	for v := range n {
		s.pred[v] = -1
	}
	queue := append(s.queue[:0], item{0, sink})
	dist[sink] = 0
	for len(queue) > 0 {
		it := queue.pop()
		u := it.node
		if settled[u] {
			continue
		}
		settled[u] = true
		for _, e := range into[first[u]:first[u+1]] {
			v := s.tail[e]
			if v == source || settled[v] {
				continue
			}
			d := it.dist + s.cost[e] + pot[v] - pot[u]
			if s.pred[v] >= 0 && d >= dist[v] {
				continue
			}
			dist[v], s.pred[v], s.parent[v], s.upward[v] = d, e, u, true
			queue.push(item{d, v})
		}
	}
	s.queue = queue
	s.pred[sink] = -1
}

// layout lays the tree given by parent and pred out in preorder, children in
// node order, and sets thread, size, last and the potentials.
func (s *simplex) layout() {
	n := s.n
	root := int32(n)
	// Counting sort by parent, with counts two places up so that filling
	// through first[parent+1] leaves v's children at first[v]:first[v+1].
	first := grow(s.childFirst, n+3)
	clear(first)
	for v := range n {
		first[s.parent[v]+2]++
	}
	for v := 2; v <= n+2; v++ {
		first[v] += first[v-1]
	}
	children := grow(s.children, n)
	for v := range int32(n) {
		p := s.parent[v] + 1
		children[first[p]] = v
		first[p]++
	}
	s.childFirst, s.children = first, children

	order := s.path[:0]
	stack := append(s.runFirst[:0], root)
	for len(stack) > 0 {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		order = append(order, v)
		for i := first[v+1] - 1; i >= first[v]; i-- {
			stack = append(stack, children[i])
		}
	}
	s.path, s.runFirst = order, stack

	for i, v := range order {
		next := order[(i+1)%len(order)]
		s.thread[v], s.revThread[next] = next, v
		s.size[v] = 1
		if v == root {
			s.potential[v] = 0
			continue
		}
		p, e := s.parent[v], s.pred[v]
		if s.upward[v] {
			s.potential[v] = s.potential[p] - s.cost[e]
		} else {
			s.potential[v] = s.potential[p] + s.cost[e]
		}
	}
	for i := len(order) - 1; i > 0; i-- {
		v := order[i]
		s.size[s.parent[v]] += s.size[v]
	}
	for i, v := range order {
		s.last[v] = order[i+int(s.size[v])-1]
	}
}

// reprice loads the graph's costs into the tree of the last Solve, whose
// flow and capacities are unchanged, and recomputes the potentials along
// the thread, parents before children: O(arcs + n). The tree stays strongly
// feasible, since that depends on flows alone, and every artificial arc
// still carries nothing, at a cost above any route of the new costs.
func (s *simplex) reprice(g *Graph, artificialCost int64) {
	for i, a := range g.arcs {
		s.cost[i] = a.cost
	}
	for v := range s.n {
		s.cost[s.m+v] = artificialCost
	}
	root := int32(s.n)
	s.potential[root] = 0
	for v := s.thread[root]; v != root; v = s.thread[v] {
		p, e := s.parent[v], s.pred[v]
		if s.upward[v] {
			s.potential[v] = s.potential[p] - s.cost[e]
		} else {
			s.potential[v] = s.potential[p] + s.cost[e]
		}
	}
	s.next = 0
	s.pivots = 0
}
