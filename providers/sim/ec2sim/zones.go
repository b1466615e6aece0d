// SPDX-License-Identifier: Apache-2.0

package ec2sim

import (
	"encoding/xml"
	"fmt"
	"slices"
	"strings"
)

type zoneMessageXML struct {
	Message string `xml:"message"`
}

type availabilityZoneXML struct {
	ZoneName           string           `xml:"zoneName"`
	ZoneID             string           `xml:"zoneId"`
	ZoneState          string           `xml:"zoneState"`
	RegionName         string           `xml:"regionName"`
	Messages           []zoneMessageXML `xml:"messageSet>item"`
	OptInStatus        string           `xml:"optInStatus"`
	GroupName          string           `xml:"groupName"`
	GroupLongName      string           `xml:"groupLongName"`
	NetworkBorderGroup string           `xml:"networkBorderGroup"`
	ZoneType           string           `xml:"zoneType"`
}

type describeAvailabilityZonesResponse struct {
	XMLName   xml.Name              `xml:"DescribeAvailabilityZonesResponse"`
	Xmlns     string                `xml:"xmlns,attr"`
	RequestID string                `xml:"requestId"`
	Zones     []availabilityZoneXML `xml:"availabilityZoneInfo>item"`
}

type regionXML struct {
	RegionName  string `xml:"regionName"`
	Endpoint    string `xml:"regionEndpoint"`
	OptInStatus string `xml:"optInStatus"`
}

type describeRegionsResponse struct {
	XMLName   xml.Name    `xml:"DescribeRegionsResponse"`
	Xmlns     string      `xml:"xmlns,attr"`
	RequestID string      `xml:"requestId"`
	Regions   []regionXML `xml:"regionInfo>item"`
}

// optInNotRequired is the opt-in status of the regions every account has,
// the only kind the catalog lists.
const optInNotRequired = "opt-in-not-required"

// directionCodes shorten the words of a region's name as its zone ids do
// (us-east-1 is use1, ap-northeast-1 apne1).
var directionCodes = map[string]string{
	"east": "e", "west": "w", "north": "n", "south": "s", "central": "c",
	"northeast": "ne", "northwest": "nw", "southeast": "se", "southwest": "sw",
}

// regionNames are the names the console gives the catalog's regions,
// which zone groups' long names start with.
var regionNames = map[string]string{
	"us-east-1":      "US East (N. Virginia)",
	"us-east-2":      "US East (Ohio)",
	"us-west-2":      "US West (Oregon)",
	"ca-central-1":   "Canada (Central)",
	"eu-central-1":   "Europe (Frankfurt)",
	"eu-west-1":      "Europe (Ireland)",
	"eu-north-1":     "Europe (Stockholm)",
	"ap-northeast-1": "Asia Pacific (Tokyo)",
	"ap-northeast-2": "Asia Pacific (Seoul)",
	"ap-south-1":     "Asia Pacific (Mumbai)",
}

func longName(region string) string {
	if name, ok := regionNames[region]; ok {
		return name
	}
	return region
}

// regionCode is the prefix of a region's zone ids.
func regionCode(region string) string {
	var b strings.Builder
	for i, part := range strings.Split(region, "-") {
		if code, ok := directionCodes[part]; ok && i > 0 {
			b.WriteString(code)
			continue
		}
		b.WriteString(part)
	}
	return b.String()
}

// zoneID is a zone's id, use1-az1 and so on. EC2 maps names to ids apart
// for each account; the front's one account maps them as the catalog's
// region lists them (Region.ZoneIDs, what the price data names zones by),
// or, for a region listed without ids, in the order of its zones.
func (s *Server) zoneID(zone string) string {
	region, ok := s.world.ZoneRegion(cloud, zone)
	if !ok {
		return ""
	}
	r, _ := s.world.Region(cloud, region)
	i := slices.Index(r.Zones, zone)
	if len(r.ZoneIDs) == len(r.Zones) && r.ZoneIDs[i] != "" {
		return r.ZoneIDs[i]
	}
	return fmt.Sprintf("%s-az%d", regionCode(region), i+1)
}

// zoneByID is the zone of the region with this id.
func (s *Server) zoneByID(region, id string) (string, bool) {
	r, ok := s.world.Region(cloud, region)
	if !ok {
		return "", false
	}
	for _, z := range r.Zones {
		if s.zoneID(z) == id {
			return z, true
		}
	}
	return "", false
}

func (s *Server) renderZone(region, zone string) availabilityZoneXML {
	return availabilityZoneXML{
		ZoneName:           zone,
		ZoneID:             s.zoneID(zone),
		ZoneState:          "available",
		RegionName:         region,
		OptInStatus:        optInNotRequired,
		GroupName:          region + "-zg-1",
		GroupLongName:      longName(region) + " 1",
		NetworkBorderGroup: region,
		ZoneType:           "availability-zone",
	}
}

var zoneFilters = map[string]func(z availabilityZoneXML) []string{
	"group-long-name":      func(z availabilityZoneXML) []string { return []string{z.GroupLongName} },
	"group-name":           func(z availabilityZoneXML) []string { return []string{z.GroupName} },
	"message":              func(z availabilityZoneXML) []string { return nil },
	"network-border-group": func(z availabilityZoneXML) []string { return []string{z.NetworkBorderGroup} },
	"opt-in-status":        func(z availabilityZoneXML) []string { return []string{z.OptInStatus} },
	"parent-zone-id":       func(z availabilityZoneXML) []string { return nil },
	"parent-zone-name":     func(z availabilityZoneXML) []string { return nil },
	"region-name":          func(z availabilityZoneXML) []string { return []string{z.RegionName} },
	"state":                func(z availabilityZoneXML) []string { return []string{z.ZoneState} },
	"zone-id":              func(z availabilityZoneXML) []string { return []string{z.ZoneID} },
	"zone-name":            func(z availabilityZoneXML) []string { return []string{z.ZoneName} },
	"zone-type":            func(z availabilityZoneXML) []string { return []string{z.ZoneType} },
}

// describeAvailabilityZones lists the region's zones. The catalog has no
// Local or Wavelength Zones, so AllAvailabilityZones, which would add them
// however opted in, changes nothing.
func (s *Server) describeAvailabilityZones(req *request) (any, *apiError) {
	if apiErr := s.admit(req); apiErr != nil {
		return nil, apiErr
	}
	form := req.form
	fs, apiErr := knownFilters(form, zoneFilters, false)
	if apiErr != nil {
		return nil, apiErr
	}
	if _, apiErr := boolParam(form, "AllAvailabilityZones", false); apiErr != nil {
		return nil, apiErr
	}
	r, _ := s.world.Region(cloud, req.region)
	names, ids := unique(list(form, "ZoneName")), unique(list(form, "ZoneId"))
	for _, name := range names {
		if !slices.Contains(r.Zones, name) {
			return nil, invalidValue("Invalid availability zone: [%s]", name)
		}
	}
	for _, id := range ids {
		if _, ok := s.zoneByID(req.region, id); !ok {
			return nil, invalidValue("Invalid availability zone: [%s]", id)
		}
	}
	out := describeAvailabilityZonesResponse{Xmlns: xmlns, RequestID: req.id}
	for _, zone := range r.Zones {
		z := s.renderZone(req.region, zone)
		named := len(names) == 0 && len(ids) == 0 || slices.Contains(names, zone) || slices.Contains(ids, z.ZoneID)
		if named && matchesTable(z, fs, zoneFilters) {
			out.Zones = append(out.Zones, z)
		}
	}
	return out, nil
}

var regionFilters = map[string]func(r regionXML) []string{
	"endpoint":      func(r regionXML) []string { return []string{r.Endpoint} },
	"opt-in-status": func(r regionXML) []string { return []string{r.OptInStatus} },
	"region-name":   func(r regionXML) []string { return []string{r.RegionName} },
}

// describeRegions lists the catalog's regions, which every account has
// enabled; AllRegions would add the opt-in regions, which the catalog
// does not know.
func (s *Server) describeRegions(req *request) (any, *apiError) {
	if apiErr := s.admit(req); apiErr != nil {
		return nil, apiErr
	}
	form := req.form
	fs, apiErr := knownFilters(form, regionFilters, false)
	if apiErr != nil {
		return nil, apiErr
	}
	if _, apiErr := boolParam(form, "AllRegions", false); apiErr != nil {
		return nil, apiErr
	}
	names := unique(list(form, "RegionName"))
	for _, name := range names {
		if _, ok := s.world.Region(cloud, name); !ok {
			return nil, invalidValue("Invalid region: [%s]", name)
		}
	}
	out := describeRegionsResponse{Xmlns: xmlns, RequestID: req.id}
	for _, r := range s.world.Catalog().RegionsOf(cloud) {
		x := regionXML{RegionName: r.Name, Endpoint: "ec2." + r.Name + ".amazonaws.com", OptInStatus: optInNotRequired}
		if len(names) > 0 && !slices.Contains(names, r.Name) {
			continue
		}
		if matchesTable(x, fs, regionFilters) {
			out.Regions = append(out.Regions, x)
		}
	}
	return out, nil
}
