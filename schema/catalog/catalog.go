// SPDX-License-Identifier: Apache-2.0

package catalog

import (
	"strings"
	"time"
)

// Market is how an instance is bought.
type Market string

const (
	OnDemand Market = "on-demand"
	Spot     Market = "spot"
)

// Cloud names, as they appear in specs, offers and tags.
const (
	AWS    = "aws"
	Azure  = "azure"
	GCP    = "gcp"
	Lambda = "lambda"
	OCI    = "oci"
)

// Clouds lists the supported clouds in their canonical order.
var Clouds = []string{AWS, Azure, GCP, Lambda, OCI}

// Hyperscalers are the clouds a team without gpufleet would most likely
// run its whole fleet on: a plan's baseline, and the saving it states, is
// priced on the cheapest of them. The rest of Clouds are GPU clouds.
var Hyperscalers = []string{AWS, Azure, GCP}

// emulatedPrefix marks the Source of prices read from gpufleet's emulator.
const emulatedPrefix = "emulator: "

// EmulatedSource is the Source of prices read from gpufleet's emulator
// rather than the clouds: plans say so, and warn.
func EmulatedSource(source string) string { return emulatedPrefix + source }

// Emulated reports whether a catalog's prices came from the emulator.
func (c *Catalog) Emulated() bool { return strings.HasPrefix(c.Source, emulatedPrefix) }

// Catalog is a dated set of prices and the regions they apply to. The embedded
// snapshot and the live price loaders produce the same format, so the planner
// never needs to know where its prices came from.
type Catalog struct {
	// Source says where the prices came from: "snapshot", "aws", "azure", "gcp"
	// or a combination joined by "+".
	Source string `json:"source"`
	// FetchedAt is when the prices were read; the age of a plan's prices is
	// measured from it.
	FetchedAt time.Time `json:"fetchedAt"`
	// Sources are where the prices were read, each with its date; every
	// offer names one.
	Sources []Source `json:"sources,omitempty"`
	Regions []Region `json:"regions"`
	Offers  []Offer  `json:"offers"`
	// Egress holds data-transfer prices per source cloud.
	Egress []Egress `json:"egress"`
	// Quotas describes the cloud quotas its instance types count against,
	// and QuotaUses says which and by how much (see UsesFor). The limits
	// themselves are the account's, read from each cloud.
	Quotas    []Quota    `json:"quotas,omitempty"`
	QuotaUses []QuotaUse `json:"quotaUses,omitempty"`
}

// Source is where a catalog's prices were read: a cloud's price API, or
// a recorded answer of one, on a date.
type Source struct {
	// ID is how offers name the source.
	ID string `json:"id"`
	// What says where the prices come from, for a person to look up.
	What string `json:"what"`
	// Date is when the prices were read or published.
	Date time.Time `json:"date"`
}

// Region is one cloud region and its zones.
type Region struct {
	Cloud string `json:"cloud"`
	Name  string `json:"name"`
	// Geo is a coarse geography ("us", "ca", "eu", "ap"), shown in reports.
	Geo string `json:"geo"`
	// Country is the ISO 3166-1 alpha-2 code of the country the region's
	// data centres are in, for residency rules ("DE", "US").
	Country string   `json:"country,omitempty"`
	Zones   []string `json:"zones"`
	// ZoneIDs are, where the cloud names zones apart for each account
	// (AWS: us-east-1a may be use1-az4 in one account and use1-az1 in
	// another), the zones' account-independent ids, in Zones' order.
	ZoneIDs []string `json:"zoneIds,omitempty"`
}

// Offer is the price of one instance type in one place, bought one way. A
// zone of "" means the price applies to every zone of the region.
type Offer struct {
	Cloud        string  `json:"cloud"`
	Region       string  `json:"region"`
	Zone         string  `json:"zone,omitempty"`
	InstanceType string  `json:"instanceType"`
	Market       Market  `json:"market"`
	GPUModel     string  `json:"gpuModel"`
	GPUs         int     `json:"gpus"`
	VCPUs        int     `json:"vcpus"`
	MemoryGiB    float64 `json:"memoryGiB"`
	// PriceMicros is US$ per node-hour × 1,000,000. Zero or less means the
	// price is unknown; such offers are never chosen.
	PriceMicros int64 `json:"priceMicros"`
	// Source names the catalog's source of the price.
	Source string `json:"source,omitempty"`
	// Derived says the price is not a quote: no source lists this type
	// in this place, and the price was derived from one that does (the
	// same type in the nearest quoted region). Plans that use a derived
	// price say so.
	Derived bool `json:"derived,omitempty"`
}

// Egress is what moving data out of a cloud costs, in micro-dollars per GB.
type Egress struct {
	Cloud string `json:"cloud"`
	// InterRegionMicrosPerGB applies between two regions of the same cloud.
	InterRegionMicrosPerGB int64 `json:"interRegionMicrosPerGB"`
	// InternetMicrosPerGB applies when the data leaves for another cloud.
	InternetMicrosPerGB int64 `json:"internetMicrosPerGB"`
}
