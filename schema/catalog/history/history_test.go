// SPDX-License-Identifier: Apache-2.0

package history

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/schema/catalog"
)

var t0 = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

func hour(n int) time.Time { return t0.Add(time.Duration(n) * time.Hour) }

func offer(typ string, market catalog.Market, price int64) catalog.Offer {
	return catalog.Offer{Cloud: "aws", Region: "us-east-1", InstanceType: typ, Market: market, PriceMicros: price}
}

func TestRecordAppendsOnlyWhatChanged(t *testing.T) {
	h := &History{}
	cat := &catalog.Catalog{Offers: []catalog.Offer{offer("g6.xlarge", catalog.OnDemand, 800_000), offer("g6.xlarge", catalog.Spot, 300_000)}}
	if n := h.Record(cat, hour(0)); n != 2 {
		t.Fatalf("first record changed %d offers, want 2", n)
	}
	if n := h.Record(cat, hour(1)); n != 0 {
		t.Fatalf("the same prices changed %d offers, want 0", n)
	}
	cat.Offers[1].PriceMicros = 250_000
	if n := h.Record(cat, hour(2)); n != 1 {
		t.Fatalf("one new spot price changed %d offers, want 1", n)
	}
	cat.Offers[0].PriceMicros = 0 // unknown: never recorded
	if n := h.Record(cat, hour(3)); n != 0 {
		t.Fatalf("an unknown price changed %d offers, want 0", n)
	}
	spot := Key(cat.Offers[1])
	if spot != "aws/us-east-1//g6.xlarge/spot" {
		t.Fatalf("key %q", spot)
	}
	for _, tc := range []struct {
		at   time.Time
		want int64
		ok   bool
	}{
		{hour(-1), 0, false},
		{hour(0), 300_000, true},
		{hour(1).Add(59 * time.Minute), 300_000, true},
		{hour(2), 250_000, true},
		{hour(100), 250_000, true},
	} {
		got, ok := h.PriceAt(spot, tc.at)
		if got != tc.want || ok != tc.ok {
			t.Errorf("PriceAt(%s) = %d, %v; want %d, %v", tc.at, got, ok, tc.want, tc.ok)
		}
	}
	if got := len(h.Series[1].Points); got != 2 {
		t.Errorf("spot series has %d points, want 2", got)
	}
}

func TestAddMergesOlderPointsInOrder(t *testing.T) {
	h := &History{}
	h.Add("k", hour(10), 5)
	h.Add("k", hour(2), 7)
	h.Add("k", hour(5), 7) // repeats the point before: nothing
	h.Add("k", hour(6), 5) // the point after repeats it: merged
	h.Add("k", hour(2), 7) // already there
	want := []Point{{hour(2), 7}, {hour(6), 5}}
	if got := h.Series[0].Points; !equal(got, want) {
		t.Fatalf("points %v, want %v", got, want)
	}
	h.Add("k", hour(6), 7) // now repeats the one before: gone
	if got := h.Series[0].Points; !equal(got, []Point{{hour(2), 7}}) {
		t.Fatalf("points %v", got)
	}
}

func equal(a, b []Point) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].At.Equal(b[i].At) || a[i].PriceMicros != b[i].PriceMicros {
			return false
		}
	}
	return true
}

func TestWriteReadRoundTripsAndSavesAtomically(t *testing.T) {
	h := &History{}
	h.Add("gcp/us-central1//g2-standard-4/on-demand", hour(0), 700_000)
	h.Add("aws/us-east-1//g6.xlarge/spot", hour(0), 300_000)
	h.Add("aws/us-east-1//g6.xlarge/spot", hour(3), 200_000)
	var buf bytes.Buffer
	if err := h.Write(&buf); err != nil {
		t.Fatal(err)
	}
	want := `{
  "formatVersion": 1,
  "kind": "price-history",
  "series": [
    {"offer": "aws/us-east-1//g6.xlarge/spot", "points": [[1793491200, 300000], [1793502000, 200000]]},
    {"offer": "gcp/us-central1//g2-standard-4/on-demand", "points": [[1793491200, 700000]]}
  ]
}
`
	if buf.String() != want {
		t.Fatalf("wrote\n%s\nwant\n%s", buf.String(), want)
	}
	name := filepath.Join(t.TempDir(), ".gpufleet", "price-history.json")
	if err := h.Save(name); err != nil {
		t.Fatal(err)
	}
	back, err := Load(name)
	if err != nil {
		t.Fatal(err)
	}
	var again bytes.Buffer
	back.Write(&again)
	if again.String() != want {
		t.Fatalf("round trip changed the file:\n%s", again.String())
	}
	entries, _ := os.ReadDir(filepath.Dir(name))
	if len(entries) != 1 {
		t.Errorf("left %d files behind, want only the history", len(entries))
	}
	empty, err := Load(filepath.Join(t.TempDir(), "missing.json"))
	if err != nil || len(empty.Series) != 0 {
		t.Fatalf("a missing file: %v, %v", empty, err)
	}
	var emptyOut bytes.Buffer
	empty.Write(&emptyOut)
	if _, err := Read(&emptyOut); err != nil {
		t.Fatalf("an empty history does not read back: %v", err)
	}
}

func TestReadRefusesOtherFiles(t *testing.T) {
	for _, tc := range []struct{ name, doc, want string }{
		{"kind", `{"formatVersion": 1, "kind": "catalog", "series": []}`, "kind"},
		{"version", `{"formatVersion": 2, "kind": "price-history", "series": []}`, "format version 2"},
		{"field", `{"formatVersion": 1, "kind": "price-history", "serie": []}`, "unknown field"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Read(strings.NewReader(tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one about %s", err, tc.want)
			}
		})
	}
}

func TestAtRepricesACopyAndChangesListsEpochs(t *testing.T) {
	base := &catalog.Catalog{Offers: []catalog.Offer{offer("g6.xlarge", catalog.Spot, 999), offer("p5.48xlarge", catalog.Spot, 123)}}
	h := &History{}
	h.Add(Key(base.Offers[0]), hour(0), 300)
	h.Add(Key(base.Offers[0]), hour(5), 200)
	cat := h.At(base, hour(6))
	if cat.Offers[0].PriceMicros != 200 || cat.Offers[1].PriceMicros != 123 {
		t.Fatalf("repriced %v", cat.Offers)
	}
	if base.Offers[0].PriceMicros != 999 {
		t.Fatal("At changed its base")
	}
	if got := h.Changes(hour(1), hour(10)); len(got) != 1 || !got[0].Equal(hour(5)) {
		t.Fatalf("changes %v", got)
	}
	if first, last := h.Span(); !first.Equal(hour(0)) || !last.Equal(hour(5)) {
		t.Fatalf("span %v %v", first, last)
	}
}

// EC2 reports spot prices by zone while a catalog may price a spot offer
// for its whole region: the regional offer then takes the mean of its
// zones' prices at the time, of the zones that have one; a regional
// series of its own, when there is one, wins.
func TestARegionalOfferTakesItsZonesMean(t *testing.T) {
	base := &catalog.Catalog{Offers: []catalog.Offer{
		offer("g4dn.xlarge", catalog.Spot, 500),
		offer("g6.xlarge", catalog.Spot, 900),
		{Cloud: "aws", Region: "us-west-2", InstanceType: "g4dn.xlarge", Market: catalog.Spot, PriceMicros: 700},
	}}
	h := &History{}
	h.Add("aws/us-east-1/us-east-1a/g4dn.xlarge/spot", hour(0), 100)
	h.Add("aws/us-east-1/us-east-1b/g4dn.xlarge/spot", hour(0), 201)
	h.Add("aws/us-east-1/us-east-1c/g4dn.xlarge/spot", hour(3), 999)
	h.Add("aws/us-east-1/us-east-1a/g6.xlarge/spot", hour(0), 400)
	h.Add(Key(base.Offers[1]), hour(0), 800)
	for _, tt := range []struct {
		at   time.Time
		want []int64
	}{
		{hour(1), []int64{151, 800, 700}}, // (100+201)/2 rounded; g6's own series; us-west-2 untouched
		{hour(4), []int64{433, 800, 700}}, // (100+201+999)/3 rounded
	} {
		cat := h.At(base, tt.at)
		for i, want := range tt.want {
			if got := cat.Offers[i].PriceMicros; got != want {
				t.Errorf("at %v, %s in %s: %d, want %d", tt.at, cat.Offers[i].InstanceType, cat.Offers[i].Region, got, want)
			}
		}
	}
}

// A history that does not parse is named with the line where it breaks.
func TestLoadNamesTheLineOfABrokenHistory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.json")
	os.WriteFile(path, []byte("{\"formatVersion\": 1, \"kind\": \"price-history\", \"series\": [\n{\"offer\": \"aws/us-east-1//g6.xlarge/spot\",\n \"points\": [[1, \"cheap\"]]}]}\n"), 0o644)
	_, err := Load(path)
	if err == nil || !strings.HasPrefix(err.Error(), path+":3: ") {
		t.Errorf("got %v, want it to name %s:3", err, path)
	}
}
