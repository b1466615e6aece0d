// SPDX-License-Identifier: Apache-2.0

package armsim

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/gpufleet/gpufleet/schema/catalog"
)

// Subscriptions (Microsoft.Resources, served by ARM itself): a
// subscription's own description, and the locations it may deploy to,
// which are the regions the world's catalog has for Azure. Every
// subscription id is one the emulator has, as every one has the fixture.

// subscriptionVersions are the api-versions of subscriptions and their
// locations: Debian's azure-mgmt-resource 22 sends 2021-01-01, the Go
// SDK's armsubscriptions 2022-12-01.
var subscriptionVersions = []string{"2016-06-01", "2018-06-01", "2019-06-01", "2019-11-01", "2020-01-01", "2021-01-01", "2022-12-01"}

var (
	subscriptionType = typeVersions{"Microsoft.Resources", "subscriptions", subscriptionVersions, true}
	locationsType    = typeVersions{"Microsoft.Resources", "subscriptions/locations", subscriptionVersions, true}
)

// subscriptionName is the display name of every emulated subscription.
const subscriptionName = "gpufleet emulator"

type subscriptionJSON struct {
	ID                   string   `json:"id"`
	AuthorizationSource  string   `json:"authorizationSource"`
	ManagedByTenants     []string `json:"managedByTenants"`
	SubscriptionID       string   `json:"subscriptionId"`
	TenantID             string   `json:"tenantId"`
	DisplayName          string   `json:"displayName"`
	State                string   `json:"state"`
	SubscriptionPolicies struct {
		LocationPlacementID string `json:"locationPlacementId"`
		QuotaID             string `json:"quotaId"`
		SpendingLimit       string `json:"spendingLimit"`
	} `json:"subscriptionPolicies"`
}

func (s *Server) getSubscription(w http.ResponseWriter, r *http.Request, sub string) {
	if !s.admitSimple(w, r, OpSubscriptionGet, subscriptionContext(sub, "Microsoft.Resources/subscriptions/read")) {
		return
	}
	out := subscriptionJSON{
		ID: "/subscriptions/" + sub, AuthorizationSource: "RoleBased", ManagedByTenants: []string{},
		SubscriptionID: sub, TenantID: emulatorTenant, DisplayName: subscriptionName, State: "Enabled",
	}
	p := &out.SubscriptionPolicies
	p.LocationPlacementID, p.QuotaID, p.SpendingLimit = "Public_2014-09-01", "PayAsYouGo_2014-09-01", "Off"
	writeJSON(w, http.StatusOK, out)
}

type locationJSON struct {
	ID                  string `json:"id"`
	Name                string `json:"name"`
	Type                string `json:"type"`
	DisplayName         string `json:"displayName"`
	RegionalDisplayName string `json:"regionalDisplayName"`
	Metadata            struct {
		RegionType       string           `json:"regionType"`
		RegionCategory   string           `json:"regionCategory"`
		GeographyGroup   string           `json:"geographyGroup"`
		Geography        string           `json:"geography,omitempty"`
		Longitude        string           `json:"longitude,omitempty"`
		Latitude         string           `json:"latitude,omitempty"`
		PhysicalLocation string           `json:"physicalLocation,omitempty"`
		PairedRegion     []pairedRegionJS `json:"pairedRegion"`
	} `json:"metadata"`
	AvailabilityZoneMappings []zoneMappingJSON `json:"availabilityZoneMappings,omitempty"`
}

type pairedRegionJS struct {
	Name string `json:"name"`
	ID   string `json:"id"`
}

type zoneMappingJSON struct {
	LogicalZone  string `json:"logicalZone"`
	PhysicalZone string `json:"physicalZone"`
}

// regionFacts is what Azure publishes of a region beyond its name.
type regionFacts struct {
	display, group, geography, place string
	latitude, longitude              string
	paired                           string
}

// knownRegions are Azure's own descriptions of the regions the embedded
// catalog has; a catalog with others gets what its entries say.
var knownRegions = map[string]regionFacts{
	"centralus":      {"Central US", "US", "United States", "Iowa", "41.5908", "-93.6208", "eastus2"},
	"eastus":         {"East US", "US", "United States", "Virginia", "37.3719", "-79.8164", "westus"},
	"eastus2":        {"East US 2", "US", "United States", "Virginia", "36.6681", "-78.3889", "centralus"},
	"japaneast":      {"Japan East", "Asia Pacific", "Japan", "Tokyo, Saitama", "35.68", "139.77", "japanwest"},
	"northcentralus": {"North Central US", "US", "United States", "Illinois", "41.8819", "-87.6278", "southcentralus"},
	"northeurope":    {"North Europe", "Europe", "Europe", "Ireland", "53.3478", "-6.2597", "westeurope"},
	"southcentralus": {"South Central US", "US", "United States", "Texas", "29.4167", "-98.5", "northcentralus"},
	"swedencentral":  {"Sweden Central", "Europe", "Sweden", "Gävle", "60.67488", "17.14127", "swedensouth"},
	"westeurope":     {"West Europe", "Europe", "Europe", "Netherlands", "52.3667", "4.9", "northeurope"},
	"westus":         {"West US", "US", "United States", "California", "37.783", "-122.417", "eastus"},
	"westus2":        {"West US 2", "US", "United States", "Washington", "47.233", "-119.852", "westcentralus"},
	"westus3":        {"West US 3", "US", "United States", "Phoenix", "33.448376", "-112.074036", "eastus"},
}

// geographyGroups name the catalog's coarse geographies as Azure groups
// its regions.
var geographyGroups = map[string]string{"us": "US", "ca": "Canada", "eu": "Europe", "ap": "Asia Pacific", "sa": "South America", "me": "Middle East", "af": "Africa"}

func (s *Server) listLocations(w http.ResponseWriter, r *http.Request, sub string) {
	if !s.admitSimple(w, r, OpLocationList, subscriptionContext(sub, "Microsoft.Resources/subscriptions/locations/read")) {
		return
	}
	out := []locationJSON{}
	for _, name := range locations(s.world.Catalog()) {
		region, _ := s.world.Region(cloud, name)
		out = append(out, renderLocation(sub, region))
	}
	writeJSON(w, http.StatusOK, struct {
		Value []locationJSON `json:"value"`
	}{out})
}

func renderLocation(sub string, region catalog.Region) locationJSON {
	f, ok := knownRegions[region.Name]
	if !ok {
		f = regionFacts{display: region.Name, group: geographyGroups[region.Geo]}
		if f.group == "" {
			f.group = strings.ToUpper(region.Geo)
		}
	}
	out := locationJSON{ID: "/subscriptions/" + sub + "/locations/" + region.Name, Name: region.Name, Type: "Region",
		DisplayName: f.display, RegionalDisplayName: fmt.Sprintf("(%s) %s", f.group, f.display)}
	m := &out.Metadata
	m.RegionType, m.RegionCategory, m.GeographyGroup = "Physical", "Recommended", f.group
	m.Geography, m.Longitude, m.Latitude, m.PhysicalLocation = f.geography, f.longitude, f.latitude, f.place
	m.PairedRegion = []pairedRegionJS{}
	if f.paired != "" {
		m.PairedRegion = append(m.PairedRegion, pairedRegionJS{Name: f.paired, ID: "/subscriptions/" + sub + "/locations/" + f.paired})
	}
	for i := range region.Zones {
		n := strconv.Itoa(i + 1)
		out.AvailabilityZoneMappings = append(out.AvailabilityZoneMappings, zoneMappingJSON{LogicalZone: n, PhysicalZone: region.Name + "-az" + n})
	}
	return out
}
