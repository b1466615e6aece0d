// SPDX-License-Identifier: Apache-2.0

// Package history keeps how catalog prices moved over time: per offer, the
// points at which its price changed. The file is compact and append-only,
// so a team can commit it next to its fleets and replay decisions against
// it (planner/backtest); catalog refresh and the AWS spot history import
// add to it.
package history
