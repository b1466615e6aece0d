// SPDX-License-Identifier: Apache-2.0

package mcf

// SolveFrom is Solve starting from a given flow rather than from zero: a
// warm start when the flow is close to optimal, as the last run's placements
// are after a few prices moved. flow is indexed by ArcID. If it is not a
// flow of exactly demand units from source to sink within the capacities,
// SolveFrom starts from zero as Solve does; Result.FromFlow says which. The
// cost found is the same either way; among flows of equal cost, which one is
// returned can depend on the start.
func (g *Graph) SolveFrom(source, sink int, demand int64, flow []int64) (Result, error) {
	return g.solve(source, sink, demand, flow)
}

// feasible reports whether flow sends exactly demand units from source to
// sink within every arc's capacity, conserved at every other node.
func (g *Graph) feasible(source, sink int, demand int64, flow []int64) bool {
	if len(flow) != len(g.arcs) {
		return false
	}
	balance := grow(g.balance, g.n)
	g.balance = balance
	clear(balance)
	for i, a := range g.arcs {
		f := flow[i]
		if f < 0 || f > a.capacity || f > maxCostSum {
			return false
		}
		balance[a.from] -= f
		balance[a.to] += f
	}
	for v, b := range balance {
		want := int64(0)
		switch v {
		case source:
			want = -demand
		case sink:
			want = demand
		}
		if b != want {
			return false
		}
	}
	return true
}

// initFrom loads the graph's arcs with a feasible flow and builds a
// strongly feasible tree from it.
//
// Every arc strictly between its bounds must be in the tree, so they are
// added one by one to a forest. One that would close a cycle of such arcs
// first sends flow round it, the way that does not cost more, until some
// arc of the cycle reaches a bound; those that did leave the forest, and
// the new one joins it if it is still free. The forest then holds only arcs
// that can move either way, so hanging each of its trees from the root by
// an artificial arc with no flow, pointing up, makes a tree in which every
// node can send a unit to the root: strongly feasible.
func (s *simplex) initFrom(g *Graph, sink int32, artificialCost int64, flow []int64) {
	s.load(g, artificialCost)
	for i := range g.arcs {
		s.flow[i] = flow[i]
		s.setBound(int32(i))
	}
	n := s.n
	s.settled = grow(s.settled, n+1)
	clear(s.settled)
	for v := range n + 1 {
		s.parent[v], s.pred[v] = -1, -1
	}
	for e := range int32(s.m) {
		if s.free(e) {
			s.addFree(e)
		}
	}
	s.attach(sink)
	s.hangRest()
}

// attach joins the forest's trees into the sink's by arcs at a bound,
// pointing the way that lets each node send flow towards the sink: an
// empty arc from the tree joining to the tree it joins, a full one the
// other way. Every tree joined this way needs no artificial arc, whose
// cost would set its potentials far from those of the rest, each a
// degenerate pivot to undo. Passes over the arcs repeat while one joins
// a tree; what none can join hangs from the root.
func (s *simplex) attach(sink int32) {
	n := s.n
	// comp is each node's tree, by its top; joined marks the trees in the
	// sink's.
	comp := s.size[:n] // free until the tree is threaded
	for v := range int32(n) {
		comp[v] = s.top(v)
	}
	joined := s.settled[:n]
	clear(joined)
	joined[comp[sink]] = true
	for changed := true; changed; {
		changed = false
		for e := range int32(s.m) {
			if s.free(e) || s.capacity[e] == 0 {
				continue
			}
			child, parent := s.tail[e], s.head[e]
			if s.flow[e] > 0 {
				child, parent = parent, child
			}
			if joined[comp[child]] || !joined[comp[parent]] {
				continue
			}
			joined[comp[child]] = true
			s.reroot(child)
			s.parent[child], s.pred[child], s.upward[child] = parent, e, s.tail[e] == child
			changed = true
		}
	}
	clear(joined)
}

// free reports whether arc e can carry more flow and less.
func (s *simplex) free(e int32) bool { return s.flow[e] > 0 && s.flow[e] < s.capacity[e] }

// addFree adds arc e, strictly between its bounds, to the forest of such
// arcs that parent and pred describe (-1 at each tree's top), cancelling
// the cycle it would close first.
func (s *simplex) addFree(e int32) {
	u, v := s.tail[e], s.head[e]
	if s.top(u) == s.top(v) {
		s.cancel(e)
		if !s.free(e) {
			return
		}
	}
	s.reroot(v)
	s.parent[v], s.pred[v], s.upward[v] = u, e, false
}

// top returns the top of u's tree in the forest.
func (s *simplex) top(u int32) int32 {
	for s.parent[u] >= 0 {
		u = s.parent[u]
	}
	return u
}

// reroot makes v the top of its tree, reversing the path above it.
func (s *simplex) reroot(v int32) {
	prev, prevArc := int32(-1), int32(-1)
	for x := v; x >= 0; {
		next, nextArc := s.parent[x], s.pred[x]
		s.parent[x], s.pred[x] = prev, prevArc
		if prevArc >= 0 {
			s.upward[x] = s.tail[prevArc] == x
		}
		prev, prevArc, x = x, nextArc, next
	}
}

// cancel sends flow round the cycle that arc e, from u to v, closes in the
// forest, against e: from v along e back to u, up from u to where the paths
// from u and v meet, and down to v. Solve has ruled out cycles of negative
// cost, so the cycle e closes costs at least zero and this way round at most
// zero: the flow gets no dearer. It sends as much as keeps every arc within
// its bounds, at most e's flow, and cuts from the forest the arcs that
// reached a bound.
func (s *simplex) cancel(e int32) {
	u, v := s.tail[e], s.head[e]
	for x := u; x >= 0; x = s.parent[x] {
		s.settled[x] = true
	}
	join := v
	for !s.settled[join] {
		join = s.parent[join]
	}
	for x := u; x >= 0; x = s.parent[x] {
		s.settled[x] = false
	}

	// Going up from u, arc pred[x] gains flow when it points up; going
	// down to v, when it points down.
	room := func(x int32, gains bool) int64 {
		a := s.pred[x]
		if gains {
			return s.capacity[a] - s.flow[a]
		}
		return s.flow[a]
	}
	delta := s.flow[e]
	for x := u; x != join; x = s.parent[x] {
		delta = min(delta, room(x, s.upward[x]))
	}
	for x := v; x != join; x = s.parent[x] {
		delta = min(delta, room(x, !s.upward[x]))
	}
	s.flow[e] -= delta
	s.setBound(e)
	for x := u; x != join; x = s.parent[x] {
		s.flow[s.pred[x]] += sign(s.upward[x]) * delta
	}
	for x := v; x != join; x = s.parent[x] {
		s.flow[s.pred[x]] += sign(!s.upward[x]) * delta
	}
	// Cut the arcs that reached a bound; walk first, since cutting changes
	// the parents the walk follows.
	cut := s.path[:0]
	for _, start := range [2]int32{u, v} {
		for x := start; x != join; x = s.parent[x] {
			if !s.free(s.pred[x]) {
				cut = append(cut, x)
			}
		}
	}
	s.path = cut
	for _, x := range cut {
		s.setBound(s.pred[x])
		s.parent[x], s.pred[x] = -1, -1
	}
}

// setBound sets the state of a non-tree arc from its flow.
func (s *simplex) setBound(e int32) {
	s.state[e] = atLower
	if s.flow[e] > 0 && s.flow[e] == s.capacity[e] {
		s.state[e] = atUpper
	}
}

func sign(up bool) int64 {
	if up {
		return 1
	}
	return -1
}
