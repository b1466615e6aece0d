// SPDX-License-Identifier: Apache-2.0

package armsim

import (
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// locationFilter is the one $filter Resource SKUs accepts.
var locationFilter = regexp.MustCompile(`(?i)^\s*location\s+eq\s+'([^']*)'\s*$`)

// skus serves ResourceSKUs.List: one entry per size and location, as
// Compute lists them, for the sizes the catalog has in each region, with
// the availability sets' SKUs Compute lists beside them. A size lives in
// the zones its region's offers name (every zone, for a regional offer);
// a zone where the world does not offer it (World.SetOffered) is
// restricted for the subscription, and a size offered in none of its
// zones is restricted in the whole location too, as Compute reports a
// size the subscription may not deploy.
func (s *Server) skus(w http.ResponseWriter, r *http.Request, sub string) {
	q := r.URL.Query()
	filter := q.Get("$filter")
	m := locationFilter.FindStringSubmatch(filter)
	only := ""
	if m != nil {
		only = normalizeLocation(m[1])
	}
	out, ok := s.admit(w, r, sim.Call{Op: OpSKUs, Region: only})
	if !ok {
		return
	}
	if out.Err != nil {
		s.writeError(w, s.fromWorld(out.Err, callContext{vm: vmRef{Subscription: sub}, location: only, opType: "Read",
			action: "Microsoft.Compute/skus/read"}))
		return
	}
	if filter != "" && m == nil {
		s.writeError(w, errInvalid("$filter", "The value '%s' of parameter '$filter' is not valid. Only a location filter, location eq '<location>', is supported.", filter))
		return
	}
	// The world has no edge zones, so asking for them changes nothing.
	if v := q.Get("includeExtendedLocations"); v != "" && !strings.EqualFold(v, "true") && !strings.EqualFold(v, "false") {
		s.writeError(w, errInvalid("includeExtendedLocations", "The value '%s' of parameter 'includeExtendedLocations' is not valid. Allowed values are 'true' and 'false'.", v))
		return
	}
	// An unknown location is no error: it has no SKUs.
	var all []*armcompute.ResourceSKU
	for _, region := range s.world.Catalog().RegionsOf(cloud) {
		if only == "" || region.Name == only {
			all = append(all, s.regionSKUs(region)...)
		}
	}
	page, next, e := s.offsetPage(r, len(all))
	if e != nil {
		s.writeError(w, *e)
		return
	}
	writeJSON(w, http.StatusOK, armcompute.ResourceSKUsResult{Value: all[page.start:page.end], NextLink: next})
}

// sizeInRegion is what the catalog says of a size in one region.
type sizeInRegion struct {
	offer catalog.Offer
	// zones are the world's zones the size's offers name.
	zones []string
	spot  bool
}

// regionSKUs lists a region's SKUs, sorted by resource type and name.
func (s *Server) regionSKUs(region catalog.Region) []*armcompute.ResourceSKU {
	sizes := map[string]*sizeInRegion{}
	for _, o := range s.world.Catalog().Offers {
		if o.Cloud != cloud || o.Region != region.Name {
			continue
		}
		sz, ok := sizes[o.InstanceType]
		if !ok {
			sz = &sizeInRegion{offer: o}
			sizes[o.InstanceType] = sz
		}
		sz.spot = sz.spot || o.Market == catalog.Spot
		zones := region.Zones
		if o.Zone != "" {
			zones = []string{o.Zone}
		}
		for _, z := range zones {
			if !slices.Contains(sz.zones, z) {
				sz.zones = append(sz.zones, z)
			}
		}
	}
	out := availabilitySetSKUs(region.Name)
	names := make([]string, 0, len(sizes))
	for name := range sizes {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		out = append(out, s.vmSKU(region, sizes[name]))
	}
	return out
}

func (s *Server) vmSKU(region catalog.Region, sz *sizeInRegion) *armcompute.ResourceSKU {
	name := sz.offer.InstanceType
	zones := slices.Clone(sz.zones)
	slices.Sort(zones)
	armZones := make([]*string, 0, len(zones))
	var restricted []*string
	for _, z := range zones {
		a := armZone(region.Name, z)
		armZones = append(armZones, to.Ptr(a))
		_, onDemand := s.world.Type(cloud, z, name, catalog.OnDemand)
		_, spot := s.world.Type(cloud, z, name, catalog.Spot)
		if !onDemand && !spot {
			restricted = append(restricted, to.Ptr(a))
		}
	}
	restrictions := []*armcompute.ResourceSKURestrictions{}
	if len(restricted) > 0 && len(restricted) == len(zones) {
		restrictions = append(restrictions, &armcompute.ResourceSKURestrictions{
			Type:            to.Ptr(armcompute.ResourceSKURestrictionsTypeLocation),
			Values:          []*string{to.Ptr(region.Name)},
			RestrictionInfo: &armcompute.ResourceSKURestrictionInfo{Locations: []*string{to.Ptr(region.Name)}},
			ReasonCode:      to.Ptr(armcompute.ResourceSKURestrictionsReasonCodeNotAvailableForSubscription),
		})
	}
	if len(restricted) > 0 {
		restrictions = append(restrictions, &armcompute.ResourceSKURestrictions{
			Type:            to.Ptr(armcompute.ResourceSKURestrictionsTypeZone),
			Values:          []*string{to.Ptr(region.Name)},
			RestrictionInfo: &armcompute.ResourceSKURestrictionInfo{Locations: []*string{to.Ptr(region.Name)}, Zones: restricted},
			ReasonCode:      to.Ptr(armcompute.ResourceSKURestrictionsReasonCodeNotAvailableForSubscription),
		})
	}
	o := sz.offer
	sku := &armcompute.ResourceSKU{
		ResourceType: to.Ptr("virtualMachines"),
		Name:         to.Ptr(name),
		Tier:         to.Ptr("Standard"),
		Size:         to.Ptr(strings.TrimPrefix(name, "Standard_")),
		Locations:    []*string{to.Ptr(region.Name)},
		LocationInfo: []*armcompute.ResourceSKULocationInfo{{Location: to.Ptr(region.Name), Zones: armZones}},
		Capabilities: capabilities(
			"vCPUs", strconv.Itoa(o.VCPUs),
			"MemoryGB", strconv.FormatFloat(o.MemoryGiB, 'f', -1, 64),
			"GPUs", strconv.Itoa(o.GPUs),
			"LowPriorityCapable", pascalBool(sz.spot),
			"vCPUsAvailable", strconv.Itoa(o.VCPUs),
			"CpuArchitectureType", "x64",
			"AcceleratedNetworkingEnabled", pascalBool(catalog.AcceleratedNetworking(name)),
		),
		Restrictions: restrictions,
	}
	if family, ok := catalog.AzureFamily(name); ok {
		sku.Family = to.Ptr(family)
	}
	return sku
}

// availabilitySetSKUs are the availability sets' SKUs Compute lists in
// every location, before the sizes.
func availabilitySetSKUs(location string) []*armcompute.ResourceSKU {
	var out []*armcompute.ResourceSKU
	for _, name := range []string{"Aligned", "Classic"} {
		out = append(out, &armcompute.ResourceSKU{
			ResourceType: to.Ptr("availabilitySets"),
			Name:         to.Ptr(name),
			Locations:    []*string{to.Ptr(location)},
			LocationInfo: []*armcompute.ResourceSKULocationInfo{{Location: to.Ptr(location), Zones: []*string{}}},
			Capabilities: capabilities("MaximumPlatformFaultDomainCount", "3"),
			Restrictions: []*armcompute.ResourceSKURestrictions{},
		})
	}
	return out
}

// capabilities pairs names and values, as Compute writes every capability:
// a string.
func capabilities(pairs ...string) []*armcompute.ResourceSKUCapabilities {
	out := make([]*armcompute.ResourceSKUCapabilities, 0, len(pairs)/2)
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, &armcompute.ResourceSKUCapabilities{Name: to.Ptr(pairs[i]), Value: to.Ptr(pairs[i+1])})
	}
	return out
}

// pascalBool is a boolean as Compute's capabilities spell it.
func pascalBool(b bool) string {
	if b {
		return "True"
	}
	return "False"
}
