// SPDX-License-Identifier: Apache-2.0

// Package mcf finds a minimum-cost flow that sends an exact demand from one
// node to another through a graph of capacitated, integer-cost arcs. It is
// the optimiser under the planner: placements become arcs, and the flow on
// each arc says how many nodes to put there. Results are integral and depend
// only on the graph, the order it was built in, the Solves before on the
// same Graph (a Solve after only costs changed starts from the last flow)
// and the flow SolveFrom is told to start from.
package mcf
