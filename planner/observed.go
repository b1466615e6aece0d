// SPDX-License-Identifier: Apache-2.0

package planner

import "time"

// ObservedState says where a plan made without the clouds took what runs
// from, and how old that was: a pull request's plan reads the status the
// last run committed, which the clouds may have moved on from since.
type ObservedState struct {
	// Source is "status" for the committed status files.
	Source string `json:"source"`
	// ObservedAt is when the run that wrote the status listed the clouds;
	// of several fleets', the oldest.
	ObservedAt time.Time `json:"observedAt"`
	// Commit is the commit that last wrote the status, "" when unknown.
	Commit string `json:"commit,omitempty"`
	// AgeSeconds is how old the observation was when the plan was made.
	AgeSeconds int64 `json:"ageSeconds"`
}
