// SPDX-License-Identifier: Apache-2.0

package catalog

import (
	"fmt"
	"slices"
	"time"
)

// MaxPriceAge is how old a catalog's prices may be before every output
// that plans with them — plans, pull-request comments, a reconcile's
// summary, the status files, the demo — says they are stale. Clouds move
// prices a few times a month at most; two weeks is old enough to matter
// and rare enough not to be noise.
const MaxPriceAge = 14 * 24 * time.Hour

// Staleness is what every output that plans says when the prices of the
// clouds' offers are older than maxAge at now, "" when they are not; no
// clouds means every cloud's. It names the rule and the prices' date
// rather than their age, so a status file that says it stays the same
// from one day to the next. A fleet on clouds whose prices were
// refreshed is not told its prices are stale because another cloud's,
// kept from the snapshot, are.
func (c *Catalog) Staleness(now time.Time, maxAge time.Duration, clouds ...string) string {
	at := c.PricedAt(clouds...)
	if now.Sub(at) <= maxAge {
		return ""
	}
	limit := maxAge.String()
	if maxAge%(24*time.Hour) == 0 {
		limit = fmt.Sprintf("%d days", maxAge/(24*time.Hour))
	}
	return fmt.Sprintf("the prices are older than %s (%s of %s); refresh them with gpufleet catalog refresh", limit, c.Source, at.UTC().Format(time.DateOnly))
}

// PricedAt is when the prices of the clouds' offers were read: the
// earliest date of the sources those offers name, and FetchedAt for an
// offer whose source the catalog does not date. No clouds means every
// cloud, which is FetchedAt; clouds without offers are as old as the
// catalog.
func (c *Catalog) PricedAt(clouds ...string) time.Time {
	if len(clouds) == 0 {
		return c.FetchedAt
	}
	dated := make(map[string]time.Time, len(c.Sources))
	for _, s := range c.Sources {
		if !s.Date.IsZero() {
			dated[s.ID] = s.Date
		}
	}
	var at time.Time
	for _, o := range c.Offers {
		if !slices.Contains(clouds, o.Cloud) {
			continue
		}
		d, ok := dated[o.Source]
		if !ok {
			d = c.FetchedAt
		}
		if at.IsZero() || d.Before(at) {
			at = d
		}
	}
	if at.IsZero() {
		return c.FetchedAt
	}
	return at
}
