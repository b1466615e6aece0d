// Package planner decides where every GPU node of every fleet should run.
// It is a pure function of the fleets, the offers and what already runs: no
// context, clock, network or logging, so the same inputs always give the
// same plan, byte for byte.
package planner
