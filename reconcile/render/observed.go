// SPDX-License-Identifier: Apache-2.0

package render

import (
	"fmt"
	"time"

	"github.com/gpufleet/gpufleet/planner"
)

// observedLine says how old a plan's view of what runs is, when it was
// read from the committed status rather than the clouds; "" otherwise.
func observedLine(r *planner.Report) string {
	o := r.Observed
	if o == nil {
		return ""
	}
	where := o.ObservedAt.UTC().Format(driftTime)
	if o.Commit != "" {
		where += ", commit " + o.Commit[:min(len(o.Commit), 7)]
	}
	return fmt.Sprintf("Observed state: status committed %s (%s); run `gpufleet drift` to compare with the clouds", ago(time.Duration(o.AgeSeconds)*time.Second), where)
}

// ago is an age as people say it: the largest whole unit.
func ago(d time.Duration) string {
	switch {
	case d < time.Minute:
		return "less than a minute ago"
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d/time.Hour))
	}
	return fmt.Sprintf("%dd ago", int(d/(24*time.Hour)))
}
