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
	OpPolicyDelete:                   "compute.resourcePolicies.delete",
	OpRegionOperationGet:             "compute.regionOperations.get",
	OpRegionOperationWait:            "compute.regionOperations.get",
}

// handler serves one method of the API; args are the project and then
// the path's variable segments, in order.
type handler func(s *Server, w http.ResponseWriter, r *http.Request, args []string) error

// route is a method of the API: its HTTP method and its path after
// "projects/{project}/", "*" standing for a variable segment.
type route struct {
	method  string
	pattern string
	serve   handler
}

var routes = []route{
	{http.MethodGet, "", func(s *Server, w http.ResponseWriter, r *http.Request, a []string) error {
		return s.getProject(w, r, a[0])
	}},

	{http.MethodGet, "zones", func(s *Server, w http.ResponseWriter, r *http.Request, a []string) error {
		return s.listZones(w, r, a[0])
	}},
	{http.MethodGet, "zones/*", func(s *Server, w http.ResponseWriter, r *http.Request, a []string) error {
		return s.getZone(w, r, a[0], a[1])
	}},
	{http.MethodGet, "regions", func(s *Server, w http.ResponseWriter, r *http.Request, a []string) error {
		return s.listRegions(w, r, a[0])
	}},
	{http.MethodGet, "regions/*", func(s *Server, w http.ResponseWriter, r *http.Request, a []string) error {
		return s.getRegion(w, r, a[0], a[1])
	}},

	{http.MethodGet, "aggregated/machineTypes", func(s *Server, w http.ResponseWriter, r *http.Request, a []string) error {
		return s.aggregatedMachineTypes(w, r, a[0])
	}},
	{http.MethodGet, "zones/*/machineTypes", func(s *Server, w http.ResponseWriter, r *http.Request, a []string) error {
		return s.listMachineTypes(w, r, a[0], a[1])
	}},
	{http.MethodGet, "zones/*/machineTypes/*", func(s *Server, w http.ResponseWriter, r *http.Request, a []string) error {
		return s.getMachineType(w, r, a[0], a[1], a[2])
	}},
	{http.MethodGet, "aggregated/acceleratorTypes", func(s *Server, w http.ResponseWriter, r *http.Request, a []string) error {
		return s.aggregatedAccelerators(w, r, a[0])
	}},
	{http.MethodGet, "zones/*/acceleratorTypes", func(s *Server, w http.ResponseWriter, r *http.Request, a []string) error {
		return s.listAccelerators(w, r, a[0], a[1])
	}},
	{http.MethodGet, "zones/*/acceleratorTypes/*", func(s *Server, w http.ResponseWriter, r *http.Request, a []string) error {
		return s.getAccelerator(w, r, a[0], a[1], a[2])
	}},
	{http.MethodGet, "aggregated/diskTypes", func(s *Server, w http.ResponseWriter, r *http.Request, a []string) error {
		return s.aggregatedDiskTypes(w, r, a[0])
	}},
	{http.MethodGet, "zones/*/diskTypes", func(s *Server, w http.ResponseWriter, r *http.Request, a []string) error {
		return s.listDiskTypes(w, r, a[0], a[1])
	}},
	{http.MethodGet, "zones/*/diskTypes/*", func(s *Server, w http.ResponseWriter, r *http.Request, a []string) error {
		return s.getDiskType(w, r, a[0], a[1], a[2])
	}},
	{http.MethodGet, "zones/*/disks/*", func(s *Server, w http.ResponseWriter, r *http.Request, a []string) error {
		return s.getDisk(w, r, a[0], a[1], a[2])
	}},

	{http.MethodGet, "global/images", func(s *Server, w http.ResponseWriter, r *http.Request, a []string) error {
		return s.listImages(w, r, a[0])
	}},
	{http.MethodGet, "global/images/*", func(s *Server, w http.ResponseWriter, r *http.Request, a []string) error {
		return s.getImage(w, r, a[0], a[1])
	}},
	{http.MethodGet, "global/images/family/*", func(s *Server, w http.ResponseWriter, r *http.Request, a []string) error {
		return s.getImageFromFamily(w, r, a[0], a[1])
	}},
	{http.MethodGet, "zones/*/imageFamilyViews/*", func(s *Server, w http.ResponseWriter, r *http.Request, a []string) error {
		return s.getImageFamilyView(w, r, a[0], a[1], a[2])
	}},

	{http.MethodGet, "global/networks", func(s *Server, w http.ResponseWriter, r *http.Request, a []string) error {
		return s.listNetworks(w, r, a[0])
	}},
	{http.MethodPost, "global/networks", func(s *Server, w http.ResponseWriter, r *http.Request, a []string) error {
		return s.insertNetwork(w, r, a[0])
	}},
	{http.MethodGet, "global/networks/*", func(s *Server, w http.ResponseWriter, r *http.Request, a []string) error {
		return s.getNetwork(w, r, a[0], a[1])
	}},
	{http.MethodDelete, "global/networks/*", func(s *Server, w http.ResponseWriter, r *http.Request, a []string) error {
		return s.deleteNetwork(w, r, a[0], a[1])
	}},
	{http.MethodGet, "aggregated/subnetworks", func(s *Server, w http.ResponseWriter, r *http.Request, a []string) error {
		return s.aggregatedSubnetworks(w, r, a[0])
	}},
	{http.MethodGet, "regions/*/subnetworks", func(s *Server, w http.ResponseWriter, r *http.Request, a []string) error {
		return s.listSubnetworks(w, r, a[0], a[1])
	}},
	{http.MethodPost, "regions/*/subnetworks", func(s *Server, w http.ResponseWriter, r *http.Request, a []string) error {
		return s.insertSubnetwork(w, r, a[0], a[1])
	}},
	{http.MethodGet, "regions/*/subnetworks/*", func(s *Server, w http.ResponseWriter, r *http.Request, a []string) error {
		return s.getSubnetwork(w, r, a[0], a[1], a[2])
	}},
	{http.MethodDelete, "regions/*/subnetworks/*", func(s *Server, w http.ResponseWriter, r *http.Request, a []string) error {
		return s.deleteSubnetwork(w, r, a[0], a[1], a[2])
	}},
	{http.MethodGet, "global/operations/*", func(s *Server, w http.ResponseWriter, r *http.Request, a []string) error {
		return s.getGlobalOperation(w, r, a[0], a[1])
	}},
	{http.MethodPost, "global/operations/*/wait", func(s *Server, w http.ResponseWriter, r *http.Request, a []string) error {
		return s.waitGlobalOperation(w, r, a[0], a[1])
	}},

	{http.MethodGet, "regions/*/resourcePolicies", func(s *Server, w http.ResponseWriter, r *http.Request, a []string) error {
		return s.listPolicies(w, r, a[0], a[1])
	}},
	{http.MethodPost, "regions/*/resourcePolicies", func(s *Server, w http.ResponseWriter, r *http.Request, a []string) error {
		return s.insertPolicy(w, r, a[0], a[1])
	}},
	{http.MethodGet, "regions/*/resourcePolicies/*", func(s *Server, w http.ResponseWriter, r *http.Request, a []string) error {
		return s.getPolicy(w, r, a[0], a[1], a[2])
	}},
	{http.MethodDelete, "regions/*/resourcePolicies/*", func(s *Server, w http.ResponseWriter, r *http.Request, a []string) error {
		return s.deletePolicy(w, r, a[0], a[1], a[2])
	}},
	{http.MethodGet, "regions/*/operations/*", func(s *Server, w http.ResponseWriter, r *http.Request, a []string) error {
		return s.getRegionOperation(w, r, a[0], a[1], a[2])
	}},
	{http.MethodPost, "regions/*/operations/*/wait", func(s *Server, w http.ResponseWriter, r *http.Request, a []string) error {
		return s.waitRegionOperation(w, r, a[0], a[1], a[2])
	}},

	{http.MethodGet, "aggregated/instances", func(s *Server, w http.ResponseWriter, r *http.Request, a []string) error {
		return s.aggregatedList(w, r, a[0])
	}},
	{http.MethodGet, "zones/*/instances", func(s *Server, w http.ResponseWriter, r *http.Request, a []string) error {
		return s.zoneList(w, r, a[0], a[1])
	}},
	{http.MethodPost, "zones/*/instances", func(s *Server, w http.ResponseWriter, r *http.Request, a []string) error {
		return s.insert(w, r, a[0], a[1])
	}},
	{http.MethodPost, "zones/*/instances/bulkInsert", func(s *Server, w http.ResponseWriter, r *http.Request, a []string) error {
		return s.bulkInsert(w, r, a[0], a[1])
	}},
	{http.MethodGet, "zones/*/instances/*", func(s *Server, w http.ResponseWriter, r *http.Request, a []string) error {
		return s.get(w, r, a[0], a[1], a[2])
	}},
	{http.MethodDelete, "zones/*/instances/*", func(s *Server, w http.ResponseWriter, r *http.Request, a []string) error {
		return s.delete(w, r, a[0], a[1], a[2])
	}},
	{http.MethodGet, "aggregated/operations", func(s *Server, w http.ResponseWriter, r *http.Request, a []string) error {
		return s.aggregatedOperations(w, r, a[0])
	}},
	{http.MethodGet, "zones/*/operations", func(s *Server, w http.ResponseWriter, r *http.Request, a []string) error {
		return s.listOperations(w, r, a[0], a[1])
	}},
	{http.MethodGet, "zones/*/operations/*", func(s *Server, w http.ResponseWriter, r *http.Request, a []string) error {
		return s.getOperation(w, r, a[0], a[1], a[2])
	}},
	{http.MethodPost, "zones/*/operations/*/wait", func(s *Server, w http.ResponseWriter, r *http.Request, a []string) error {
		return s.waitOperation(w, r, a[0], a[1], a[2])
	}},
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
