// SPDX-License-Identifier: Apache-2.0

package status

import "fmt"

// RunCounts is what a run did to the clouds, in nodes and in calls,
// counted once by the run for every output that sums it up: the summary,
// the commit message, the status files, -o json and the metrics. A node
// tried on a pool that ran dry and then launched elsewhere is one node
// created, not a failure and a create.
type RunCounts struct {
	Created int `json:"created"`
	Deleted int `json:"deleted"`
	// Replaced counts the created nodes first planned on a pool that ran
	// out of capacity or quota in the run (tried there, or held back once
	// it was found dry), and placed and launched elsewhere in a later
	// round. They are counted in Created too.
	Replaced int `json:"replaced"`
	// FailedNodes counts the nodes the run meant to create or delete that
	// are still not done when it ends, because of an error. A run that
	// converged has none.
	FailedNodes int `json:"failedNodes"`
	// FailedCalls counts the cloud calls that returned an error: a batch
	// launch that fails is one call, whatever its size.
	FailedCalls int `json:"failedCalls"`
}

// Add sums two counts.
func (c RunCounts) Add(o RunCounts) RunCounts {
	return RunCounts{
		Created:     c.Created + o.Created,
		Deleted:     c.Deleted + o.Deleted,
		Replaced:    c.Replaced + o.Replaced,
		FailedNodes: c.FailedNodes + o.FailedNodes,
		FailedCalls: c.FailedCalls + o.FailedCalls,
	}
}

// IsZero reports whether the run did nothing and nothing failed.
func (c RunCounts) IsZero() bool { return c == RunCounts{} }

// String is the counts as every text output says them: "514 created, 0
// deleted, 0 failed nodes (62 re-placed after a pool ran out, 31 failed
// cloud calls)", the parenthesis only for what happened.
func (c RunCounts) String() string {
	s := fmt.Sprintf("%d created, %d deleted, %d failed %s", c.Created, c.Deleted, c.FailedNodes, plural(c.FailedNodes, "node", "nodes"))
	var notes []string
	if c.Replaced > 0 {
		notes = append(notes, fmt.Sprintf("%d re-placed after a pool ran out", c.Replaced))
	}
	if c.FailedCalls > 0 {
		notes = append(notes, fmt.Sprintf("%d failed cloud %s", c.FailedCalls, plural(c.FailedCalls, "call", "calls")))
	}
	for i, n := range notes {
		if i == 0 {
			s += " (" + n
		} else {
			s += ", " + n
		}
	}
	if len(notes) > 0 {
		s += ")"
	}
	return s
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
