// SPDX-License-Identifier: Apache-2.0

// Package render is where gpufleet's reports become text, Markdown and
// JSON: plans and pull-request reviews, STATUS.md, and what a run prints.
// The planner and the run produce values; only this package decides how
// they read, with one money formatter (catalog.Money) and one node cost
// (planner.Placement.Cost) throughout.
package render
