// SPDX-License-Identifier: Apache-2.0

package render

import (
	"fmt"
	"strings"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// quotaLines says, for each full quota, how full it is and what raising it
// would buy: the increase to request, as a line of text.
func quotaLines(p *planner.Plan) []string {
	var lines []string
	for _, q := range p.Quotas {
		if !q.Full {
			continue
		}
		where := "in " + q.Region
		if q.Region == "" {
			where = "across all regions of " + q.Cloud
		}
		name := q.Name
		if q.Description != "" {
			name += " (" + q.Description + ")"
		}
		line := fmt.Sprintf("%s %s is full: the plan uses %d of its %d %s", name, where, q.Planned, q.Limit, q.Unit)
		if q.Used != planner.UsedUnknown && q.Used > 0 {
			line += fmt.Sprintf(" (%d in use now)", q.Used)
		}
		line += "."
		if r := q.Raise; r != nil {
			var gains []string
			if r.ExtraNodes > 0 {
				gains = append(gains, fmt.Sprintf("place %d more nodes", r.ExtraNodes))
			}
			if r.SavingMicros > 0 {
				gains = append(gains, "save "+catalog.Money(r.SavingMicros)+"/h")
			} else if r.SavingMicros < 0 {
				gains = append(gains, "cost "+catalog.Money(-r.SavingMicros)+"/h more")
			}
			line += fmt.Sprintf(" Raising it to %d %s would %s (%s).", r.To, q.Unit, strings.Join(gains, " and "), strings.Join(r.Workloads, ", "))
		}
		lines = append(lines, line)
	}
	return lines
}
