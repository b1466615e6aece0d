// SPDX-License-Identifier: Apache-2.0

package prices

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpufleet/gpufleet/schema/catalog"
)

// Clouds are the clouds whose prices a loader reads from the cloud, in
// catalog order. The others' (OCI's) are the embedded catalog's public
// prices, which a refresh keeps.
var Clouds = []string{catalog.AWS, catalog.Azure, catalog.GCP, catalog.Lambda}

// Loader reads one cloud's prices.
type Loader interface {
	// Cloud is the cloud whose prices Load reads: one of Clouds.
	Cloud() string
	// Load returns a catalog whose Source is the cloud, whose Regions are
	// the regions it found prices in, and whose offers are every GPU
	// instance type it could price there. It fails rather than return a
	// partial catalog: a region that could not be read is an error, so a
	// refresh never replaces good prices with a hole.
	Load(ctx context.Context) (*catalog.Catalog, error)
}

// Options tune a loader. The zero value reads the cloud's real price API
// for every region of the cloud in the embedded catalog.
type Options struct {
	// Regions limits the regions read; empty means every region Known
	// lists for the cloud. A region Known does not list is an error.
	Regions []string
	// Known is the catalog whose regions, zones and instance types the
	// loader prices; nil means catalog.Default(). Instance specs the price
	// rows do not carry come from its offers.
	Known *catalog.Catalog
	// Endpoint replaces the price API's base URL, to point the loader at
	// the emulator.
	Endpoint string
	// HTTPClient carries the requests; nil means a pooled client of its
	// own. The Azure and GCP loaders send through its transport only to
	// their endpoint's origin, each attempt bounded by Timeout.
	HTTPClient *http.Client
	// Timeout bounds one request to a price API, its answer read; zero
	// means DefaultTimeout.
	Timeout time.Duration
	// AllowHTTP lets the loaders call a plain http endpoint beyond
	// loopback (outbound.AllowHTTPEnv); the GCP loader's key would cross
	// the network in clear text.
	AllowHTTP bool
	// Retry bounds the retries of one request.
	Retry Retry
	// Now is the clock FetchedAt is read from; nil means time.Now.
	Now func() time.Time
	// Log receives retries and dropped rows at debug level; nil discards.
	Log *slog.Logger
	// OnDrop, when set, is told about every price row the loader refused,
	// with its reason.
	OnDrop func(Drop)
}

// Retry bounds how a request that was throttled (429) or failed on the
// server's side (5xx, or no answer) is retried: with exponential backoff
// from MinWait, doubling up to MaxWait, or after the server's Retry-After
// when it sends one.
type Retry struct {
	// Max is the number of retries after the first attempt. Zero means 4;
	// negative means none.
	Max int
	// MinWait is the first backoff. Zero means one second.
	MinWait time.Duration
	// MaxWait caps every backoff, a Retry-After included: a price refresh
	// is not worth waiting minutes per request. Zero means 30 seconds.
	MaxWait time.Duration
}

func (r Retry) withDefaults() Retry {
	switch {
	case r.Max == 0:
		r.Max = 4
	case r.Max < 0:
		r.Max = 0
	}
	if r.MinWait <= 0 {
		r.MinWait = time.Second
	}
	if r.MaxWait <= 0 {
		r.MaxWait = 30 * time.Second
	}
	r.MaxWait = max(r.MaxWait, r.MinWait)
	return r
}

// Reasons a price row is dropped.
const (
	// ReasonNoPrice: the row carries no price at all (an empty string, no
	// term, no tier).
	ReasonNoPrice = "no price"
	// ReasonPlaceholder: the price is zero or negative; price lists use
	// such values for rows that are not for sale.
	ReasonPlaceholder = "placeholder price"
	// ReasonBelowFloor: a positive price under minPrice a node-hour,
	// which no GPU instance costs: a placeholder or a unit mix-up.
	ReasonBelowFloor = "price below floor"
	// ReasonImplausible: more than maxPerGPUHour per GPU, which no
	// cloud charges; a typo or a unit mix-up in the source.
	ReasonImplausible = "implausible price"
	// ReasonMalformed: the row, or its price, cannot be read: JSON of the
	// wrong shape, a price that is not a decimal number (NaN, "1e400",
	// "12,5").
	ReasonMalformed = "malformed row"
	// ReasonDuplicate: a second row for an offer already priced. Of
	// different prices the higher is kept, so a plan never understates
	// what a node costs; the choice does not depend on row order.
	ReasonDuplicate = "duplicate row"
	// ReasonUnknownZone: a zone the catalog does not list for the region.
	ReasonUnknownZone = "zone not in the catalog"
	// ReasonUnknownGPU: a GPU instance whose GPU model gpufleet cannot
	// name.
	ReasonUnknownGPU = "unknown GPU model"
	// ReasonNoSpec: neither the row nor the catalog says how many GPUs,
	// vCPUs or GiB the instance has.
	ReasonNoSpec = "no instance spec"
	// ReasonUnit: the price is not per hour; Detail is the unit.
	ReasonUnit = "not per hour"
	// ReasonCurrency: the price is not in US dollars; Detail is the
	// currency.
	ReasonCurrency = "currency"
	// ReasonIncomplete: a GCP machine some of whose parts (cores, memory,
	// GPUs) have no price in the region.
	ReasonIncomplete = "incomplete machine price"
)

// Plausible prices per node-hour: below minPrice is a placeholder, above
// maxPerGPUHour per GPU a mistake. The dearest GPU listed anywhere costs
// about $13 per GPU-hour (GCP's H100 in europe-west4).
const (
	minPrice      = 0.01
	maxPerGPUHour = 100.0
)

// Drop is a price row a loader refused.
type Drop struct {
	Cloud        string
	Region       string
	Zone         string
	InstanceType string
	Market       catalog.Market
	// Row names the row in its source: an AWS SKU, an Azure meter, a GCP
	// SKU id.
	Row    string
	Reason string
	// Value is, for ReasonCurrency and ReasonUnit, the currency or the
	// unit the row had instead: what a summary groups such rows by.
	Value  string
	Detail string
}

func (d Drop) String() string {
	parts := []string{d.Cloud}
	for _, p := range []string{d.Region, d.Zone, d.InstanceType, string(d.Market)} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	s := strings.Join(parts, " ") + ": " + d.Reason
	if d.Detail != "" {
		s += " (" + d.Detail + ")"
	}
	if d.Row != "" {
		s += " [" + d.Row + "]"
	}
	return s
}

// ErrNoOffers is returned by a loader that read its price source without
// error and found nothing to price: more likely a changed API than a cloud
// that stopped selling GPUs, so the old prices are better kept.
var ErrNoOffers = errors.New("no GPU offers found")

// shape is what an instance type is.
type shape struct {
	gpuModel  string
	gpus      int
	vcpus     int
	memoryGiB float64
}

// base is what every loader shares: the regions it reads, the instance
// types it knows, and the offers it collects.
type base struct {
	cloud string
	known *catalog.Catalog
	// regions are those read, sorted by name; with discover, the loader
	// adds the regions its price API lists beyond them.
	regions  []catalog.Region
	discover bool
	shapes   map[string]shape // by instance type, of this cloud
	retry    Retry
	now      func() time.Time
	log      *slog.Logger
	onDrop   func(Drop)
	client   *http.Client
	timeout  time.Duration
	// what names the price source in the catalog's Sources.
	what string
}

func newBase(cloud string, opts Options) (*base, error) {
	b := &base{cloud: cloud, known: opts.Known, retry: opts.Retry.withDefaults(), now: opts.Now, log: opts.Log, onDrop: opts.OnDrop, client: opts.HTTPClient, timeout: opts.Timeout}
	if b.known == nil {
		b.known = catalog.Default()
	}
	if b.now == nil {
		b.now = time.Now
	}
	if b.log == nil {
		b.log = slog.New(slog.DiscardHandler)
	}
	if len(opts.Regions) == 0 {
		// Every region the catalog lists, and those the price API lists
		// besides, which the loader adds as it finds them.
		b.discover = true
		b.regions = b.known.RegionsOf(cloud)
	}
	for _, name := range opts.Regions {
		if !HasRegion(cloud, name, b.known) {
			return nil, fmt.Errorf("%s prices, %w", cloud, UnknownRegion(name, []string{cloud}, b.known))
		}
		if _, ok := b.region(name); !ok {
			r, known := b.known.Region(cloud, name)
			if !known {
				r = newRegion(cloud, name)
			}
			b.regions = append(b.regions, r)
		}
	}
	slices.SortFunc(b.regions, func(x, y catalog.Region) int { return cmp.Compare(x.Name, y.Name) })

	b.shapes = map[string]shape{}
	for _, o := range b.known.Offers {
		if o.Cloud == cloud {
			b.shapes[o.InstanceType] = shape{o.GPUModel, o.GPUs, o.VCPUs, o.MemoryGiB}
		}
	}
	return b, nil
}

// region returns a region being read.
func (b *base) region(name string) (*catalog.Region, bool) {
	i := slices.IndexFunc(b.regions, func(r catalog.Region) bool { return r.Name == name })
	if i < 0 {
		return nil, false
	}
	return &b.regions[i], true
}

// addRegion adds a region the price API lists, unless it is read already
// or the loader reads only the regions it was given; false when it is
// not read.
func (b *base) addRegion(name string) bool {
	if _, ok := b.region(name); ok {
		return true
	}
	if !b.discover || !plausibleRegion(b.cloud, name, b.known) {
		return false
	}
	r, ok := b.known.Region(b.cloud, name)
	if !ok {
		r = newRegion(b.cloud, name)
	}
	b.regions = append(b.regions, r)
	slices.SortFunc(b.regions, func(x, y catalog.Region) int { return cmp.Compare(x.Name, y.Name) })
	return true
}

func (b *base) drop(d Drop) {
	d.Cloud = b.cloud
	b.log.Debug("price row dropped", "row", d.String())
	if b.onDrop != nil {
		b.onDrop(d)
	}
}

// offerKey is what makes an offer one: Validate refuses two with one key.
type offerKey struct {
	region, zone, instanceType string
	market                     catalog.Market
}

// collector gathers a loader's offers, keeping one per key.
type collector struct {
	b      *base
	offers map[offerKey]collected
}

type collected struct {
	offer catalog.Offer
	row   string
}

func (b *base) collector() *collector {
	return &collector{b: b, offers: map[offerKey]collected{}}
}

// add records an offer priced at dollars, unless the price is a
// placeholder or implausible, or a duplicate of one already held.
func (c *collector) add(o catalog.Offer, dollars float64, row string) {
	drop := Drop{Region: o.Region, Zone: o.Zone, InstanceType: o.InstanceType, Market: o.Market, Row: row}
	micros, reason, detail := checkPrice(dollars, o.GPUs)
	if reason != "" {
		drop.Reason, drop.Detail = reason, detail
		c.b.drop(drop)
		return
	}
	o.PriceMicros = micros
	c.put(o, row)
}

// take adds what another collector of the same loader gathered.
func (c *collector) take(other *collector) {
	for _, held := range other.offers {
		c.put(held.offer, held.row)
	}
}

func (c *collector) put(o catalog.Offer, row string) {
	o.Cloud = c.b.cloud
	drop := Drop{Region: o.Region, Zone: o.Zone, InstanceType: o.InstanceType, Market: o.Market, Row: row, Reason: ReasonDuplicate}
	k := offerKey{o.Region, o.Zone, o.InstanceType, o.Market}
	held, dup := c.offers[k]
	switch {
	case !dup:
		c.offers[k] = collected{o, row}
		return
	case o.PriceMicros > held.offer.PriceMicros || o.PriceMicros == held.offer.PriceMicros && row < held.row:
		// The same rule whichever row comes first: the higher price, then
		// the first row by name.
		c.offers[k] = collected{o, row}
		drop.Row = held.row
		drop.Detail = fmt.Sprintf("%s kept over %s", catalog.FormatMicros(o.PriceMicros), catalog.FormatMicros(held.offer.PriceMicros))
	default:
		drop.Detail = fmt.Sprintf("%s kept over %s", catalog.FormatMicros(held.offer.PriceMicros), catalog.FormatMicros(o.PriceMicros))
	}
	c.b.drop(drop)
}

// catalog returns what was collected as a catalog of the cloud. A region
// with no offer is left out of Regions, so that Merge keeps the prices it
// had there.
// Each offer names the catalog's one source: the cloud's price API at the
// time it was read.
func (c *collector) catalog() (*catalog.Catalog, error) {
	now := c.b.now().UTC().Truncate(time.Second)
	source := catalog.Source{ID: c.b.cloud + "@" + now.Format(time.RFC3339), What: c.b.what, Date: now}
	out := &catalog.Catalog{Source: c.b.cloud, FetchedAt: now, Sources: []catalog.Source{source}}
	priced := map[string]bool{}
	for _, held := range c.offers {
		held.offer.Source, held.offer.Derived = source.ID, false
		out.Offers = append(out.Offers, held.offer)
		priced[held.offer.Region] = true
	}
	if len(out.Offers) == 0 {
		return nil, fmt.Errorf("%s: %w in %d regions", c.b.cloud, ErrNoOffers, len(c.b.regions))
	}
	slices.SortFunc(out.Sources, func(a, b catalog.Source) int { return cmp.Compare(a.ID, b.ID) })
	for _, r := range c.b.regions {
		if priced[r.Name] {
			out.Regions = append(out.Regions, r)
		} else if _, known := c.b.known.Region(c.b.cloud, r.Name); known || !c.b.discover {
			c.b.log.Warn("no GPU prices found in a region; its old prices are kept", "cloud", c.b.cloud, "region", r.Name)
		} else {
			// Most regions of a cloud have no GPUs.
			c.b.log.Debug("no GPU prices found in a region the price API lists", "cloud", c.b.cloud, "region", r.Name)
		}
	}
	if e, ok := c.b.known.EgressOf(c.b.cloud); ok {
		out.Egress = []catalog.Egress{e}
	}
	sortOffers(out.Offers)
	if err := out.Validate(); err != nil {
		return nil, fmt.Errorf("%s prices, %w", c.b.cloud, err)
	}
	return out, nil
}

// sortOffers puts offers in the snapshot's order, so that a refreshed
// catalog diffs cleanly against the one before.
func sortOffers(offers []catalog.Offer) {
	slices.SortFunc(offers, func(a, b catalog.Offer) int {
		return cmp.Or(
			cmp.Compare(a.Cloud, b.Cloud),
			cmp.Compare(a.Region, b.Region),
			cmp.Compare(a.Zone, b.Zone),
			cmp.Compare(a.InstanceType, b.InstanceType),
			cmp.Compare(a.Market, b.Market),
		)
	})
}

// checkPrice turns a node-hour price into micro-dollars, or says why it
// is not one.
func checkPrice(dollars float64, gpus int) (micros int64, reason, detail string) {
	switch {
	case math.IsNaN(dollars) || math.IsInf(dollars, 0):
		return 0, ReasonMalformed, fmt.Sprintf("price %v", dollars)
	case dollars <= 0:
		return 0, ReasonPlaceholder, fmt.Sprintf("$%g per node-hour", dollars)
	case dollars < minPrice:
		return 0, ReasonBelowFloor, fmt.Sprintf("$%g per node-hour, under $%g", dollars, minPrice)
	case dollars > maxPerGPUHour*float64(max(gpus, 1)):
		return 0, ReasonImplausible, fmt.Sprintf("$%g per node-hour for %d GPUs", dollars, gpus)
	}
	return catalog.Micros(dollars), "", ""
}

// parseDollars reads a price a price list writes as a decimal string
// ("30.330000"): digits and one point, nothing a float parser would also
// take ("NaN", "Inf", "1e3", "0x1p-2").
func parseDollars(s string) (float64, bool) {
	s = strings.TrimSpace(s)
	digits := strings.TrimPrefix(s, "-")
	if digits == "" || digits == "." || strings.Count(digits, ".") > 1 || strings.Trim(digits, "0123456789.") != "" {
		return 0, false
	}
	v, err := strconv.ParseFloat(s, 64)
	return v, err == nil
}
