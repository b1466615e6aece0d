// SPDX-License-Identifier: Apache-2.0

// Package planner decides where every GPU node of every fleet should run.
// It is a pure function of the fleets, the offers and what already runs: no
// context, clock, network or logging, so the same inputs always give the
// same plan, byte for byte.
//
// The objective is lexicographic. First, place the most nodes, highest
// priority first: a plan placing more nodes of priority p beats every plan
// placing fewer of p with the same counts above p. Only then, the lowest
// cost per hour of placing exactly those nodes (price, spot premium,
// egress, reservation refunds, keep bonus). Every part of the solver holds
// it exactly, with no penalty that is merely usually big enough: the flow
// is solved in two phases (solve.go), budgets are met by a search over
// counts in that order (budget.go), and gangs by branch and bound whose
// bounds and solutions compare as such objectives (search.go).
//
// The network is kept small where workloads share offers (hub.go), and a
// solve may start from the last plan's placements (start.go); neither
// changes what a plan is worth.
//
// A plan is marked optimal only when that is proven; otherwise it carries
// the gap between it and the best bound. The flow itself is package mcf.
package planner
