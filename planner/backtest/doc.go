// SPDX-License-Identifier: Apache-2.0

// Package backtest replays the reconcile loop against recorded prices: at
// each step the planner plans with the prices of then, the diff applies with
// the repository's rules, spot nodes are preempted by a seeded model, and
// what runs is charged. It answers "had this policy run for the last 30
// days, what would it have cost", for the repository as it is and for
// variants of its defaults, side by side. Like the planner it is pure: no
// clock, network or logging.
package backtest
