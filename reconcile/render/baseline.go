// SPDX-License-Identifier: Apache-2.0

package render

import (
	"fmt"

	"github.com/gpufleet/gpufleet/schema/catalog"
)

// baselinePlace is what every savings line measures against.
const baselinePlace = "the cheapest on-demand placement on one hyperscaler"

// versusBaseline says how an hourly cost compares with the baseline's:
// "$96.63/h (51%) less than", "$37.60/h more than", "the same as". A
// share is given only while it is at most the baseline itself: a baseline
// of a few micro-dollars against a real cost would read as millions of
// per cent, which says nothing a reader can use.
func versusBaseline(cost, baseline int64) string {
	switch delta := baseline - cost; {
	case delta > -500 && delta < 500:
		// Less than a tenth of a cent: nothing a reader can act on.
		return "the same as"
	case delta > 0:
		return fmt.Sprintf("%s/h (%s) less than", catalog.Money(delta), percent(delta, baseline))
	case delta < 0 && -delta <= baseline:
		return fmt.Sprintf("%s/h (%s) more than", catalog.Money(-delta), percent(-delta, baseline))
	case delta < 0:
		return fmt.Sprintf("%s/h more than", catalog.Money(-delta))
	}
	return "the same as"
}
