package gcesim

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
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

	OpRegionGet                  = "regions.get"
	OpProjectGet                 = "projects.get"
	OpMachineTypeGet             = "machineTypes.get"
	OpMachineTypesList           = "machineTypes.list"
	OpMachineTypesAggregatedList = "machineTypes.aggregatedList"
	OpDiskGet                    = "disks.get"

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
	OpInsert:                     "compute.instances.create",
	OpBulkInsert:                 "compute.instances.create",
	OpGet:                        "compute.instances.get",
	OpDelete:                     "compute.instances.delete",
	OpAggregatedList:             "compute.instances.list",
	OpList:                       "compute.instances.list",
	OpOperationGet:               "compute.zoneOperations.get",
	OpOperationWait:              "compute.zoneOperations.get",
	OpRegionGet:                  "compute.regions.get",
	OpProjectGet:                 "compute.projects.get",
	OpMachineTypeGet:             "compute.machineTypes.get",
	OpMachineTypesList:           "compute.machineTypes.list",
	OpMachineTypesAggregatedList: "compute.machineTypes.list",
	OpDiskGet:                    "compute.disks.get",
	OpPolicyInsert:               "compute.resourcePolicies.create",
	OpPolicyGet:                  "compute.resourcePolicies.get",
	OpPolicyList:                 "compute.resourcePolicies.list",
	OpPolicyDelete:               "compute.resourcePolicies.delete",
	OpRegionOperationGet:         "compute.regionOperations.get",
	OpRegionOperationWait:        "compute.regionOperations.get",
}

// cloud is the world's name for Compute Engine.
const cloud = catalog.GCP

// apiBase prefixes every selfLink and resource URL, as the real API writes
// them whatever endpoint was called; the SDK builds its request URLs from
// its own endpoint, never from these.
const apiBase = "https://www.googleapis.com/compute/v1/"

// maxBody caps request bodies. An instance resource is a few kilobytes
// beside its metadata, which may hold 512 KiB, and JSON escaping can make
// that several times larger on the wire: the cap leaves the metadata
// limits to refuse what is too big, with GCE's own errors.
const maxBody = 4 << 20

// Options tunes a Server. The zero value is usable.
type Options struct {
	// WaitTimeout caps, on the real clock, how long operations.wait blocks.
	// The real API waits up to two minutes; so does the emulator in world
	// time, but a world on a manual clock would never get there. Zero means
	// 5 seconds.
	WaitTimeout time.Duration
	// PollInterval is how often operations.wait looks at the world. Zero
	// means 10ms.
	PollInterval time.Duration
	// User is the principal operations report as their author. Empty means
	// a made-up service account.
	User string
}

// Server is the Compute Engine front. It never listens; serve it with
// net/http or httptest.
type Server struct {
	world *sim.World
	opts  Options
	// policies are the projects' resource policies, which the front
	// keeps itself: the world knows instances only.
	policies *policyStore
	// panics counts requests that reached the last-resort recovery; tests
	// assert that no input does.
	panics atomic.Int64
}

var _ http.Handler = (*Server)(nil)

// New returns a front over world.
func New(world *sim.World, opts Options) *Server {
	if opts.WaitTimeout <= 0 {
		opts.WaitTimeout = 5 * time.Second
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = 10 * time.Millisecond
	}
	if opts.User == "" {
		opts.User = "gpufleet@gpufleet-sim.iam.gserviceaccount.com"
	}
	return &Server{world: world, opts: opts, policies: newPolicyStore()}
}

// ServeHTTP routes a compute/v1 request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.panics.Add(1)
			writeError(w, &apiError{Status: http.StatusInternalServerError, Reason: "backendError", Message: "Internal error. Please try again or contact Google Support."})
		}
	}()
	r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	r = withProject(r)
	if err := s.route(w, r); err != nil {
		if errors.Is(err, errClientGone) {
			return
		}
		writeError(w, asAPIError(err))
	}
}

func (s *Server) route(w http.ResponseWriter, r *http.Request) error {
	rest, ok := strings.CutPrefix(r.URL.Path, "/compute/v1/")
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
	project := seg[1]
	switch {
	case len(seg) == 2 && r.Method == http.MethodGet:
		return s.getProject(w, r, project)
	case len(seg) == 4 && seg[2] == "regions" && r.Method == http.MethodGet:
		return s.getRegion(w, r, project, seg[3])
	case len(seg) == 5 && seg[2] == "regions" && seg[4] == "resourcePolicies" && r.Method == http.MethodGet:
		return s.listPolicies(w, r, project, seg[3])
	case len(seg) == 5 && seg[2] == "regions" && seg[4] == "resourcePolicies" && r.Method == http.MethodPost:
		return s.insertPolicy(w, r, project, seg[3])
	case len(seg) == 6 && seg[2] == "regions" && seg[4] == "resourcePolicies" && r.Method == http.MethodGet:
		return s.getPolicy(w, r, project, seg[3], seg[5])
	case len(seg) == 6 && seg[2] == "regions" && seg[4] == "resourcePolicies" && r.Method == http.MethodDelete:
		return s.deletePolicy(w, r, project, seg[3], seg[5])
	case len(seg) == 6 && seg[2] == "regions" && seg[4] == "operations" && r.Method == http.MethodGet:
		return s.getRegionOperation(w, r, project, seg[3], seg[5])
	case len(seg) == 7 && seg[2] == "regions" && seg[4] == "operations" && seg[6] == "wait" && r.Method == http.MethodPost:
		return s.waitRegionOperation(w, r, project, seg[3], seg[5])
	case len(seg) == 4 && seg[2] == "aggregated" && seg[3] == "machineTypes" && r.Method == http.MethodGet:
		return s.aggregatedMachineTypes(w, r, project)
	case len(seg) == 5 && seg[2] == "zones" && seg[4] == "machineTypes" && r.Method == http.MethodGet:
		return s.listMachineTypes(w, r, project, seg[3])
	case len(seg) == 6 && seg[2] == "zones" && seg[4] == "machineTypes" && r.Method == http.MethodGet:
		return s.getMachineType(w, r, project, seg[3], seg[5])
	case len(seg) == 4 && seg[2] == "aggregated" && seg[3] == "instances" && r.Method == http.MethodGet:
		return s.aggregatedList(w, r, project)
	case len(seg) == 5 && seg[2] == "zones" && seg[4] == "instances" && r.Method == http.MethodGet:
		return s.zoneList(w, r, project, seg[3])
	case len(seg) == 5 && seg[2] == "zones" && seg[4] == "instances" && r.Method == http.MethodPost:
		return s.insert(w, r, project, seg[3])
	case len(seg) == 6 && seg[2] == "zones" && seg[4] == "instances" && seg[5] == "bulkInsert" && r.Method == http.MethodPost:
		return s.bulkInsert(w, r, project, seg[3])
	case len(seg) == 6 && seg[2] == "zones" && seg[4] == "instances" && r.Method == http.MethodGet:
		return s.get(w, r, project, seg[3], seg[5])
	case len(seg) == 6 && seg[2] == "zones" && seg[4] == "instances" && r.Method == http.MethodDelete:
		return s.delete(w, r, project, seg[3], seg[5])
	case len(seg) == 6 && seg[2] == "zones" && seg[4] == "disks" && r.Method == http.MethodGet:
		return s.getDisk(w, r, project, seg[3], seg[5])
	case len(seg) == 6 && seg[2] == "zones" && seg[4] == "operations" && r.Method == http.MethodGet:
		return s.getOperation(w, r, project, seg[3], seg[5])
	case len(seg) == 7 && seg[2] == "zones" && seg[4] == "operations" && seg[6] == "wait" && r.Method == http.MethodPost:
		return s.waitOperation(w, r, project, seg[3], seg[5])
	}
	return notFoundRoute(r)
}

func containsEmpty(seg []string) bool {
	for _, s := range seg {
		if s == "" {
			return true
		}
	}
	return false
}

// notFoundRoute answers paths and methods the API does not have, as
// Google's front end does, with a 404.
func notFoundRoute(r *http.Request) error {
	return &apiError{Status: http.StatusNotFound, Reason: "notFound", Message: fmt.Sprintf("The requested URL %s was not found on this server.", r.URL.Path)}
}

// errClientGone ends a request whose caller left while it was delayed;
// nobody is there to answer.
var errClientGone = errors.New("client gone")

// intercept reports the call to the world's rate limits and faults and
// applies their latency. Every request calls it exactly once.
func (s *Server) intercept(ctx context.Context, call sim.Call) (sim.Outcome, error) {
	call.Cloud = cloud
	call.Class, call.Tenant = requestClass(call.Op), projectFrom(ctx)
	out := s.world.Intercept(call)
	if out.Latency > 0 {
		t := time.NewTimer(out.Latency)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return out, errClientGone
		case <-t.C:
		}
	}
	return out, nil
}

// region is the region of a catalog zone, or "" for a zone that does not
// exist.
func (s *Server) region(zone string) string {
	region, _ := s.world.ZoneRegion(cloud, zone)
	return region
}

// zoneExists answers GCE's 404 for zones the catalog does not have.
func (s *Server) zoneExists(project, zone string) *apiError {
	if s.region(zone) == "" {
		return notFound("projects/" + project + "/zones/" + zone)
	}
	return nil
}

var marshal = protojson.MarshalOptions{}

func writeProto(w http.ResponseWriter, m proto.Message) error {
	body, err := marshal.Marshal(m)
	if err != nil {
		return fmt.Errorf("marshalling %T, %w", m, err)
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
	return nil
}

// scope is the world's Scope for instances of a project's zone: GCE names
// are unique per project and zone, and the world checks names per scope.
func scope(project, zone string) string { return "projects/" + project + "/zones/" + zone }

// projectOf reads the project back out of a scope.
func projectOf(scope string) string {
	rest, _ := strings.CutPrefix(scope, "projects/")
	project, _, _ := strings.Cut(rest, "/")
	return project
}

func zoneURL(project, zone string) string { return apiBase + scope(project, zone) }

func instanceURL(project, zone, name string) string {
	return zoneURL(project, zone) + "/instances/" + name
}

// timestamp formats times as GCE does: RFC 3339 with milliseconds and a
// numeric offset.
func timestamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000-07:00") }
