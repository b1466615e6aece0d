// SPDX-License-Identifier: Apache-2.0

package armsim

import (
	"net/http"
	"slices"
	"testing"

	"github.com/gpufleet/gpufleet/schema/catalog"
)

// A subscription describes itself as an enabled one of the emulator's
// tenant, and lists as its locations the catalog's Azure regions, each
// with the names and metadata Azure gives it.
func TestSubscription(t *testing.T) {
	f := newFront(t, frontConfig{})
	sub := "/subscriptions/" + testSub
	for _, version := range []string{"2022-12-01", "2021-01-01", "2020-01-01"} {
		t.Run(version, func(t *testing.T) {
			a := f.call(t, http.MethodGet, sub+"?api-version="+version, nil)
			a.want(t, "subscription", http.StatusOK, "")
			for path, want := range map[string]string{
				"id": sub, "subscriptionId": testSub, "state": "Enabled", "displayName": subscriptionName, "tenantId": emulatorTenant,
				"subscriptionPolicies.spendingLimit": "Off", "subscriptionPolicies.quotaId": "PayAsYouGo_2014-09-01",
			} {
				if got := a.get(path); got != want {
					t.Errorf("%s %q, want %q", path, got, want)
				}
			}

			l := f.call(t, http.MethodGet, sub+"/locations?api-version="+version, nil)
			l.want(t, "locations", http.StatusOK, "")
			var names []string
			for _, v := range l.body["value"].([]any) {
				loc := armResponse{body: v.(map[string]any)}
				names = append(names, loc.get("name"))
				if loc.get("id") != sub+"/locations/"+loc.get("name") || loc.get("metadata.regionType") != "Physical" || loc.get("displayName") == "" {
					t.Errorf("location %v", loc.body)
				}
				if loc.get("name") == "eastus" && (loc.get("displayName") != "East US" || loc.get("regionalDisplayName") != "(US) East US" ||
					loc.get("metadata.geographyGroup") != "US" || loc.get("metadata.physicalLocation") != "Virginia") {
					t.Errorf("eastus %v", loc.body)
				}
			}
			if want := locations(catalog.Default()); !slices.Equal(names, want) {
				t.Errorf("locations %v, want the catalog's %v", names, want)
			}
		})
	}
	f.call(t, http.MethodGet, sub+"?api-version=2025-04-01", nil).want(t, "a version subscriptions do not have", http.StatusBadRequest, "InvalidApiVersionParameter")
	f.call(t, http.MethodPut, sub+"?api-version=2022-12-01", map[string]any{}).want(t, "a PUT", http.StatusMethodNotAllowed, "MethodNotAllowed")
}

// A catalog's region Azure's table does not describe is still listed,
// named as the catalog names it.
func TestLocationOfAnotherCatalog(t *testing.T) {
	loc := renderLocation(testSub, catalog.Region{Cloud: catalog.Azure, Name: "canadacentral", Geo: "ca", Zones: []string{"a", "b"}})
	if loc.DisplayName != "canadacentral" || loc.Metadata.GeographyGroup != "Canada" || loc.RegionalDisplayName != "(Canada) canadacentral" ||
		len(loc.AvailabilityZoneMappings) != 2 || loc.AvailabilityZoneMappings[1].LogicalZone != "2" {
		t.Errorf("location %+v", loc)
	}
}
