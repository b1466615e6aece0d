// SPDX-License-Identifier: Apache-2.0

package prices

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/gpufleet/gpufleet/schema/catalog"
)

// regionShapes are how each cloud names its regions: AWS "eu-west-3" and
// "us-gov-west-1", Azure "japaneast" and "westus2", GCP "europe-west9".
// A name of the right shape that gpufleet does not know is told apart
// from a misspelling of another cloud's.
var regionShapes = map[string]*regexp.Regexp{
	catalog.AWS:   regexp.MustCompile(`^[a-z]{2}(-gov|-iso[a-z]?)?-(central|north|south|east|west|northeast|northwest|southeast|southwest)-[0-9]+$`),
	catalog.Azure: regexp.MustCompile(`^[a-z]+[0-9]*$`),
	catalog.GCP:   regexp.MustCompile(`^[a-z]+-[a-z]+[0-9]+$`),
	// Lambda's are "us-east-1", "europe-central-1", "us-midwest-1".
	catalog.Lambda: regexp.MustCompile(`^[a-z]+-[a-z]+-[0-9]+$`),
	// OCI's are "us-ashburn-1", "eu-frankfurt-1", "af-johannesburg-1".
	catalog.OCI: regexp.MustCompile(`^[a-z]{2}-[a-z]+-[0-9]+$`),
}

// otherPartition reports an AWS region outside the commercial partition
// (GovCloud, China, ISO): the standard credentials and price list do not
// reach it, so a refresh reads it only when asked to.
func otherPartition(cloud, name string) bool {
	return cloud == catalog.AWS && (strings.HasPrefix(name, "us-gov-") || strings.HasPrefix(name, "cn-") || strings.HasPrefix(name, "us-iso"))
}

// HasRegion reports whether a cloud has a region of that name: one the
// catalog lists, or one whose country gpufleet knows, which is every
// region the clouds had when gpufleet was built.
func HasRegion(cloud, name string, known *catalog.Catalog) bool {
	if _, ok := catalog.CountryOf(cloud, name); ok {
		return true
	}
	if known != nil {
		if _, ok := known.Region(cloud, name); ok {
			return true
		}
	}
	return false
}

// RegionClouds are the clouds, in catalog order, with a region of that
// name.
func RegionClouds(name string, known *catalog.Catalog) []string {
	var out []string
	for _, c := range catalog.Clouds {
		if HasRegion(c, name, known) {
			out = append(out, c)
		}
	}
	return out
}

// UnknownRegion is the error for a name none of clouds has as a region:
// it suggests the nearest names of those clouds, and says when the name
// has a cloud's shape, so that a region newer than gpufleet is told from
// a typo.
func UnknownRegion(name string, clouds []string, known *catalog.Catalog) error {
	var names []string
	for _, c := range clouds {
		names = append(names, catalog.RegionNames(c)...)
		if known != nil {
			for _, r := range known.RegionsOf(c) {
				names = append(names, r.Name)
			}
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	msg := fmt.Sprintf("%q is not a region of %s", name, orList(clouds))
	if near := catalog.Closest(name, names, 3); len(near) > 0 {
		return fmt.Errorf("%s (did you mean %s?)", msg, strings.Join(near, ", "))
	}
	for _, c := range clouds {
		if regionShapes[c].MatchString(name) {
			return fmt.Errorf("%s: it is shaped like a %s region, but not one gpufleet knows of", msg, c)
		}
	}
	return fmt.Errorf("%s", msg)
}

func orList(items []string) string {
	switch len(items) {
	case 0:
		return "any cloud"
	case 1:
		return items[0]
	}
	return strings.Join(items[:len(items)-1], ", ") + " or " + items[len(items)-1]
}

// newRegion is a region of a cloud the catalog does not list yet, with
// its country when gpufleet knows it and no zones: the loader adds those
// it finds.
func newRegion(cloud, name string) catalog.Region {
	country, _ := catalog.CountryOf(cloud, name)
	return catalog.Region{Cloud: cloud, Name: name, Geo: geoOf(country), Country: country}
}

// geoOf is the coarse geography a region's reports show, from its
// country, as the snapshot writes it: "us", "ca", "eu", "ap", and for the
// rest of the world "sa", "me" and "af".
func geoOf(country string) string {
	switch country {
	case "":
		return ""
	case "US":
		return "us"
	case "CA":
		return "ca"
	}
	for _, g := range []struct{ geo, name string }{{"europe", "eu"}, {"apac", "ap"}, {"latam", "sa"}, {"middle-east", "me"}, {"africa", "af"}} {
		if countries, _ := catalog.GeoCountries(g.geo); slices.Contains(countries, country) {
			return g.name
		}
	}
	return strings.ToLower(country)
}

// plausibleRegion reports whether a name a price API gives is a region of
// the cloud gpufleet should read: one it knows, or a new one of the
// cloud's shape, but not a local zone ("us-east-1-bos-1"), a multi-region
// ("global", "europe") or another partition.
func plausibleRegion(cloud, name string, known *catalog.Catalog) bool {
	if otherPartition(cloud, name) {
		return false
	}
	return HasRegion(cloud, name, known) || regionShapes[cloud].MatchString(name)
}
