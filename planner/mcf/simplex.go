// SPDX-License-Identifier: Apache-2.0

package mcf

import "math"

// Arc states in the basis. A non-tree arc sits at one of its bounds, and its
// state is the sign that turns a reduced cost worth pivoting on negative.
const (
	atLower int8 = 1
	inTree  int8 = 0
	atUpper int8 = -1
)

// simplex is the primal network simplex on the graph's arcs plus a root node
// (index n) and one artificial arc per node between it and the root. The
// artificial arcs carry the demand in the starting tree (see start.go), and
// cost more than any route through real arcs, so they keep flow only when
// the real arcs cannot carry it.
//
// The tree is kept strongly feasible (every node can send a unit to the
// root along its tree path), and the leaving arc is chosen by Cunningham's
// rule, which together rule out cycling on degenerate pivots.
type simplex struct {
	n, m       int // real nodes and arcs; arc m+v is node v's artificial arc
	tail, head []int32
	cost       []int64
	capacity   []int64
	flow       []int64
	state      []int8

	// potential makes every tree arc's reduced cost zero; only differences
	// matter, and the root's stays near 0.
	potential []int64
	parent    []int32
	pred      []int32 // the tree arc to the parent
	upward    []bool  // pred points from the node to its parent
	// The tree in preorder: thread links every node to the next, so a
	// subtree is the run of size[v] nodes from v, ending at last[v]. Moving
	// a subtree rewires O(path) links, and walking it touches only its nodes.
	thread, revThread []int32
	size, last        []int32
	path              []int32
	// Thread ends of the runs a moved subtree is cut into; see rehang.
	runFirst, runLast []int32

	// Scratch for building the starting tree.
	intoFirst, into      []int32 // arcs by head
	childFirst, children []int32 // tree children by parent
	queue                heap
	settled              []bool

	// The entering arc is the most negative in the first block of arcs
	// that holds one, resuming where the last search stopped: far cheaper
	// per pivot than scanning all arcs. Blocks of about the square root of
	// the arc count measured best on planner-shaped graphs, trading fewer
	// pivots against longer scans.
	block, next int
	// pivots counts the last Solve's pivots, for benchmarks.
	pivots int
}

// run pivots until no arc's reduced cost says the flow could be cheaper.
func (s *simplex) run() error {
	for {
		in := s.entering()
		if in < 0 {
			return nil
		}
		if !s.pivot(in) {
			return ErrNegativeCycle
		}
		s.pivots++
	}
}

// entering returns a non-tree arc whose reduced cost, signed by its state,
// is negative, or -1 if there is none and the flow is optimal.
func (s *simplex) entering() int32 {
	state, cost, tail, head, pot := s.state, s.cost, s.tail, s.head, s.potential
	total := len(state)
	cost, tail, head = cost[:total], tail[:total], head[:total]
	best, bestCost := int32(-1), int64(0)
	e, left := s.next, s.block
	for range total {
		if st := state[e]; st != inTree {
			c := int64(st) * (cost[e] + pot[tail[e]] - pot[head[e]])
			if c < bestCost {
				best, bestCost = int32(e), c
			}
		}
		e++
		if e == total {
			e = 0
		}
		left--
		if left == 0 {
			if best >= 0 {
				break
			}
			left = s.block
		}
	}
	s.next = e
	return best
}

// pivot sends flow around the cycle that arc in closes with the tree, until
// an arc of the cycle reaches a bound, and swaps that arc out of the tree for
// in. It reports false if nothing bounds the flow, which only a cycle of
// unbounded arcs with negative cost allows.
func (s *simplex) pivot(in int32) bool {
	// Flow goes first -> second along in, up the tree to join, and down to
	// first again.
	first, second := s.tail[in], s.head[in]
	delta := s.capacity[in] - s.flow[in]
	if s.state[in] == atUpper {
		first, second = second, first
		delta = s.flow[in]
	}
	join := s.join(first, second)

	// Cunningham's rule: of the arcs that block, the one to leave is the
	// last met going round the cycle from join. Down the first side that is
	// the one nearest first, up the second side the one nearest join, and
	// in and then the second side win ties because they come later.
	var leaving int32 = -1 // the node below the leaving arc; -1: in itself
	onSecond := false
	for u := first; u != join; u = s.parent[u] {
		e := s.pred[u]
		room := s.capacity[e] - s.flow[e]
		if s.upward[u] {
			room = s.flow[e]
		}
		if room < delta {
			delta, leaving = room, u
		}
	}
	for u := second; u != join; u = s.parent[u] {
		e := s.pred[u]
		room := s.flow[e]
		if s.upward[u] {
			room = s.capacity[e] - s.flow[e]
		}
		if room <= delta {
			delta, leaving, onSecond = room, u, true
		}
	}
	if delta == math.MaxInt64 {
		return false
	}

	if delta > 0 {
		s.flow[in] += int64(s.state[in]) * delta
		for u := first; u != join; u = s.parent[u] {
			if s.upward[u] {
				s.flow[s.pred[u]] -= delta
			} else {
				s.flow[s.pred[u]] += delta
			}
		}
		for u := second; u != join; u = s.parent[u] {
			if s.upward[u] {
				s.flow[s.pred[u]] += delta
			} else {
				s.flow[s.pred[u]] -= delta
			}
		}
	}

	if leaving < 0 {
		s.state[in] = -s.state[in]
		return true
	}
	out := s.pred[leaving]
	s.state[out] = atUpper
	if s.flow[out] == 0 {
		s.state[out] = atLower
	}
	s.state[in] = inTree
	if onSecond {
		s.rehang(second, first, in, leaving, join)
	} else {
		s.rehang(first, second, in, leaving, join)
	}
	return true
}

// join returns the nearest common ancestor of u and v. Of two distinct
// nodes, the one with the smaller subtree cannot be an ancestor of the
// other, so it is the one to move up.
func (s *simplex) join(u, v int32) int32 {
	for u != v {
		if s.size[u] < s.size[v] {
			u = s.parent[u]
		} else {
			v = s.parent[v]
		}
	}
	return u
}

// rehang cuts the subtree S below the leaving node's tree arc, re-roots it at
// node below, which lies in it, and hangs it from node above by arc in.
//
// Re-rooting reverses the path below = w0, w1, ..., wk = leaving. In
// preorder the new S is w0's old subtree, then for each i >= 1: wi and what
// of its old subtree is not in w(i-1)'s, which in the old thread is the run
// A between wi and w(i-1) and the run B after w(i-1)'s subtree. Each run
// keeps its inner links, so only the ends are rewired.
func (s *simplex) rehang(below, above, in, leaving, join int32) {
	moved := s.size[leaving]

	// The path and, before any link changes, the ends of the runs A and B
	// of each wi (-1 when empty).
	path := append(s.path[:0], below)
	for w := below; w != leaving; {
		w = s.parent[w]
		path = append(path, w)
	}
	s.path = path
	k := len(path) - 1
	runFirst := grow(s.runFirst, 2*(k+1))
	runLast := grow(s.runLast, 2*(k+1))
	s.runFirst, s.runLast = runFirst, runLast
	for i := 1; i <= k; i++ {
		w, prev := path[i], path[i-1]
		runFirst[2*i], runLast[2*i] = -1, -1
		if s.thread[w] != prev {
			runFirst[2*i], runLast[2*i] = s.thread[w], s.revThread[prev]
		}
		runFirst[2*i+1], runLast[2*i+1] = -1, -1
		if s.last[w] != s.last[prev] {
			runFirst[2*i+1], runLast[2*i+1] = s.thread[s.last[prev]], s.last[w]
		}
	}

	// Take S out of the thread; ancestors whose subtree ended with S now
	// end just before it.
	before, oldLast := s.revThread[leaving], s.last[leaving]
	s.link(before, s.thread[oldLast])
	for a := s.parent[leaving]; a >= 0 && s.last[a] == oldLast; a = s.parent[a] {
		s.last[a] = before
	}
	for a := s.parent[leaving]; a != join; a = s.parent[a] {
		s.size[a] -= moved
	}

	// Stitch the new preorder of S, and resize the path's subtrees: wi now
	// holds all of S but w(i-1)'s old subtree.
	end := s.last[below]
	for i := 1; i <= k; i++ {
		s.link(end, path[i])
		end = path[i]
		for _, j := range [2]int{2 * i, 2*i + 1} {
			if runFirst[j] >= 0 {
				s.link(end, runFirst[j])
				end = runLast[j]
			}
		}
	}
	for i := k; i >= 1; i-- {
		s.size[path[i]] = moved - s.size[path[i-1]]
	}
	s.size[below] = moved
	for _, w := range path {
		s.last[w] = end
	}

	// Reverse the tree arcs along the path.
	parent, pred := above, in
	for _, w := range path {
		oldPred := s.pred[w]
		s.parent[w], s.pred[w], s.upward[w] = parent, pred, s.tail[pred] == w
		parent, pred = w, oldPred
	}

	// Hang S right after above in the thread, as its first child.
	s.link(end, s.thread[above])
	s.link(above, below)
	for a := above; a >= 0 && s.last[a] == above; a = s.parent[a] {
		s.last[a] = end
	}
	for a := above; a != join; a = s.parent[a] {
		s.size[a] += moved
	}

	// S's potentials all shift by the amount that zeroes the reduced cost
	// of in. Only differences of potentials matter, so when S is the bigger
	// part of the tree the rest shifts the other way instead, which halves
	// the work on average.
	sigma := s.cost[in] - s.potential[below]
	if s.upward[below] {
		sigma = -s.cost[in] - s.potential[below]
	}
	sigma += s.potential[above]
	w, count := below, moved
	if 2*moved > int32(s.n)+1 {
		w, count, sigma = s.thread[end], int32(s.n)+1-moved, -sigma
	}
	for range count {
		s.potential[w] += sigma
		w = s.thread[w]
	}
	// Keep the root near 0, so that potentials stay tree-path sums of
	// bounded size and cannot drift towards overflow.
	if r := s.potential[s.n]; r > maxCostSum || r < -maxCostSum {
		for v := range s.potential {
			s.potential[v] -= r
		}
	}
}

func (s *simplex) link(u, v int32) {
	s.thread[u] = v
	s.revThread[v] = u
}
