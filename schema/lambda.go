// SPDX-License-Identifier: Apache-2.0

package schema

import (
	"slices"

	"github.com/gpufleet/gpufleet/schema/catalog"
)

// Lambda Cloud has no tags: a node's name carries its fleet, workload and
// create token, "gf.<fleet>.<workload>.<24 hex digits>-<slot>" (the
// provider's NodeName), and Lambda takes names of at most 64 characters.
const (
	// MaxLambdaName is the longest instance name Lambda Cloud takes.
	MaxLambdaName = 64
	// lambdaNameFixed is what a node name holds beside the fleet's and
	// workload's names and the slot: "gf.", two dots, the token's 24 hex
	// digits and its dash.
	lambdaNameFixed = len("gf.") + 2 + 24 + 1
	// LambdaSlotDigits is how many digits of slot a workload's names are
	// checked with: a workload's nodes are numbered from 0 and new ones
	// take the next numbers, and 100,000 of them is room for every
	// replacement a workload of at most 10,000 nodes will see.
	LambdaSlotDigits = 5
)

// LambdaNameLength is the length of the longest node name a workload of a
// fleet gets on Lambda Cloud.
func LambdaNameLength(fleet, workload string) int {
	return lambdaNameFixed + len(fleet) + len(workload) + LambdaSlotDigits
}

// checkLambdaName refuses a workload that may run on Lambda Cloud when its
// nodes' names would not fit there.
func (l *loader) checkLambdaName(fleet string, w *Workload, base string) {
	if !slices.Contains(w.Placement.Clouds, catalog.Lambda) {
		return
	}
	if n := LambdaNameLength(fleet, w.Name); n > MaxLambdaName {
		over := n - MaxLambdaName
		l.errs.add(w.Pos, base, "fleet %q and workload %q make Lambda Cloud node names of up to %d characters, %d over the %d Lambda takes: shorten the two names by %d together, or leave lambda out of placement.clouds",
			fleet, w.Name, n, over, MaxLambdaName, over)
	}
}
