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

// A fleet's prices are as old as those of the clouds it may use: the
// offers of a cloud refreshed today are fresh beside another's kept from
// an old snapshot, and a source without a date is as old as the catalog.
func TestStalenessOfSomeClouds(t *testing.T) {
	old, fresh := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 12, 20, 0, 0, 0, 0, time.UTC)
	c := &Catalog{
		Source:    "snapshot+aws",
		FetchedAt: old,
		Sources:   []Source{{ID: "public-oci", Date: old}, {ID: "aws@2026-12-20T00:00:00Z", Date: fresh}},
		Offers: []Offer{
			{Cloud: AWS, Source: "aws@2026-12-20T00:00:00Z"},
			{Cloud: OCI, Source: "public-oci"},
			{Cloud: GCP, Source: "undated"},
		},
	}
	now := fresh.Add(24 * time.Hour)
	for _, tt := range []struct {
		clouds []string
		want   time.Time
		stale  bool
	}{
		{nil, old, true},
		{[]string{AWS}, fresh, false},
		{[]string{AWS, OCI}, old, true},
		{[]string{GCP}, old, true},
		{[]string{Azure}, old, true},
	} {
		if got := c.PricedAt(tt.clouds...); !got.Equal(tt.want) {
			t.Errorf("PricedAt(%v) = %s, want %s", tt.clouds, got, tt.want)
		}
		if got := c.Staleness(now, MaxPriceAge, tt.clouds...); (got != "") != tt.stale {
			t.Errorf("Staleness(%v) = %q, want stale %v", tt.clouds, got, tt.stale)
		}
	}
	if got, want := c.Staleness(now, MaxPriceAge, OCI), "the prices are older than 14 days (snapshot+aws of 2026-11-01); refresh them with gpufleet catalog refresh"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
