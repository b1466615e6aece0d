// SPDX-License-Identifier: Apache-2.0

package catalog

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"sync"
	"time"
)

//go:generate go run gen_snapshot.go

//go:embed snapshot.json
var snapshotJSON []byte

// snapshot parses the embedded catalog on first use rather than at init, so
// that gen_snapshot.go can still build this package while snapshot.json is
// being rewritten.
var snapshot = sync.OnceValues(func() (*Catalog, error) {
	return Read(bytes.NewReader(snapshotJSON))
})

// Default returns the catalog embedded at build time. Each call returns a
// fresh copy, so a caller may filter or reprice it without affecting others.
func Default() *Catalog {
	c, err := snapshot()
	if err != nil {
		// The snapshot is generated and tested with the package; failing
		// here means the build itself is broken.
		panic(fmt.Sprintf("catalog: embedded snapshot, %v", err))
	}
	return c.clone()
}

// SnapshotFetchedAt is when the prices of the embedded catalog were
// fetched, read from the start of the snapshot without parsing the rest:
// `gpufleet version` says it, and every command has a --version flag,
// which must not cost a parse of the whole catalog.
func SnapshotFetchedAt() time.Time {
	t, err := fetchedAt(snapshotJSON)
	if err != nil {
		panic(fmt.Sprintf("catalog: embedded snapshot, %v", err))
	}
	return t
}

// fetchedAt is the top-level fetchedAt of a catalog in the format Write
// produces, skipping whatever comes before it.
func fetchedAt(data []byte) (time.Time, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return time.Time{}, fmt.Errorf("reading catalog, not an object (%v)", err)
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return time.Time{}, fmt.Errorf("reading catalog, %w", err)
		}
		if key == "fetchedAt" {
			var t time.Time
			if err := dec.Decode(&t); err != nil {
				return time.Time{}, fmt.Errorf("reading catalog's fetchedAt, %w", err)
			}
			return t, nil
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return time.Time{}, fmt.Errorf("reading catalog, %w", err)
		}
	}
	return time.Time{}, errors.New("reading catalog, no fetchedAt")
}

// Read parses a catalog in the format Write produces. It does not validate:
// the planner tolerates imperfect catalogs, and callers that do not can call
// Validate.
func Read(r io.Reader) (*Catalog, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("reading catalog, %w", err)
	}
	// A misspelt field would otherwise decode as zero, and a zero price is a
	// legal "unknown" that the planner silently skips: decodeCatalog
	// refuses fields it does not know.
	c, err := decodeCatalog(data)
	if err != nil {
		return nil, fmt.Errorf("reading catalog, %w", err)
	}
	return c, nil
}

// Write encodes the catalog as indented JSON, in the order its slices hold.
func (c *Catalog) Write(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(c); err != nil {
		return fmt.Errorf("writing catalog, %w", err)
	}
	return nil
}

// Validate reports every structural problem in the catalog at once, joined
// into one error, or nil. Prices are not checked: an unknown or placeholder
// price is something real price lists contain, and the planner skips such
// offers with a reason rather than refusing the catalog.
func (c *Catalog) Validate() error {
	var problems []error
	report := func(format string, args ...any) {
		problems = append(problems, fmt.Errorf(format, args...))
	}

	sources := make(map[string]bool)
	for i, s := range c.Sources {
		if s.ID == "" || sources[s.ID] {
			report("sources[%d]: id %q is empty or listed twice", i, s.ID)
		}
		sources[s.ID] = true
	}
	type regionKey struct{ cloud, name string }
	zonesOf := make(map[regionKey][]string)
	for i, r := range c.Regions {
		where := fmt.Sprintf("regions[%d] (%s %s)", i, r.Cloud, r.Name)
		if !slices.Contains(Clouds, r.Cloud) {
			report("%s: unknown cloud %q", where, r.Cloud)
		}
		if len(r.ZoneIDs) > 0 && len(r.ZoneIDs) != len(r.Zones) {
			report("%s: %d zone ids for %d zones", where, len(r.ZoneIDs), len(r.Zones))
		}
		key := regionKey{r.Cloud, r.Name}
		if _, ok := zonesOf[key]; ok {
			report("%s: region listed twice", where)
		}
		zonesOf[key] = r.Zones
	}

	type offerKey struct {
		cloud, region, zone, instanceType string
		market                            Market
	}
	firstAt := make(map[offerKey]int)
	models := Models()
	for i, o := range c.Offers {
		where := fmt.Sprintf("offers[%d] (%s)", i, describeOffer(o))
		if !slices.Contains(Clouds, o.Cloud) {
			report("%s: unknown cloud %q", where, o.Cloud)
		}
		if o.Market != OnDemand && o.Market != Spot {
			report("%s: unknown market %q", where, o.Market)
		}
		zones, listed := zonesOf[regionKey{o.Cloud, o.Region}]
		switch {
		case !listed:
			report("%s: region %s %s is not listed", where, o.Cloud, o.Region)
		case o.Zone != "" && !slices.Contains(zones, o.Zone):
			report("%s: zone %q is not in region %s", where, o.Zone, o.Region)
		}
		if !slices.Contains(models, o.GPUModel) {
			if model, ok := NormalizeGPU(o.GPUModel); ok {
				report("%s: GPU model %q is not normalised, want %q", where, o.GPUModel, model)
			} else {
				report("%s: unknown GPU model %q", where, o.GPUModel)
			}
		}
		if o.GPUs <= 0 {
			report("%s: %d GPUs, want at least 1", where, o.GPUs)
		}
		if o.Source != "" && !sources[o.Source] {
			report("%s: source %q is not among the catalog's sources", where, o.Source)
		}
		key := offerKey{o.Cloud, o.Region, o.Zone, o.InstanceType, o.Market}
		if first, ok := firstAt[key]; ok {
			report("%s: duplicates offers[%d]", where, first)
		} else {
			firstAt[key] = i
		}
	}

	egressSeen := make(map[string]bool)
	for i, e := range c.Egress {
		where := fmt.Sprintf("egress[%d] (%s)", i, e.Cloud)
		if !slices.Contains(Clouds, e.Cloud) {
			report("%s: unknown cloud %q", where, e.Cloud)
		}
		if egressSeen[e.Cloud] {
			report("%s: cloud listed twice", where)
		}
		egressSeen[e.Cloud] = true
	}

	quotaSeen := make(map[[2]string]bool)
	for i, q := range c.Quotas {
		where := fmt.Sprintf("quotas[%d] (%s %s)", i, q.Cloud, q.Name)
		switch {
		case !slices.Contains(Clouds, q.Cloud):
			report("%s: unknown cloud %q", where, q.Cloud)
		case q.Name == "":
			report("%s: no name", where)
		case q.Scope != RegionScope && q.Scope != GlobalScope:
			report("%s: scope %q, want %q or %q", where, q.Scope, RegionScope, GlobalScope)
		case q.Unit != VCPUs && q.Unit != GPUs:
			report("%s: unit %q, want %q or %q", where, q.Unit, VCPUs, GPUs)
		case quotaSeen[[2]string{q.Cloud, q.Name}]:
			report("%s: listed twice", where)
		}
		quotaSeen[[2]string{q.Cloud, q.Name}] = true
	}
	for i, u := range c.QuotaUses {
		where := fmt.Sprintf("quotaUses[%d] (%s %s %s)", i, u.Cloud, u.InstanceType, u.Market)
		switch {
		case !quotaSeen[[2]string{u.Cloud, u.Quota}]:
			report("%s: quota %q is not among the catalog's quotas", where, u.Quota)
		case u.Per <= 0:
			report("%s: counts %d against %s, want a positive count", where, u.Per, u.Quota)
		case u.Market != OnDemand && u.Market != Spot:
			report("%s: unknown market %q", where, u.Market)
		}
	}
	return errors.Join(problems...)
}

// describeOffer names an offer the way an operator would look it up.
func describeOffer(o Offer) string {
	parts := []string{o.Cloud, o.Region}
	if o.Zone != "" {
		parts = append(parts, o.Zone)
	}
	parts = append(parts, o.InstanceType, string(o.Market))
	return strings.Join(parts, " ")
}

// Region returns the named region of a cloud.
func (c *Catalog) Region(cloud, name string) (Region, bool) {
	for _, r := range c.Regions {
		if r.Cloud == cloud && r.Name == name {
			return r.clone(), true
		}
	}
	return Region{}, false
}

// RegionsOf returns the regions of one cloud sorted by name.
func (c *Catalog) RegionsOf(cloud string) []Region {
	var regions []Region
	for _, r := range c.Regions {
		if r.Cloud == cloud {
			regions = append(regions, r.clone())
		}
	}
	slices.SortFunc(regions, func(a, b Region) int { return strings.Compare(a.Name, b.Name) })
	return regions
}

// Age is how old the prices are at now. A FetchedAt in the future, from
// clock skew between the fetching machine and this one, counts as fresh.
func (c *Catalog) Age(now time.Time) time.Duration {
	return max(0, now.Sub(c.FetchedAt))
}

// EgressOf returns the data-transfer prices for leaving cloud.
func (c *Catalog) EgressOf(cloud string) (Egress, bool) {
	for _, e := range c.Egress {
		if e.Cloud == cloud {
			return e, true
		}
	}
	return Egress{}, false
}

// Micros converts US dollars to micro-dollars, rounding to the nearest; the
// rounding absorbs binary floating point, so Micros(0.526) is exactly 526000.
func Micros(dollars float64) int64 {
	return int64(math.Round(dollars * 1e6))
}

// Money writes an amount for people, the one way gpufleet shows money in
// plans, reviews, statuses and logs: cents from a dollar up ("$92.98"),
// three decimals below, where GPU prices live ("$0.068", "$0.50").
func Money(m int64) string {
	sign := ""
	// Negating in uint64 keeps math.MinInt64 correct.
	abs := uint64(m)
	if m < 0 {
		sign, abs = "-", -abs
	}
	if abs >= 1_000_000 {
		cents := (abs + 5_000) / 10_000
		return fmt.Sprintf("%s$%d.%02d", sign, cents/100, cents%100)
	}
	mills := (abs + 500) / 1_000
	s := strings.TrimRight(fmt.Sprintf("%03d", mills), "0")
	if len(s) < 2 {
		s += strings.Repeat("0", 2-len(s))
	}
	if mills == 1_000 {
		return sign + "$1.00"
	}
	return sign + "$0." + s
}

// FormatMicros renders a price exactly, as dollars with cents, adding
// decimals only while they are non-zero: "$98.32", "$0.526", "$0.0591",
// "-$1.20". It is for price data, where a rounded price would hide the
// difference between two rows; money for people is Money.
func FormatMicros(m int64) string {
	sign := ""
	// Negating in uint64 keeps math.MinInt64, whose absolute value has no
	// int64, correct.
	abs := uint64(m)
	if m < 0 {
		sign = "-"
		abs = -abs
	}
	fraction := strings.TrimRight(fmt.Sprintf("%06d", abs%1e6), "0")
	if len(fraction) < 2 {
		fraction += strings.Repeat("0", 2-len(fraction))
	}
	return fmt.Sprintf("%s$%d.%s", sign, abs/1e6, fraction)
}

// clone returns a deep copy, sharing no slice with c.
func (c *Catalog) clone() *Catalog {
	dup := *c
	dup.Regions = nil
	if c.Regions != nil {
		dup.Regions = make([]Region, len(c.Regions))
		for i, r := range c.Regions {
			dup.Regions[i] = r.clone()
		}
	}
	dup.Offers = slices.Clone(c.Offers)
	dup.Sources = slices.Clone(c.Sources)
	dup.Egress = slices.Clone(c.Egress)
	dup.Quotas = slices.Clone(c.Quotas)
	dup.QuotaUses = slices.Clone(c.QuotaUses)
	return &dup
}

func (r Region) clone() Region {
	r.Zones = slices.Clone(r.Zones)
	r.ZoneIDs = slices.Clone(r.ZoneIDs)
	return r
}
