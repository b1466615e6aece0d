// SPDX-License-Identifier: Apache-2.0

package gcesim

import (
	"net/http"
	"net/url"
	"strings"
)

// The operations a fault can name in its "op" field, after the API's own
// method names.
const (
	OpInsert         = "instances.insert"
	OpBulkInsert     = "instances.bulkInsert"
	OpGet            = "instances.get"
	OpDelete         = "instances.delete"
	OpSetLabels      = "instances.setLabels"
	OpAggregatedList = "instances.aggregatedList"
	OpList           = "instances.list"
	OpOperationGet   = "zoneOperations.get"
	OpOperationWait  = "zoneOperations.wait"
	OpOperationsList = "zoneOperations.list"

	OpOperationsAggregatedList = "globalOperations.aggregatedList"

	OpZoneGet                        = "zones.get"
	OpZonesList                      = "zones.list"
	OpRegionGet                      = "regions.get"
	OpRegionsList                    = "regions.list"
	OpProjectGet                     = "projects.get"
	OpMachineTypeGet                 = "machineTypes.get"
	OpMachineTypesList               = "machineTypes.list"
	OpMachineTypesAggregatedList     = "machineTypes.aggregatedList"
	OpAcceleratorTypeGet             = "acceleratorTypes.get"
	OpAcceleratorTypesList           = "acceleratorTypes.list"
	OpAcceleratorTypesAggregatedList = "acceleratorTypes.aggregatedList"
	OpDiskTypeGet                    = "diskTypes.get"
	OpDiskTypesList                  = "diskTypes.list"
	OpDiskTypesAggregatedList        = "diskTypes.aggregatedList"
	OpDiskGet                        = "disks.get"
	OpImageGet                       = "images.get"
	OpImageGetFromFamily             = "images.getFromFamily"
	OpImageList                      = "images.list"
	OpImageFamilyViewGet             = "imageFamilyViews.get"

	OpNetworkInsert            = "networks.insert"
	OpNetworkGet               = "networks.get"
	OpNetworkList              = "networks.list"
	OpNetworkDelete            = "networks.delete"
	OpSubnetworkInsert         = "subnetworks.insert"
	OpSubnetworkGet            = "subnetworks.get"
	OpSubnetworkList           = "subnetworks.list"
	OpSubnetworkAggregatedList = "subnetworks.aggregatedList"
	OpSubnetworkDelete         = "subnetworks.delete"
	OpGlobalOperationGet       = "globalOperations.get"
	OpGlobalOperationWait      = "globalOperations.wait"

	OpPolicyInsert        = "resourcePolicies.insert"
	OpPolicyGet           = "resourcePolicies.get"
	OpPolicyList          = "resourcePolicies.list"
	OpPolicyAggregated    = "resourcePolicies.aggregatedList"
	OpPolicyDelete        = "resourcePolicies.delete"
	OpRegionOperationGet  = "regionOperations.get"
	OpRegionOperationWait = "regionOperations.wait"
)

// permissions is the IAM permission each operation needs, which a denial
// names.
var permissions = map[string]string{
	OpInsert:                         "compute.instances.create",
	OpBulkInsert:                     "compute.instances.create",
	OpGet:                            "compute.instances.get",
	OpDelete:                         "compute.instances.delete",
	OpSetLabels:                      "compute.instances.setLabels",
	OpAggregatedList:                 "compute.instances.list",
	OpList:                           "compute.instances.list",
	OpOperationGet:                   "compute.zoneOperations.get",
	OpOperationWait:                  "compute.zoneOperations.get",
	OpOperationsList:                 "compute.zoneOperations.list",
	OpOperationsAggregatedList:       "compute.globalOperations.list",
	OpZoneGet:                        "compute.zones.get",
	OpZonesList:                      "compute.zones.list",
	OpRegionGet:                      "compute.regions.get",
	OpRegionsList:                    "compute.regions.list",
	OpProjectGet:                     "compute.projects.get",
	OpMachineTypeGet:                 "compute.machineTypes.get",
	OpMachineTypesList:               "compute.machineTypes.list",
	OpMachineTypesAggregatedList:     "compute.machineTypes.list",
	OpAcceleratorTypeGet:             "compute.acceleratorTypes.get",
	OpAcceleratorTypesList:           "compute.acceleratorTypes.list",
	OpAcceleratorTypesAggregatedList: "compute.acceleratorTypes.list",
	OpDiskTypeGet:                    "compute.diskTypes.get",
	OpDiskTypesList:                  "compute.diskTypes.list",
	OpDiskTypesAggregatedList:        "compute.diskTypes.list",
	OpDiskGet:                        "compute.disks.get",
	OpImageGet:                       "compute.images.get",
	OpImageGetFromFamily:             "compute.images.getFromFamily",
	OpImageList:                      "compute.images.list",
	OpImageFamilyViewGet:             "compute.imageFamilyViews.get",
	OpNetworkInsert:                  "compute.networks.create",
	OpNetworkGet:                     "compute.networks.get",
	OpNetworkList:                    "compute.networks.list",
	OpNetworkDelete:                  "compute.networks.delete",
	OpSubnetworkInsert:               "compute.subnetworks.create",
	OpSubnetworkGet:                  "compute.subnetworks.get",
	OpSubnetworkList:                 "compute.subnetworks.list",
	OpSubnetworkAggregatedList:       "compute.subnetworks.list",
	OpSubnetworkDelete:               "compute.subnetworks.delete",
	OpGlobalOperationGet:             "compute.globalOperations.get",
	OpGlobalOperationWait:            "compute.globalOperations.get",
	OpPolicyInsert:                   "compute.resourcePolicies.create",
	OpPolicyGet:                      "compute.resourcePolicies.get",
	OpPolicyList:                     "compute.resourcePolicies.list",
	OpPolicyAggregated:               "compute.resourcePolicies.list",
	OpPolicyDelete:                   "compute.resourcePolicies.delete",
	OpRegionOperationGet:             "compute.regionOperations.get",
	OpRegionOperationWait:            "compute.regionOperations.get",
}

// handler serves one method of the API; args are the project and then
// the path's variable segments, in order.
type handler func(s *Server, w http.ResponseWriter, r *http.Request, args []string) error

// serve0, serve1 and serve2 make a handler of a method that takes the
// project and then none, one or two of the path's variable segments, so
// that the table names the methods it routes to.
func serve0(serve func(*Server, http.ResponseWriter, *http.Request, string) error) handler {
	return func(s *Server, w http.ResponseWriter, r *http.Request, a []string) error {
		return serve(s, w, r, a[0])
	}
}

func serve1(serve func(*Server, http.ResponseWriter, *http.Request, string, string) error) handler {
	return func(s *Server, w http.ResponseWriter, r *http.Request, a []string) error {
		return serve(s, w, r, a[0], a[1])
	}
}

func serve2(serve func(*Server, http.ResponseWriter, *http.Request, string, string, string) error) handler {
	return func(s *Server, w http.ResponseWriter, r *http.Request, a []string) error {
		return serve(s, w, r, a[0], a[1], a[2])
	}
}

// route is a method of the API: its HTTP method and its path after
// "projects/{project}/", "*" standing for a variable segment.
type route struct {
	method  string
	pattern string
	serve   handler
}

var routes = []route{
	{http.MethodGet, "", serve0((*Server).getProject)},

	{http.MethodGet, "zones", serve0((*Server).listZones)},
	{http.MethodGet, "zones/*", serve1((*Server).getZone)},
	{http.MethodGet, "regions", serve0((*Server).listRegions)},
	{http.MethodGet, "regions/*", serve1((*Server).getRegion)},

	{http.MethodGet, "aggregated/machineTypes", serve0((*Server).aggregatedMachineTypes)},
	{http.MethodGet, "zones/*/machineTypes", serve1((*Server).listMachineTypes)},
	{http.MethodGet, "zones/*/machineTypes/*", serve2((*Server).getMachineType)},
	{http.MethodGet, "aggregated/acceleratorTypes", serve0((*Server).aggregatedAccelerators)},
	{http.MethodGet, "zones/*/acceleratorTypes", serve1((*Server).listAccelerators)},
	{http.MethodGet, "zones/*/acceleratorTypes/*", serve2((*Server).getAccelerator)},
	{http.MethodGet, "aggregated/diskTypes", serve0((*Server).aggregatedDiskTypes)},
	{http.MethodGet, "zones/*/diskTypes", serve1((*Server).listDiskTypes)},
	{http.MethodGet, "zones/*/diskTypes/*", serve2((*Server).getDiskType)},
	{http.MethodGet, "zones/*/disks/*", serve2((*Server).getDisk)},

	{http.MethodGet, "global/images", serve0((*Server).listImages)},
	{http.MethodGet, "global/images/*", serve1((*Server).getImage)},
	{http.MethodGet, "global/images/family/*", serve1((*Server).getImageFromFamily)},
	{http.MethodGet, "zones/*/imageFamilyViews/*", serve2((*Server).getImageFamilyView)},

	{http.MethodGet, "global/networks", serve0((*Server).listNetworks)},
	{http.MethodPost, "global/networks", serve0((*Server).insertNetwork)},
	{http.MethodGet, "global/networks/*", serve1((*Server).getNetwork)},
	{http.MethodDelete, "global/networks/*", serve1((*Server).deleteNetwork)},
	{http.MethodGet, "aggregated/subnetworks", serve0((*Server).aggregatedSubnetworks)},
	{http.MethodGet, "regions/*/subnetworks", serve1((*Server).listSubnetworks)},
	{http.MethodPost, "regions/*/subnetworks", serve1((*Server).insertSubnetwork)},
	{http.MethodGet, "regions/*/subnetworks/*", serve2((*Server).getSubnetwork)},
	{http.MethodDelete, "regions/*/subnetworks/*", serve2((*Server).deleteSubnetwork)},
	{http.MethodGet, "global/operations/*", serve1((*Server).getGlobalOperation)},
	{http.MethodPost, "global/operations/*/wait", serve1((*Server).waitGlobalOperation)},

	{http.MethodGet, "aggregated/resourcePolicies", serve0((*Server).aggregatedPolicies)},
	{http.MethodGet, "regions/*/resourcePolicies", serve1((*Server).listPolicies)},
	{http.MethodPost, "regions/*/resourcePolicies", serve1((*Server).insertPolicy)},
	{http.MethodGet, "regions/*/resourcePolicies/*", serve2((*Server).getPolicy)},
	{http.MethodDelete, "regions/*/resourcePolicies/*", serve2((*Server).deletePolicy)},
	{http.MethodPost, "regions/*/instances/bulkInsert", serve1((*Server).regionalBulkInsert)},
	{http.MethodGet, "regions/*/operations/*", serve2((*Server).getRegionOperation)},
	{http.MethodPost, "regions/*/operations/*/wait", serve2((*Server).waitRegionOperation)},

	{http.MethodGet, "aggregated/instances", serve0((*Server).aggregatedList)},
	{http.MethodGet, "zones/*/instances", serve1((*Server).zoneList)},
	{http.MethodPost, "zones/*/instances", serve1((*Server).insert)},
	{http.MethodPost, "zones/*/instances/bulkInsert", serve1((*Server).bulkInsert)},
	{http.MethodGet, "zones/*/instances/*", serve2((*Server).get)},
	{http.MethodDelete, "zones/*/instances/*", serve2((*Server).delete)},
	{http.MethodPost, "zones/*/instances/*/setLabels", serve2((*Server).setLabels)},
	{http.MethodGet, "aggregated/operations", serve0((*Server).aggregatedOperations)},
	{http.MethodGet, "zones/*/operations", serve1((*Server).listOperations)},
	{http.MethodGet, "zones/*/operations/*", serve2((*Server).getOperation)},
	{http.MethodPost, "zones/*/operations/*/wait", serve2((*Server).waitOperation)},
}

// route finds the method a request calls and serves it.
func (s *Server) route(w http.ResponseWriter, r *http.Request) error {
	rest, ok := strings.CutPrefix(r.URL.Path, apiPath)
	if !ok {
		return notFoundRoute(r)
	}
	seg := strings.Split(rest, "/")
	if len(seg) < 2 || seg[0] != "projects" || seg[1] == "" || containsEmpty(seg) {
		return notFoundRoute(r)
	}
	if _, err := url.ParseQuery(r.URL.RawQuery); err != nil {
		return &apiError{Status: http.StatusBadRequest, Reason: "invalid", Message: "Invalid query string: " + r.URL.RawQuery}
	}
	for _, rt := range routes {
		if rt.method != r.Method {
			continue
		}
		if args, ok := match(rt.pattern, seg[2:]); ok {
			return rt.serve(s, w, r, append([]string{seg[1]}, args...))
		}
	}
	return notFoundRoute(r)
}

// match matches a path's segments against a pattern and returns the
// variable ones.
func match(pattern string, seg []string) ([]string, bool) {
	var want []string
	if pattern != "" {
		want = strings.Split(pattern, "/")
	}
	if len(want) != len(seg) {
		return nil, false
	}
	var args []string
	for i, w := range want {
		switch {
		case w == "*":
			args = append(args, seg[i])
		case w != seg[i]:
			return nil, false
		}
	}
	return args, true
}

func containsEmpty(seg []string) bool {
	for _, s := range seg {
		if s == "" {
			return true
		}
	}
	return false
}
