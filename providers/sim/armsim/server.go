package armsim

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// APIVersion is the one Microsoft.Compute api-version the front serves: the
// one armcompute v7 sends.
const APIVersion = "2025-04-01"

// SKUsAPIVersion is the api-version of Resource SKUs, which Compute
// versions apart from the rest: the newest stable one, which armcompute v7
// sends.
const SKUsAPIVersion = "2021-07-01"

const (
	cloud        = catalog.Azure
	resourceType = "Microsoft.Compute/virtualMachines"
	// maxBody caps request bodies; ARM's own limit is 4 MB, a VM needs a
	// few KB.
	maxBody = 1 << 20
)

// Ops the front reports to sim.World.Intercept, so fault files can target
// them ("op": "put") and World.Calls counts them ("azure put").
const (
	OpPut          = "put"
	OpGet          = "get"
	OpDelete       = "delete"
	OpInstanceView = "instanceView"
	OpList         = "list"
	OpListAll      = "listAll"
	OpOperation    = "operation"
	OpUsages       = "usages"
	OpSKUs         = "skus"
	// Proximity placement groups.
	OpPPGPut    = "ppgPut"
	OpPPGGet    = "ppgGet"
	OpPPGDelete = "ppgDelete"
	OpPPGList   = "ppgList"
)

// Options tunes a Server. The zero value is ARM's behaviour.
type Options struct {
	// PageSize is how many items a list page holds: VMs, usages or SKUs.
	// Zero means 50.
	PageSize int
	// ThrottleRetryAfter is the Retry-After a 429 carries, sent in whole
	// seconds as ARM does. Zero means one second.
	ThrottleRetryAfter time.Duration
}

// Server answers ARM requests for virtual machines from a sim.World.
type Server struct {
	world *sim.World
	opts  Options
	// requests numbers responses for x-ms-request-id.
	requests atomic.Uint64
	// panics counts requests that reached the last-resort recover; tests
	// assert it stays zero.
	panics atomic.Int64
	models modelCache
	ppgs   ppgStore
}

// New returns a front for world.
func New(world *sim.World, opts Options) *Server {
	if opts.PageSize <= 0 {
		opts.PageSize = 50
	}
	if opts.ThrottleRetryAfter <= 0 {
		opts.ThrottleRetryAfter = time.Second
	}
	return &Server{world: world, opts: opts}
}

var _ http.Handler = (*Server)(nil)

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer func() {
		if v := recover(); v != nil {
			s.panics.Add(1)
			s.writeError(w, armError{Status: http.StatusInternalServerError, Code: "InternalServerError",
				Message: fmt.Sprintf("Encountered internal server error: %v", v)})
		}
	}()
	n := s.requests.Add(1)
	w.Header().Set("x-ms-request-id", fmt.Sprintf("00000000-0000-4000-8000-%012x", n))
	if id := r.Header.Get("x-ms-client-request-id"); id != "" {
		w.Header().Set("x-ms-client-request-id", id)
	}
	if r.Body != nil {
		r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	}
	s.route(w, r)
}

// route dispatches on the path. ARM matches the fixed segments of a path
// case-insensitively, and so does the front.
func (s *Server) route(w http.ResponseWriter, r *http.Request) {
	seg := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	is := func(i int, word string) bool { return i < len(seg) && strings.EqualFold(seg[i], word) }
	if len(seg) < 2 || !is(0, "subscriptions") || slices.Contains(seg, "") {
		s.writeError(w, errNoRoute(r.URL.Path))
		return
	}
	sub := seg[1]
	switch {
	case len(seg) >= 6 && is(2, "resourceGroups") && is(4, "providers"):
		vm := vmRef{Subscription: sub, ResourceGroup: seg[3]}
		if !is(5, "Microsoft.Compute") {
			s.writeError(w, errNamespace(seg[5]))
			return
		}
		switch {
		case len(seg) == 7 && is(6, "virtualMachines"):
			s.serve(w, r, http.MethodGet, func() { s.list(w, r, sub, vm.ResourceGroup) })
		case len(seg) == 8 && is(6, "virtualMachines"):
			vm.Name = seg[7]
			s.serve(w, r, "", func() {
				switch r.Method {
				case http.MethodPut:
					s.putVM(w, r, vm)
				case http.MethodGet:
					s.getVM(w, r, vm)
				case http.MethodDelete:
					s.deleteVM(w, r, vm)
				default:
					s.writeError(w, errMethod(r.Method))
				}
			})
		case len(seg) == 7 && is(6, "proximityPlacementGroups"):
			s.serve(w, r, http.MethodGet, func() { s.listPPGs(w, r, sub, vm.ResourceGroup) })
		case len(seg) == 8 && is(6, "proximityPlacementGroups"):
			g := ppgRef{Subscription: sub, ResourceGroup: seg[3], Name: seg[7]}
			s.serve(w, r, "", func() {
				switch r.Method {
				case http.MethodPut:
					s.putPPG(w, r, g)
				case http.MethodGet:
					s.getPPG(w, r, g)
				case http.MethodDelete:
					s.deletePPG(w, r, g)
				default:
					s.writeError(w, errMethod(r.Method))
				}
			})
		case len(seg) == 9 && is(6, "virtualMachines") && is(8, "instanceView"):
			vm.Name = seg[7]
			s.serve(w, r, http.MethodGet, func() { s.instanceView(w, r, vm) })
		default:
			s.writeError(w, errResourceType(seg[6:]))
		}
	case len(seg) >= 4 && is(2, "providers"):
		if !is(3, "Microsoft.Compute") {
			s.writeError(w, errNamespace(seg[3]))
			return
		}
		switch {
		case len(seg) == 5 && is(4, "virtualMachines"):
			s.serve(w, r, http.MethodGet, func() { s.list(w, r, sub, "") })
		case len(seg) == 8 && is(4, "locations") && is(6, "operations"):
			s.serve(w, r, http.MethodGet, func() { s.operation(w, r, sub, seg[5], seg[7]) })
		case len(seg) == 7 && is(4, "locations") && is(6, "usages"):
			s.serve(w, r, http.MethodGet, func() { s.usages(w, r, sub, seg[5]) })
		case len(seg) == 5 && is(4, "skus"):
			s.serveVersion(w, r, http.MethodGet, SKUsAPIVersion, func() { s.skus(w, r, sub) })
		default:
			s.writeError(w, errResourceType(seg[4:]))
		}
	default:
		s.writeError(w, errNoRoute(r.URL.Path))
	}
}

// serve checks what ARM's front door checks before a resource provider
// sees a request: the method and the api-version.
func (s *Server) serve(w http.ResponseWriter, r *http.Request, method string, handle func()) {
	s.serveVersion(w, r, method, APIVersion, handle)
}

// serveVersion is serve for a resource type with an api-version of its own.
func (s *Server) serveVersion(w http.ResponseWriter, r *http.Request, method, version string, handle func()) {
	if method != "" && r.Method != method {
		s.writeError(w, errMethod(r.Method))
		return
	}
	versions, ok := r.URL.Query()["api-version"]
	switch {
	case !ok || len(versions) == 0 || versions[0] == "":
		s.writeError(w, armError{Status: http.StatusBadRequest, Code: "MissingApiVersionParameter",
			Message: "The api-version query parameter (?api-version=) is required for all requests."})
	case versions[0] != version:
		s.writeError(w, armError{Status: http.StatusBadRequest, Code: "InvalidApiVersionParameter",
			Message: fmt.Sprintf("The api-version '%s' is invalid. The supported versions are '%s'.", versions[0], version)})
	default:
		handle()
	}
}

// admit meters a call against its subscription's rate limits, runs the
// world's faults for it and waits out any injected latency. It reports
// false when the client went away meanwhile.
func (s *Server) admit(w http.ResponseWriter, r *http.Request, call sim.Call) (sim.Outcome, bool) {
	call.Cloud = cloud
	call.Class, call.Tenant = requestClass(r), subscriptionOf(r)
	out := s.world.Intercept(call)
	if out.Metered {
		w.Header().Set(remainingHeaders[call.Class], strconv.Itoa(out.Remaining))
	}
	return out, sleep(r.Context(), out.Latency)
}

func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// baseURL is the scheme and host the client reached the front on, which
// the polling URLs must point back to.
func baseURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}
