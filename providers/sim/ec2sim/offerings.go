// SPDX-License-Identifier: Apache-2.0

package ec2sim

import (
	"encoding/xml"
	"maps"
	"slices"
	"strings"

	"github.com/gpufleet/gpufleet/schema/catalog"
)

type instanceTypeOfferingXML struct {
	InstanceType string `xml:"instanceType"`
	LocationType string `xml:"locationType"`
	Location     string `xml:"location"`
}

type describeInstanceTypeOfferingsResponse struct {
	XMLName   xml.Name                  `xml:"DescribeInstanceTypeOfferingsResponse"`
	Xmlns     string                    `xml:"xmlns,attr"`
	RequestID string                    `xml:"requestId"`
	Offerings []instanceTypeOfferingXML `xml:"instanceTypeOfferingSet>item"`
	NextToken string                    `xml:"nextToken,omitempty"`
}

// The location types the front serves. EC2 also knows outpost; the
// catalog has none.
const (
	locationRegion = "region"
	locationZone   = "availability-zone"
	locationZoneID = "availability-zone-id"
)

var offeringFilters = map[string]bool{"instance-type": true, "location": true}

// describeInstanceTypeOfferings lists the types the region, or each of its
// zones, offers. EC2 does not tell markets apart here: a type is offered
// where it can be bought either way, and where a zone no longer offers it
// (World.SetOffered) it is gone from both.
func (s *Server) describeInstanceTypeOfferings(req *request) (any, *apiError) {
	form := req.form
	fs, apiErr := filters(form)
	if apiErr != nil {
		return nil, apiErr
	}
	// A fault may aim at the one zone or type a call asks about.
	zone, instanceType := onlyValue(fs, "location"), onlyValue(fs, "instance-type")
	outcome, apiErr := s.intercept(req, zone, instanceType)
	if apiErr != nil {
		return nil, apiErr
	}
	if outcome.Err != nil {
		return nil, s.worldError(outcome.Err, launchContext{region: req.region, zone: zone, instanceType: instanceType})
	}
	if apiErr := checkFilters(fs, offeringFilters, false); apiErr != nil {
		return nil, apiErr
	}
	locationType := form.Get("LocationType")
	switch locationType {
	case "":
		locationType = locationRegion
	case locationRegion, locationZone, locationZoneID:
	case "outpost":
		return nil, invalidValue("The location type '%s' is not served by the emulator, whose catalog has no Outposts.", locationType)
	default:
		return nil, invalidValue("Value (%s) for parameter locationType is invalid. Valid values: region, availability-zone, availability-zone-id, outpost.", locationType)
	}
	maxResults, paged, apiErr := intParam(form, "MaxResults")
	if apiErr != nil {
		return nil, apiErr
	}
	if paged && (maxResults < 5 || maxResults > 1000) {
		return nil, invalidValue("Value ( %d ) for parameter maxResults is invalid. Expecting a value between 5 and 1000.", maxResults)
	}
	n, apiErr := nextToken(form, "offerings")
	if apiErr != nil {
		return nil, apiErr
	}
	offset := int(n)

	var offerings []instanceTypeOfferingXML
	for _, o := range s.offerings(req.region, locationType) {
		if matchesAll(fs, map[string][]string{"location": {o.Location}, "instance-type": {o.InstanceType}}) {
			offerings = append(offerings, o)
		}
	}
	if offset > len(offerings) {
		return nil, invalidPaginationToken()
	}
	out := describeInstanceTypeOfferingsResponse{Xmlns: xmlns, RequestID: req.id}
	page := offerings[offset:]
	if paged && len(page) > maxResults {
		page = page[:maxResults]
		out.NextToken = encodeToken("offerings", uint64(offset+maxResults))
	}
	out.Offerings = page
	return out, nil
}

// offerings lists what the region offers, by zone (named or by id) or as
// a whole, sorted by location and type.
func (s *Server) offerings(region, locationType string) []instanceTypeOfferingXML {
	r, ok := s.world.Region(cloud, region)
	if !ok {
		return nil
	}
	var out []instanceTypeOfferingXML
	regional := map[string]bool{}
	for _, zone := range slices.Sorted(slices.Values(r.Zones)) {
		var types []string
		for _, market := range []catalog.Market{catalog.OnDemand, catalog.Spot} {
			for _, t := range s.world.Offered(cloud, zone, market) {
				if !slices.Contains(types, t.Name) {
					types = append(types, t.Name)
				}
			}
		}
		slices.Sort(types)
		for _, t := range types {
			regional[t] = true
			switch locationType {
			case locationZone:
				out = append(out, instanceTypeOfferingXML{InstanceType: t, LocationType: locationZone, Location: zone})
			case locationZoneID:
				out = append(out, instanceTypeOfferingXML{InstanceType: t, LocationType: locationZoneID, Location: s.zoneID(zone)})
			}
		}
	}
	if locationType == locationZoneID {
		slices.SortStableFunc(out, func(a, b instanceTypeOfferingXML) int { return strings.Compare(a.Location, b.Location) })
	}
	if locationType == locationRegion {
		for _, t := range slices.Sorted(maps.Keys(regional)) {
			out = append(out, instanceTypeOfferingXML{InstanceType: t, LocationType: locationRegion, Location: region})
		}
	}
	return out
}

// onlyValue is the value of a filter that names exactly one, without
// wildcards, or "".
func onlyValue(fs []filter, name string) string {
	var found []string
	for _, f := range fs {
		if f.name == name {
			found = append(found, f.values...)
		}
	}
	if len(found) != 1 || strings.ContainsAny(found[0], `*?\`) {
		return ""
	}
	return found[0]
}
