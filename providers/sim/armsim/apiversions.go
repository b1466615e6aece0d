// SPDX-License-Identifier: Apache-2.0

package armsim

import (
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
)

// The api-versions the front serves, oldest first, per resource provider
// (or per resource type where the provider versions it apart). Each list is
// the GA versions learn.microsoft.com/azure/templates/<namespace>/allversions
// names for the type, from the oldest one whose request and response shapes
// the SDK models the front parses with still read (armcompute v7): what
// current SDKs and tools send, Go (armcompute v7: 2025-04-01) and Python
// (Debian's azure-mgmt-compute 29.0.0: 2022-08-01, network 2022-07-01,
// resource 2022-09-01) alike. Previews are not served.
var (
	// computeVersions are Microsoft.Compute's versions of its compute
	// types: virtualMachines, proximityPlacementGroups, locations/usages
	// and locations/operations share them.
	computeVersions = []string{
		"2021-03-01", "2021-04-01", "2021-07-01", "2021-11-01",
		"2022-03-01", "2022-08-01", "2022-11-01",
		"2023-03-01", "2023-07-01", "2023-09-01",
		"2024-03-01", "2024-07-01", "2024-11-01",
		"2025-04-01",
	}
	// skuVersions are Resource SKUs' own (2017-03-30 and 2017-09-01 are
	// older shapes the front does not serve).
	skuVersions = []string{"2019-04-01", "2021-07-01"}
	// networkVersions are Microsoft.Network's, which releases often; every
	// type the front serves (virtualNetworks and their subnets,
	// networkInterfaces, locations/operations) shares them.
	networkVersions = []string{
		"2020-11-01", "2021-02-01", "2021-03-01", "2021-05-01", "2021-08-01",
		"2022-01-01", "2022-05-01", "2022-07-01", "2022-09-01", "2022-11-01",
		"2023-02-01", "2023-04-01", "2023-05-01", "2023-06-01", "2023-09-01", "2023-11-01",
		"2024-01-01", "2024-03-01", "2024-05-01", "2024-07-01", "2024-10-01",
		"2025-01-01", "2025-03-01", "2025-05-01",
	}
	// resourcesVersions are Microsoft.Resources', served by ARM itself:
	// resource groups and their operation results.
	resourcesVersions = []string{
		"2020-06-01", "2020-08-01", "2020-10-01", "2021-01-01", "2021-04-01",
		"2022-09-01", "2023-07-01", "2024-03-01", "2024-07-01", "2024-11-01",
		"2025-03-01", "2025-04-01",
	}
)

// APIVersion is the Microsoft.Compute api-version the front writes into
// the URLs it hands out (operations, next links) when the request's own
// cannot be reused: the one armcompute v7 sends.
const APIVersion = "2025-04-01"

// SKUsAPIVersion is the newest Resource SKUs api-version, which armcompute
// v7 and azure-mgmt-compute 29 both send.
const SKUsAPIVersion = "2021-07-01"

// apiVersionFormat is what ARM's front door reads as an api-version at all:
// a date, optionally with a suffix such as -preview.
var apiVersionFormat = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}(-[A-Za-z]+)?$`)

// typeVersions is a resource type as ARM's registry knows it: its
// namespace, its type name as ARM's messages spell it, and its versions.
type typeVersions struct {
	namespace, typ string
	versions       []string
	// armOwned types are served by ARM itself (Microsoft.Resources), which
	// answers an unknown version with InvalidApiVersionParameter instead
	// of a resource provider's registration errors.
	armOwned bool
}

var (
	vmType        = typeVersions{"Microsoft.Compute", "virtualMachines", computeVersions, false}
	ppgTypeV      = typeVersions{"Microsoft.Compute", "proximityPlacementGroups", computeVersions, false}
	usagesType    = typeVersions{"Microsoft.Compute", "locations/usages", computeVersions, false}
	computeOpType = typeVersions{"Microsoft.Compute", "locations/operations", computeVersions, false}
	skusType      = typeVersions{"Microsoft.Compute", "skus", skuVersions, false}
	vnetType      = typeVersions{"Microsoft.Network", "virtualNetworks", networkVersions, false}
	subnetType    = typeVersions{"Microsoft.Network", "virtualNetworks/subnets", networkVersions, false}
	nicType       = typeVersions{"Microsoft.Network", "networkInterfaces", networkVersions, false}
	networkOpType = typeVersions{"Microsoft.Network", "locations/operations", networkVersions, false}
	groupType     = typeVersions{"Microsoft.Resources", "resourceGroups", resourcesVersions, true}
)

// newest is the type's newest version, for URLs the front makes up.
func (t typeVersions) newest() string { return t.versions[len(t.versions)-1] }

// checkVersion reads a request's api-version as ARM's front door does. The
// location, when the request names or implies one, is where a resource
// provider's registration is looked up: ARM then answers a version the
// type does not have there with NoRegisteredProviderFound; without one
// (lists, reads of what does not exist) with InvalidResourceType.
func (s *Server) checkVersion(r *http.Request, t typeVersions, location func() string) (string, *armError) {
	versions, ok := r.URL.Query()["api-version"]
	switch {
	case !ok || len(versions) == 0 || versions[0] == "":
		return "", &armError{Status: http.StatusBadRequest, Code: "MissingApiVersionParameter",
			Message: "The api-version query parameter (?api-version=) is required for all requests."}
	case slices.Contains(t.versions, versions[0]):
		return versions[0], nil
	}
	v := versions[0]
	if t.armOwned || !apiVersionFormat.MatchString(v) {
		own := t
		if !t.armOwned {
			own = groupType
		}
		// ARM lists its own versions newest first, without spaces.
		list := slices.Clone(own.versions)
		slices.Reverse(list)
		return "", &armError{Status: http.StatusBadRequest, Code: "InvalidApiVersionParameter",
			Message: fmt.Sprintf("The api-version '%s' is invalid. The supported versions are '%s'.", v, strings.Join(list, ","))}
	}
	if loc := location(); loc != "" {
		e := s.errNoProvider(loc, t.typ, v, t.versions)
		return "", &e
	}
	return "", &armError{Status: http.StatusNotFound, Code: "InvalidResourceType",
		Message: fmt.Sprintf("The resource type '%s' could not be found in the namespace '%s' for api version '%s'. The supported api-versions are '%s'.",
			t.typ, t.namespace, v, strings.Join(t.versions, ", "))}
}

// errNoProvider is ARM's answer to a location-bound request for a version
// or location the resource type is not registered in.
func (s *Server) errNoProvider(location, typ, version string, versions []string) armError {
	return armError{Status: http.StatusBadRequest, Code: "NoRegisteredProviderFound",
		Message: fmt.Sprintf("No registered resource provider found for location '%s' and API version '%s' for type '%s'. The supported api-versions are '%s'. The supported locations are '%s'.",
			location, version, typ, strings.Join(versions, ", "), strings.Join(locations(s.world.Catalog()), ", "))}
}

// noLocation is checkVersion's location for requests bound to none.
func noLocation() string { return "" }
