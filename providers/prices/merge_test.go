// SPDX-License-Identifier: Apache-2.0

package prices

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/schema/catalog"
)

func TestMerge(t *testing.T) {
	snapshot := catalog.Default()
	fresh, _, _ := loadAzureFixtures(t) // eastus only
	// Refreshed after the snapshot was taken, whenever the fixtures were
	// recorded: the snapshot is then the oldest part.
	fresh.FetchedAt = snapshot.FetchedAt.Add(24 * time.Hour)

	merged, err := Merge(snapshot, fresh)
	if err != nil {
		t.Fatal(err)
	}
	if err := merged.Validate(); err != nil {
		t.Fatalf("merged catalog is invalid: %v", err)
	}
	if merged.Source != "snapshot+azure" {
		t.Errorf("source %q", merged.Source)
	}
	// As old as its oldest part: the snapshot's offers are still in it.
	if !merged.FetchedAt.Equal(snapshot.FetchedAt) {
		t.Errorf("fetched %s, want the snapshot's %s", merged.FetchedAt, snapshot.FetchedAt)
	}

	count := func(c *catalog.Catalog, keep func(catalog.Offer) bool) int {
		n := 0
		for _, o := range c.Offers {
			if keep(o) {
				n++
			}
		}
		return n
	}
	eastus := func(o catalog.Offer) bool { return o.Cloud == catalog.Azure && o.Region == "eastus" }
	otherAzure := func(o catalog.Offer) bool { return o.Cloud == catalog.Azure && o.Region != "eastus" }
	others := func(o catalog.Offer) bool { return o.Cloud != catalog.Azure }
	if got, want := count(merged, eastus), len(fresh.Offers); got != want {
		t.Errorf("%d eastus offers, want the fresh %d", got, want)
	}
	if got, want := count(merged, otherAzure), count(snapshot, otherAzure); got != want {
		t.Errorf("%d other Azure offers, want the snapshot's %d", got, want)
	}
	if got, want := count(merged, others), count(snapshot, others); got != want {
		t.Errorf("%d AWS and GCP offers, want the snapshot's %d", got, want)
	}
	for _, o := range merged.Offers {
		if eastus(o) && o.InstanceType == "Standard_ND96isr_H100_v5" && o.PriceMicros != 98_320_000 {
			t.Errorf("eastus ND96isr_H100_v5 at %d, want the fresh price", o.PriceMicros)
		}
	}
	if len(merged.Regions) != len(snapshot.Regions) || len(merged.Egress) != len(snapshot.Egress) {
		t.Errorf("%d regions and %d egress entries, want the snapshot's %d and %d", len(merged.Regions), len(merged.Egress), len(snapshot.Regions), len(snapshot.Egress))
	}

	// Merging again is idempotent but for the source, which already has it.
	again, err := Merge(merged, fresh)
	if err != nil {
		t.Fatal(err)
	}
	var a, b bytes.Buffer
	merged.Write(&a)
	again.Write(&b)
	if a.String() != b.String() {
		t.Error("merging the same prices twice changed the catalog")
	}

	// The inputs are untouched.
	if snapshot.Source != "snapshot" || len(snapshot.Offers) != len(catalog.Default().Offers) {
		t.Error("Merge changed its input")
	}

	// A combined catalog is not one cloud's prices.
	if _, err := Merge(snapshot, merged); err == nil {
		t.Error("merging a multi-cloud catalog as one cloud's succeeded")
	}
}

func TestJoinSources(t *testing.T) {
	tests := []struct {
		sources []string
		want    string
	}{
		{[]string{"snapshot", "gcp"}, "snapshot+gcp"},
		{[]string{"snapshot+gcp", "aws"}, "snapshot+aws+gcp"},
		{[]string{"aws", "aws"}, "aws"},
		{[]string{"", "azure"}, "azure"},
		{[]string{"custom+snapshot", "aws"}, "snapshot+aws+custom"},
	}
	for _, tt := range tests {
		if got := joinSources(tt.sources...); got != tt.want {
			t.Errorf("joinSources(%q) = %q, want %q", tt.sources, got, tt.want)
		}
	}
}

// Refreshing every region of every cloud a loader reads replaces all of
// the snapshot but OCI's offers, which no loader reads: the result keeps
// the snapshot's age for them, and the refreshed clouds' prices are as
// old as the refresh.
func TestMergeReplacingEverything(t *testing.T) {
	emu := startEmulator(t)
	// A refresh after the snapshot was taken.
	refreshed := catalog.Default().FetchedAt.Add(24 * time.Hour)
	var fresh []*catalog.Catalog
	for _, l := range loaders(t, emu, Options{Retry: Retry{Max: -1}, Now: func() time.Time { return refreshed }}, nil) {
		c, err := l.Load(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		fresh = append(fresh, c)
	}
	merged, err := Merge(catalog.Default(), fresh...)
	if err != nil {
		t.Fatal(err)
	}
	if snapshot := catalog.Default().FetchedAt; merged.Source != "snapshot+aws+azure+gcp+lambda" || !merged.FetchedAt.Equal(snapshot) {
		t.Errorf("source %q fetched %s, want snapshot+aws+azure+gcp+lambda at %s", merged.Source, merged.FetchedAt, snapshot)
	}
	if at := merged.PricedAt(Clouds...); !at.Equal(refreshed) {
		t.Errorf("the refreshed clouds' prices are of %s, want %s", at, refreshed)
	}
	for _, o := range merged.Offers {
		if !slices.Contains(Clouds, o.Cloud) && o.Cloud != catalog.OCI {
			t.Errorf("offer of %s kept from the snapshot", o.Cloud)
		}
		if o.Cloud == catalog.OCI && o.Source != "public-oci" {
			t.Errorf("OCI offer %s %s of source %s, want the snapshot's", o.Region, o.InstanceType, o.Source)
		}
	}
	if err := merged.Validate(); err != nil {
		t.Error(err)
	}
	// One cloud at a time over the snapshot keeps the snapshot's age.
	partial, err := Merge(catalog.Default(), fresh[0])
	if err != nil {
		t.Fatal(err)
	}
	if partial.Source != "snapshot+aws" || !partial.FetchedAt.Equal(catalog.Default().FetchedAt) {
		t.Errorf("source %q fetched %s", partial.Source, partial.FetchedAt)
	}
	if _, err := Merge(catalog.Default(), fresh[0], fresh[0]); err == nil {
		t.Error("two catalogs of one cloud merged")
	}
}

func TestFreshest(t *testing.T) {
	dir := t.TempDir()
	snapshot := catalog.Default()
	write := func(name string, c *catalog.Catalog) string {
		var buf bytes.Buffer
		if err := c.Write(&buf); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	newer := catalog.Default()
	newer.Source, newer.FetchedAt = "snapshot+aws", snapshot.FetchedAt.Add(48*time.Hour)
	older := catalog.Default()
	older.FetchedAt = snapshot.FetchedAt.Add(-time.Hour)
	same := catalog.Default()
	same.Source = "snapshot+azure"

	tests := []struct {
		name, path, wantSource string
		wantErr                bool
	}{
		{"missing file: the snapshot", filepath.Join(dir, "none.json"), "snapshot", false},
		{"newer file: the file", write("newer.json", newer), "snapshot+aws", false},
		{"file refreshed over this snapshot: the file", write("same.json", same), "snapshot+azure", false},
		{"file older than the snapshot: the snapshot", write("older.json", older), "snapshot", false},
		{"corrupt file: an error", func() string {
			p := filepath.Join(dir, "corrupt.json")
			os.WriteFile(p, []byte(`{"source": "aws", "fetchedAt": `), 0o644)
			return p
		}(), "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Freshest(tt.path)
			if tt.wantErr {
				if err == nil {
					t.Errorf("got %q, want an error", got.Source)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Source != tt.wantSource {
				t.Errorf("source %q, want %q", got.Source, tt.wantSource)
			}
		})
	}
}

func TestUnknownRegionIsAnError(t *testing.T) {
	_, err := NewAzure(Options{Regions: []string{"eastsu"}})
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("did you mean eastus")) {
		t.Errorf("error %v, want a suggestion", err)
	}
	if _, err := NewGCP(GCPOptions{APIKey: ""}); err == nil && os.Getenv(GCPAPIKeyEnv) == "" {
		t.Error("a GCP loader without a key was built")
	}
}

func TestNextPageLinkStaysOnTheAPI(t *testing.T) {
	a, err := NewAzure(Options{Regions: []string{"eastus"}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		link string
		ok   bool
	}{
		{"https://prices.azure.com:443/api/retail/prices?$skip=100", true},
		{"https://prices.azure.com/api/retail/prices?$skip=100", true},
		{"https://evil.example/api/retail/prices?$skip=100", false},
		{"http://prices.azure.com/api/retail/prices?$skip=100", false},
		{"https://prices.azure.com:8443/api/retail/prices", false},
	}
	for _, tt := range tests {
		if _, err := a.nextPage(tt.link); (err == nil) != tt.ok {
			t.Errorf("nextPage(%q): error %v, want ok %t", tt.link, err, tt.ok)
		}
	}
}

// Every refreshed offer names its source, the cloud's price API with the
// time it was read, and the merged catalog keeps the sources its offers
// name, from the snapshot and the refresh alike, so it validates.
func TestOffersNameTheirSource(t *testing.T) {
	emu := startEmulator(t)
	at := time.Date(2026, 11, 5, 6, 0, 0, 0, time.UTC)
	var fresh []*catalog.Catalog
	for _, l := range loaders(t, emu, Options{Retry: Retry{Max: -1}, Now: func() time.Time { return at }}, map[string][]string{catalog.AWS: {"us-east-1"}, catalog.Azure: {"eastus"}, catalog.GCP: {"us-central1"}, catalog.Lambda: {"us-east-1"}}) {
		c, err := l.Load(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		want := catalog.Source{ID: l.Cloud() + "@2026-11-05T06:00:00Z", Date: at}
		if len(c.Sources) != 1 || c.Sources[0].ID != want.ID || !c.Sources[0].Date.Equal(at) || c.Sources[0].What == "" {
			t.Errorf("%s sources %+v, want one %+v", l.Cloud(), c.Sources, want)
		}
		for _, o := range c.Offers {
			if o.Source != want.ID || o.Derived {
				t.Fatalf("%s offer %+v does not name %s as a quote", l.Cloud(), o, want.ID)
			}
		}
		fresh = append(fresh, c)
	}
	// The existing catalog's offers name a source of their own.
	existing := catalog.Default()
	existing.Sources = append(existing.Sources, catalog.Source{ID: "recorded", What: "a recorded answer", Date: existing.FetchedAt})
	for i := range existing.Offers {
		existing.Offers[i].Source = "recorded"
	}
	merged, err := Merge(existing, fresh...)
	if err != nil {
		t.Fatal(err)
	}
	if err := merged.Validate(); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range merged.Sources {
		ids = append(ids, s.ID)
	}
	diffStrings(t, "sources", ids, []string{"aws@2026-11-05T06:00:00Z", "azure@2026-11-05T06:00:00Z", "gcp@2026-11-05T06:00:00Z", "lambda@2026-11-05T06:00:00Z", "recorded"})
}
