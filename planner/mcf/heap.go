// SPDX-License-Identifier: Apache-2.0

package mcf

// item is a node waiting in a search queue at a tentative distance. A node
// may wait more than once; the search skips all but its first exit.
type item struct {
	dist int64
	node int32
}

// before orders items by distance, then by node, so that the order of exits
// never depends on the order of entries.
func (it item) before(o item) bool {
	return it.dist < o.dist || (it.dist == o.dist && it.node < o.node)
}

// heap is a binary min-heap of items.
type heap []item

func (h *heap) push(it item) {
	q := append(*h, it)
	i := len(q) - 1
	for i > 0 {
		parent := (i - 1) / 2
		if !it.before(q[parent]) {
			break
		}
		q[i] = q[parent]
		i = parent
	}
	q[i] = it
	*h = q
}

func (h *heap) pop() item {
	q := *h
	top := q[0]
	last := q[len(q)-1]
	q = q[:len(q)-1]
	i := 0
	for {
		child := 2*i + 1
		if child >= len(q) {
			break
		}
		if child+1 < len(q) && q[child+1].before(q[child]) {
			child++
		}
		if !q[child].before(last) {
			break
		}
		q[i] = q[child]
		i = child
	}
	if len(q) > 0 {
		q[i] = last
	}
	*h = q
	return top
}
