// SPDX-License-Identifier: Apache-2.0

package catalog

import (
	"fmt"
	"time"
)

// MaxPriceAge is how old a catalog's prices may be before every output
// that plans with them — plans, pull-request comments, a reconcile's
// summary, the status files, the demo — says they are stale. Clouds move
// prices a few times a month at most; two weeks is old enough to matter
// and rare enough not to be noise.
const MaxPriceAge = 14 * 24 * time.Hour

// Staleness is what every output that plans says when the catalog's
// prices are older than maxAge at now, "" when they are not. It names the
// rule and the prices' date rather than their age, so a status file that
// says it stays the same from one day to the next.
func (c *Catalog) Staleness(now time.Time, maxAge time.Duration) string {
	if c.Age(now) <= maxAge {
		return ""
	}
	limit := maxAge.String()
	if maxAge%(24*time.Hour) == 0 {
		limit = fmt.Sprintf("%d days", maxAge/(24*time.Hour))
	}
	return fmt.Sprintf("the prices are older than %s (%s of %s); refresh them with gpufleet catalog refresh", limit, c.Source, c.FetchedAt.UTC().Format(time.DateOnly))
}
