// Package mcf finds a minimum-cost flow that sends an exact demand from one
// node to another through a graph of capacitated, integer-cost arcs. It is
// the optimiser under the planner: placements become arcs, and the flow on
// each arc says how many nodes to put there. Results are integral and depend
// only on the graph and the order it was built in.
package mcf
