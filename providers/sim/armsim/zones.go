// SPDX-License-Identifier: Apache-2.0

package armsim

import (
	"slices"
	"strings"

	"github.com/gpufleet/gpufleet/schema/catalog"
)

// ARM names a zone by its number within the VM's location (zones: ["1"]),
// while the world needs zone names that are unique across regions. A
// catalog may spell Azure zones either way: "1" as ARM does, or
// "eastus-1" as AKS's topology labels do. The front accepts both and always
// speaks ARM's form on the wire.

// worldZone is the world's name for zone n of a region, if it has one.
func worldZone(r catalog.Region, n string) (string, bool) {
	if n == "" {
		return "", false
	}
	for _, z := range r.Zones {
		if z == n || z == r.Name+"-"+n {
			return z, true
		}
	}
	return "", false
}

// armZone is ARM's name for a world zone of a region.
func armZone(region, zone string) string {
	return strings.TrimPrefix(zone, region+"-")
}

// armZones lists a region's zones as ARM names them.
func armZones(r catalog.Region) []string {
	out := make([]string, len(r.Zones))
	for i, z := range r.Zones {
		out[i] = armZone(r.Name, z)
	}
	return out
}

// normalizeLocation turns a location as ARM accepts it ("East US",
// "eastus") into its canonical name.
func normalizeLocation(loc string) string {
	return strings.ToLower(strings.ReplaceAll(loc, " ", ""))
}

// locations lists the cloud's regions, sorted, for error messages.
func locations(cat *catalog.Catalog) []string {
	var out []string
	for _, r := range cat.RegionsOf(cloud) {
		out = append(out, r.Name)
	}
	slices.Sort(out)
	return out
}
