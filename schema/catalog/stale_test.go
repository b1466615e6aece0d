// SPDX-License-Identifier: Apache-2.0

package catalog

import (
	"testing"
	"time"
)

// One wording for stale prices, naming the rule and the date, the same
// however much older they grow; nothing while they are fresh enough.
func TestStaleness(t *testing.T) {
	c := &Catalog{Source: "snapshot+azure", FetchedAt: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)}
	for _, tt := range []struct {
		name   string
		now    time.Time
		maxAge time.Duration
		want   string
	}{
		{"fresh", c.FetchedAt.Add(MaxPriceAge), MaxPriceAge, ""},
		{"a second too old", c.FetchedAt.Add(MaxPriceAge + time.Second), MaxPriceAge,
			"the prices are older than 14 days (snapshot+azure of 2026-11-01); refresh them with gpufleet catalog refresh"},
		{"a month on, the same words", c.FetchedAt.Add(45 * 24 * time.Hour), MaxPriceAge,
			"the prices are older than 14 days (snapshot+azure of 2026-11-01); refresh them with gpufleet catalog refresh"},
		{"a limit in hours", c.FetchedAt.Add(13 * time.Hour), 12 * time.Hour,
			"the prices are older than 12h0m0s (snapshot+azure of 2026-11-01); refresh them with gpufleet catalog refresh"},
		{"a clock behind the prices", c.FetchedAt.Add(-time.Hour), MaxPriceAge, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := c.Staleness(tt.now, tt.maxAge); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
