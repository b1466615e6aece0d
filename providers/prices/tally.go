// SPDX-License-Identifier: Apache-2.0

package prices

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Tally counts the rows loaders dropped, by cloud and by what went wrong,
// for the summary a refresh prints. Its Add may be given as Options.OnDrop
// to loaders running at once.
type Tally struct {
	mu    sync.Mutex
	count map[string]map[string]int // cloud → summary key → rows
}

// Add counts one dropped row.
func (t *Tally) Add(d Drop) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.count == nil {
		t.count = map[string]map[string]int{}
	}
	if t.count[d.Cloud] == nil {
		t.count[d.Cloud] = map[string]int{}
	}
	t.count[d.Cloud][d.summaryKey()]++
}

// Total is how many rows of a cloud were dropped.
func (t *Tally) Total(cloud string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, c := range t.count[cloud] {
		n += c
	}
	return n
}

// Summary says how many of a cloud's rows were skipped and why, most
// frequent reason first: "3 rows skipped: 2 currency CNY, 1 price below
// floor", or "no rows skipped".
func (t *Tally) Summary(cloud string) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	type reason struct {
		key  string
		rows int
	}
	var reasons []reason
	total := 0
	for k, n := range t.count[cloud] {
		reasons = append(reasons, reason{k, n})
		total += n
	}
	if total == 0 {
		return "no rows skipped"
	}
	slices.SortFunc(reasons, func(a, b reason) int { return cmp.Or(cmp.Compare(b.rows, a.rows), cmp.Compare(a.key, b.key)) })
	parts := make([]string, len(reasons))
	for i, r := range reasons {
		parts[i] = fmt.Sprintf("%d %s", r.rows, r.key)
	}
	rows := "rows"
	if total == 1 {
		rows = "row"
	}
	return fmt.Sprintf("%d %s skipped: %s", total, rows, strings.Join(parts, ", "))
}

// summaryKey is what rows dropped alike share in a summary: the reason,
// and for a currency or a unit which one, since "CNY" tells an operator
// more than "currency".
func (d Drop) summaryKey() string {
	switch d.Reason {
	case ReasonCurrency:
		return d.Reason + " " + cmp.Or(d.Value, "unnamed")
	case ReasonUnit:
		return fmt.Sprintf("%s (%s)", d.Reason, cmp.Or(d.Value, "no unit"))
	}
	return d.Reason
}
