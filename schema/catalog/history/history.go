// SPDX-License-Identifier: Apache-2.0

package history

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/gpufleet/gpufleet/schema/atomicfile"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// FormatVersion is the version of the file format Write produces.
const FormatVersion = 1

// Kind names the file's contents, so that a price history is never read as
// another of gpufleet's JSON files.
const Kind = "price-history"

// History is, per offer, its price over time.
type History struct {
	// Series are sorted by offer key.
	Series []Series
}

// Series is one offer's price over time: each point's price holds from its
// time until the next point's. Points are sorted by time, and no point
// repeats the price of the one before it.
type Series struct {
	// Offer is the offer's key, as Key writes it.
	Offer  string
	Points []Point
}

// Point is a price taking effect.
type Point struct {
	At          time.Time
	PriceMicros int64
}

// Key names a catalog offer in a history: cloud/region/zone/type/market,
// with an empty zone for a regional price.
func Key(o catalog.Offer) string {
	return strings.Join([]string{o.Cloud, o.Region, o.Zone, o.InstanceType, string(o.Market)}, "/")
}

// file is the format on disk. Points are [unix seconds, price micros]
// pairs: a week of hourly spot prices for a few hundred offers stays small
// enough to commit.
type file struct {
	FormatVersion int          `json:"formatVersion"`
	Kind          string       `json:"kind"`
	Series        []fileSeries `json:"series"`
}

type fileSeries struct {
	Offer  string     `json:"offer"`
	Points [][2]int64 `json:"points"`
}

// Read parses a history in the format Write produces.
func Read(r io.Reader) (*History, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var f file
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("reading price history, %w", err)
	}
	if f.Kind != Kind {
		return nil, fmt.Errorf("reading price history, kind is %q, not %q", f.Kind, Kind)
	}
	if f.FormatVersion != FormatVersion {
		return nil, fmt.Errorf("reading price history, format version %d is not %d; a newer gpufleet wrote it", f.FormatVersion, FormatVersion)
	}
	h := &History{}
	for _, s := range f.Series {
		for _, p := range s.Points {
			h.Add(s.Offer, time.Unix(p[0], 0).UTC(), p[1])
		}
	}
	return h, nil
}

// Load reads a history file; a missing one is an empty history, so that the
// first refresh starts one.
func Load(name string) (*History, error) {
	data, err := os.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return &History{}, nil
	}
	if err != nil {
		return nil, err
	}
	h, err := Read(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%s%s: %w", name, lineOf(data, err), err)
	}
	return h, nil
}

// lineOf is ":LINE" of where in data a JSON error is, "" when it says no
// place.
func lineOf(data []byte, err error) string {
	var offset int64
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		offset = syntax.Offset
	case errors.As(err, &typ):
		offset = typ.Offset
	default:
		return ""
	}
	return fmt.Sprintf(":%d", 1+bytes.Count(data[:min(int(offset), len(data))], []byte("\n")))
}

// Write encodes the history with one offer a line, so that appending to it
// changes, in a diff, only the lines of offers whose price moved.
func (h *History) Write(w io.Writer) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "{\n  \"formatVersion\": %d,\n  \"kind\": %q,\n  \"series\": [", FormatVersion, Kind)
	for i, s := range h.Series {
		if i > 0 {
			bw.WriteString(",")
		}
		offer, _ := json.Marshal(s.Offer)
		fmt.Fprintf(bw, "\n    {\"offer\": %s, \"points\": [", offer)
		for j, p := range s.Points {
			if j > 0 {
				bw.WriteString(", ")
			}
			fmt.Fprintf(bw, "[%d, %d]", p.At.Unix(), p.PriceMicros)
		}
		bw.WriteString("]}")
	}
	if len(h.Series) > 0 {
		bw.WriteString("\n  ")
	}
	bw.WriteString("]\n}\n")
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("writing price history, %w", err)
	}
	return nil
}

// Save replaces the file name with the history in one step.
func (h *History) Save(name string) error {
	var buf bytes.Buffer
	if err := h.Write(&buf); err != nil {
		return err
	}
	if err := atomicfile.Write(name, buf.Bytes()); err != nil {
		return fmt.Errorf("writing %s, %w", name, err)
	}
	return nil
}

func (h *History) series(offer string) (int, bool) {
	return slices.BinarySearchFunc(h.Series, offer, func(s Series, k string) int { return strings.Compare(s.Offer, k) })
}

// Add records that an offer's price was price from at on. It reports
// whether the history changed: a price the offer already had then adds
// nothing, and an unknown price (zero or less) is not recorded. A point
// earlier than the last is merged into its place, so that an import of
// older prices keeps the series sorted.
func (h *History) Add(offer string, at time.Time, price int64) bool {
	if price <= 0 {
		return false
	}
	at = at.UTC().Truncate(time.Second)
	i, ok := h.series(offer)
	if !ok {
		h.Series = slices.Insert(h.Series, i, Series{Offer: offer, Points: []Point{{at, price}}})
		return true
	}
	s := &h.Series[i]
	j, found := slices.BinarySearchFunc(s.Points, at, func(p Point, t time.Time) int { return p.At.Compare(t) })
	switch {
	case found && s.Points[j].PriceMicros == price:
		return false
	case found:
		s.Points[j].PriceMicros = price
	case j > 0 && s.Points[j-1].PriceMicros == price:
		return false
	default:
		s.Points = slices.Insert(s.Points, j, Point{at, price})
	}
	// The point after may now repeat this one, and a changed point the
	// one before.
	if j+1 < len(s.Points) && s.Points[j+1].PriceMicros == price {
		s.Points = slices.Delete(s.Points, j+1, j+2)
	}
	if j > 0 && s.Points[j-1].PriceMicros == price {
		s.Points = slices.Delete(s.Points, j, j+1)
	}
	return true
}

// Record appends the catalog's prices as of at, and reports how many
// offers' prices changed.
func (h *History) Record(cat *catalog.Catalog, at time.Time) int {
	changed := 0
	for _, o := range cat.Offers {
		if h.Add(Key(o), at, o.PriceMicros) {
			changed++
		}
	}
	return changed
}

// PriceAt is an offer's price at a time: that of its last point at or
// before it. An offer with no point by then has no price in the history.
func (h *History) PriceAt(offer string, at time.Time) (int64, bool) {
	i, ok := h.series(offer)
	if !ok {
		return 0, false
	}
	return h.Series[i].priceAt(at)
}

func (s *Series) priceAt(at time.Time) (int64, bool) {
	j, found := slices.BinarySearchFunc(s.Points, at, func(p Point, t time.Time) int { return p.At.Compare(t) })
	if found {
		return s.Points[j].PriceMicros, true
	}
	if j == 0 {
		return 0, false
	}
	return s.Points[j-1].PriceMicros, true
}

// At returns a copy of base with each offer priced as the history says it
// was at a time. Offers the history knows nothing of by then keep base's
// price: a history that starts later than the catalog's offers, or covers
// only spot, still reprices what it has. An offer priced for its whole
// region takes, when the history has no series of its own but has its
// zones' (EC2 reports spot prices by zone), the mean of their prices then.
func (h *History) At(base *catalog.Catalog, at time.Time) *catalog.Catalog {
	out := *base
	out.Offers = slices.Clone(base.Offers)
	var zones map[string][]int
	for i := range out.Offers {
		o := &out.Offers[i]
		if p, ok := h.PriceAt(Key(*o), at); ok {
			o.PriceMicros = p
			continue
		}
		if o.Zone != "" {
			continue
		}
		if zones == nil {
			zones = h.byRegion()
		}
		var sum, n int64
		for _, si := range zones[regionKey(o.Cloud, o.Region, o.InstanceType, string(o.Market))] {
			if p, ok := h.Series[si].priceAt(at); ok {
				sum, n = sum+p, n+1
			}
		}
		if n > 0 {
			o.PriceMicros = (sum + n/2) / n
		}
	}
	out.FetchedAt = at
	return &out
}

// byRegion indexes the zone series by region, type and market.
func (h *History) byRegion() map[string][]int {
	out := map[string][]int{}
	for i, s := range h.Series {
		parts := strings.Split(s.Offer, "/")
		if len(parts) == 5 && parts[2] != "" {
			k := regionKey(parts[0], parts[1], parts[3], parts[4])
			out[k] = append(out[k], i)
		}
	}
	return out
}

func regionKey(cloud, region, instanceType, market string) string {
	return cloud + "/" + region + "/" + instanceType + "/" + market
}

// Changes returns, sorted and without repeats, every time in [from, to) at
// which some offer's price changes: between two of them, every price holds.
func (h *History) Changes(from, to time.Time) []time.Time {
	var out []time.Time
	for _, s := range h.Series {
		for _, p := range s.Points {
			if !p.At.Before(from) && p.At.Before(to) {
				out = append(out, p.At)
			}
		}
	}
	slices.SortFunc(out, time.Time.Compare)
	return slices.CompactFunc(out, time.Time.Equal)
}

// Span is the time of the first and the last point of the history; zero
// times for an empty one.
func (h *History) Span() (first, last time.Time) {
	for _, s := range h.Series {
		if len(s.Points) == 0 {
			continue
		}
		if a := s.Points[0].At; first.IsZero() || a.Before(first) {
			first = a
		}
		if b := s.Points[len(s.Points)-1].At; b.After(last) {
			last = b
		}
	}
	return first, last
}
