// SPDX-License-Identifier: Apache-2.0

package planner

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

func TestTmpWriteLP(t *testing.T) {
	in := mixedGangs(3)
	ru := newRules(in)
	ru.fixOp = "="
	model := ru.lp(3, []int64{340, 284, 403})
	os.WriteFile("/tmp/agg.lp", []byte(wrapLP(model)), 0o644)
	// disaggregated: a_wi_j <= min(room, d) z_wi_ri
	var extra strings.Builder
	for wi, w := range ru.ws {
		if !w.spec.Gang() {
			continue
		}
		var regions []string
		for _, oi := range w.offers {
			o := ru.in.Offers[oi]
			found := false
			for _, r := range regions {
				if r == o.Region {
					found = true
				}
			}
			if !found {
				regions = append(regions, o.Region)
			}
		}
		for j, oi := range w.offers {
			o := ru.in.Offers[oi]
			ri := 0
			for i, r := range regions {
				if r == o.Region {
					ri = i
				}
			}
			room := w.spec.Nodes
			if o.Available != Unlimited {
				room = min(room, o.Available)
			}
			fmt.Fprintf(&extra, " dis%d_%d: a_%d_%d - %d z_%d_%d <= 0\n", wi, j, wi, j, room, wi, ri)
		}
	}
	dis := strings.Replace(model, "Bounds\n", extra.String()+"Bounds\n", 1)
	os.WriteFile("/tmp/dis.lp", []byte(wrapLP(dis)), 0o644)
}
