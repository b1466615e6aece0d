// SPDX-License-Identifier: Apache-2.0

package armsim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

const (
	cloud        = catalog.Azure
	resourceType = "Microsoft.Compute/virtualMachines"
	// maxBody is ARM's limit on request content, 4 MB; a VM needs a few KB.
	maxBody = 4 << 20
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
	// Resource groups.
	OpGroupPut       = "groupPut"
	OpGroupGet       = "groupGet"
	OpGroupDelete    = "groupDelete"
	OpGroupList      = "groupList"
	OpGroupOperation = "groupOperation"
	// Network: virtual networks, subnets, network interfaces and their
	// operations.
	OpVNetPut          = "vnetPut"
	OpVNetGet          = "vnetGet"
	OpVNetDelete       = "vnetDelete"
	OpVNetList         = "vnetList"
	OpSubnetPut        = "subnetPut"
	OpSubnetGet        = "subnetGet"
	OpSubnetDelete     = "subnetDelete"
	OpSubnetList       = "subnetList"
	OpNICPut           = "nicPut"
	OpNICGet           = "nicGet"
	OpNICDelete        = "nicDelete"
	OpNICList          = "nicList"
	OpNetworkOperation = "networkOperation"
	// Subscriptions: the subscription itself and its locations.
	OpSubscriptionGet = "subscriptionGet"
	OpLocationList    = "locationList"
)

// Options tunes a Server. The zero value is ARM's behaviour.
type Options struct {
	// PageSize is how many items a list page holds: VMs, usages or SKUs.
	// Zero means 50.
	PageSize int
	// ThrottleRetryAfter is the Retry-After an injected 429 carries, sent
	// in whole seconds as ARM does, and to the millisecond in
	// retry-after-ms when it is not a whole number of seconds (tests that
	// throttle often wait less). Zero means one second.
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
	res    resourceStore
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
	if !s.authenticate(w, r) {
		return
	}
	// ARM turns content past its limit away at the door, whatever the
	// method; a body that does not say its length is cut off where it is
	// read.
	if r.ContentLength > maxBody {
		s.writeError(w, errTooLarge())
		return
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
	if e := subscriptionError(sub); e != nil {
		s.writeError(w, *e)
		return
	}
	if len(seg) >= 4 && is(2, "resourceGroups") {
		if e := groupNameError(seg[3]); e != nil {
			s.writeError(w, *e)
			return
		}
	}
	switch {
	case len(seg) == 2:
		s.dispatch(w, r, subscriptionType, noLocation, handlers{http.MethodGet: func() { s.getSubscription(w, r, sub) }})
	case len(seg) == 3 && is(2, "locations"):
		s.dispatch(w, r, locationsType, noLocation, handlers{http.MethodGet: func() { s.listLocations(w, r, sub) }})
	case len(seg) == 3 && is(2, "resourceGroups"):
		s.dispatch(w, r, groupType, noLocation, handlers{http.MethodGet: func() { s.listGroups(w, r, sub) }})
	case len(seg) == 4 && is(2, "resourceGroups"):
		g := groupRef{sub, seg[3]}
		s.dispatch(w, r, groupType, noLocation, handlers{
			http.MethodPut:    func() { s.putGroup(w, r, g) },
			http.MethodGet:    func() { s.getGroup(w, r, g) },
			http.MethodHead:   func() { s.getGroup(w, r, g) },
			http.MethodDelete: func() { s.deleteGroup(w, r, g) },
		})
	case len(seg) >= 6 && is(2, "resourceGroups") && is(4, "providers"):
		g := groupRef{sub, seg[3]}
		switch {
		case is(5, "Microsoft.Compute"):
			s.routeCompute(w, r, g, seg[6:])
		case is(5, "Microsoft.Network"):
			s.routeNetwork(w, r, g, seg[6:])
		default:
			s.writeError(w, errNamespace(seg[5]))
		}
	case len(seg) == 4 && is(2, "operationresults"):
		s.dispatch(w, r, groupType, noLocation, handlers{http.MethodGet: func() { s.groupOperation(w, r, sub, seg[3]) }})
	case len(seg) >= 4 && is(2, "providers") && is(3, "Microsoft.Compute"):
		s.routeComputeSubscription(w, r, sub, seg[4:])
	case len(seg) >= 4 && is(2, "providers") && is(3, "Microsoft.Network"):
		rest := seg[4:]
		if len(rest) == 4 && strings.EqualFold(rest[0], "locations") && (strings.EqualFold(rest[2], "operations") || strings.EqualFold(rest[2], "operationResults")) {
			results := strings.EqualFold(rest[2], "operationResults")
			s.dispatch(w, r, networkOpType, pathLocation(rest[1]), handlers{http.MethodGet: func() { s.networkOperation(w, r, sub, rest[1], rest[3], results) }})
			return
		}
		s.writeError(w, errResourceType("Microsoft.Network", rest))
	case len(seg) >= 4 && is(2, "providers"):
		s.writeError(w, errNamespace(seg[3]))
	default:
		s.writeError(w, errNoRoute(r.URL.Path))
	}
}

// routeCompute serves Microsoft.Compute in a resource group: rest follows
// …/providers/Microsoft.Compute/.
func (s *Server) routeCompute(w http.ResponseWriter, r *http.Request, g groupRef, rest []string) {
	is := func(i int, word string) bool { return i < len(rest) && strings.EqualFold(rest[i], word) }
	switch {
	case len(rest) == 1 && is(0, "virtualMachines"):
		s.dispatch(w, r, vmType, noLocation, handlers{http.MethodGet: func() { s.list(w, r, g.Subscription, g.Name) }})
	case len(rest) == 2 && is(0, "virtualMachines"):
		vm := vmRef{g.Subscription, g.Name, rest[1]}
		s.dispatch(w, r, vmType, s.vmLocation(r, vm), handlers{
			http.MethodPut:    func() { s.putVM(w, r, vm) },
			http.MethodPatch:  func() { s.patchVM(w, r, vm) },
			http.MethodGet:    func() { s.getVM(w, r, vm) },
			http.MethodDelete: func() { s.deleteVM(w, r, vm) },
		})
	case len(rest) == 3 && is(0, "virtualMachines") && is(2, "instanceView"):
		vm := vmRef{g.Subscription, g.Name, rest[1]}
		s.dispatch(w, r, vmType, s.vmLocation(r, vm), handlers{http.MethodGet: func() { s.instanceView(w, r, vm) }})
	case len(rest) == 3 && is(0, "virtualMachines") && isPowerAction(rest[2]):
		vm := vmRef{g.Subscription, g.Name, rest[1]}
		a, _ := powerActionNamed(rest[2])
		s.dispatch(w, r, vmType, s.vmLocation(r, vm), handlers{http.MethodPost: func() { s.powerVM(w, r, vm, a) }})
	case len(rest) == 1 && is(0, "proximityPlacementGroups"):
		s.dispatch(w, r, ppgTypeV, noLocation, handlers{http.MethodGet: func() { s.listPPGs(w, r, g.Subscription, g.Name) }})
	case len(rest) == 2 && is(0, "proximityPlacementGroups"):
		ref := ppgRef{g.Subscription, g.Name, rest[1]}
		s.dispatch(w, r, ppgTypeV, s.ppgLocation(r, ref), handlers{
			http.MethodPut:    func() { s.putPPG(w, r, ref) },
			http.MethodGet:    func() { s.getPPG(w, r, ref) },
			http.MethodDelete: func() { s.deletePPG(w, r, ref) },
		})
	default:
		s.writeError(w, errResourceType("Microsoft.Compute", rest))
	}
}

// routeComputeSubscription serves Microsoft.Compute at a subscription:
// rest follows /subscriptions/{s}/providers/Microsoft.Compute/.
func (s *Server) routeComputeSubscription(w http.ResponseWriter, r *http.Request, sub string, rest []string) {
	is := func(i int, word string) bool { return i < len(rest) && strings.EqualFold(rest[i], word) }
	switch {
	case len(rest) == 1 && is(0, "virtualMachines"):
		s.dispatch(w, r, vmType, noLocation, handlers{http.MethodGet: func() { s.list(w, r, sub, "") }})
	case len(rest) == 4 && is(0, "locations") && is(2, "operations"):
		s.dispatch(w, r, computeOpType, pathLocation(rest[1]), handlers{http.MethodGet: func() { s.operation(w, r, sub, rest[1], rest[3]) }})
	case len(rest) == 3 && is(0, "locations") && is(2, "usages"):
		s.dispatch(w, r, usagesType, pathLocation(rest[1]), handlers{http.MethodGet: func() { s.usages(w, r, sub, rest[1]) }})
	case len(rest) == 1 && is(0, "skus"):
		s.dispatch(w, r, skusType, noLocation, handlers{http.MethodGet: func() { s.skus(w, r, sub) }})
	default:
		s.writeError(w, errResourceType("Microsoft.Compute", rest))
	}
}

// routeNetwork serves Microsoft.Network in a resource group.
func (s *Server) routeNetwork(w http.ResponseWriter, r *http.Request, g groupRef, rest []string) {
	is := func(i int, word string) bool { return i < len(rest) && strings.EqualFold(rest[i], word) }
	switch {
	case len(rest) == 1 && is(0, "virtualNetworks"):
		s.dispatch(w, r, vnetType, noLocation, handlers{http.MethodGet: func() { s.listVNets(w, r, g) }})
	case len(rest) == 2 && is(0, "virtualNetworks"):
		id := networkID(g, "virtualNetworks", rest[1])
		s.dispatch(w, r, vnetType, s.networkLocation(r, id), handlers{
			http.MethodPut:    func() { s.ifNamed(w, rest[1], func() { s.putVNet(w, r, id) }) },
			http.MethodGet:    func() { s.getVNet(w, r, id) },
			http.MethodDelete: func() { s.deleteVNet(w, r, id) },
		})
	case len(rest) == 3 && is(0, "virtualNetworks") && is(2, "subnets"):
		id := networkID(g, "virtualNetworks", rest[1])
		s.dispatch(w, r, subnetType, noLocation, handlers{http.MethodGet: func() { s.listSubnets(w, r, id) }})
	case len(rest) == 4 && is(0, "virtualNetworks") && is(2, "subnets"):
		id := networkID(g, "virtualNetworks", rest[1])
		id.ChildType, id.Child = "subnets", rest[3]
		s.dispatch(w, r, subnetType, s.networkLocation(r, id), handlers{
			http.MethodPut:    func() { s.ifNamed(w, rest[3], func() { s.putSubnet(w, r, id) }) },
			http.MethodGet:    func() { s.getSubnet(w, r, id) },
			http.MethodDelete: func() { s.deleteSubnet(w, r, id) },
		})
	case len(rest) == 1 && is(0, "networkInterfaces"):
		s.dispatch(w, r, nicType, noLocation, handlers{http.MethodGet: func() { s.listNICs(w, r, g) }})
	case len(rest) == 2 && is(0, "networkInterfaces"):
		id := networkID(g, "networkInterfaces", rest[1])
		s.dispatch(w, r, nicType, s.networkLocation(r, id), handlers{
			http.MethodPut:    func() { s.ifNamed(w, rest[1], func() { s.putNIC(w, r, id) }) },
			http.MethodGet:    func() { s.getNIC(w, r, id) },
			http.MethodDelete: func() { s.deleteNIC(w, r, id) },
		})
	default:
		s.writeError(w, errResourceType("Microsoft.Network", rest))
	}
}

// ifNamed runs a Network PUT when the resource's name is one Network
// takes.
func (s *Server) ifNamed(w http.ResponseWriter, name string, put func()) {
	if e := networkNameError(name); e != nil {
		s.writeError(w, *e)
		return
	}
	put()
}

// handlers are a route's handlers by method.
type handlers map[string]func()

// dispatch checks what ARM's front door checks before a resource provider
// sees a request — the method, then the api-version — and runs the
// method's handler.
func (s *Server) dispatch(w http.ResponseWriter, r *http.Request, t typeVersions, location func() string, h handlers) {
	handle, ok := h[r.Method]
	if !ok {
		s.writeError(w, errMethod(r.Method))
		return
	}
	if _, e := s.checkVersion(r, t, location); e != nil {
		s.writeError(w, *e)
		return
	}
	handle()
}

// pathLocation is the location a location-bound path names.
func pathLocation(loc string) func() string { return func() string { return loc } }

// vmLocation is where ARM looks a VM request's registration up: the
// location a PUT asks for, or the VM's own.
func (s *Server) vmLocation(r *http.Request, vm vmRef) func() string {
	return func() string {
		if r.Method == http.MethodPut {
			return peekLocation(r)
		}
		if inst, ok := s.world.ByName(cloud, vm.scope(), vm.key()); ok {
			return s.describe(inst).location
		}
		return ""
	}
}

// ppgLocation is vmLocation for a proximity placement group.
func (s *Server) ppgLocation(r *http.Request, ref ppgRef) func() string {
	return func() string {
		if r.Method == http.MethodPut {
			return peekLocation(r)
		}
		s.ppgs.mu.RLock()
		defer s.ppgs.mu.RUnlock()
		if g, ok := s.ppgs.groups[ref.key()]; ok {
			return g.location
		}
		return ""
	}
}

// networkLocation is vmLocation for a network resource; a subnet is in its
// network's location.
func (s *Server) networkLocation(r *http.Request, id armID) func() string {
	return func() string {
		if r.Method == http.MethodPut && id.ChildType == "" {
			return peekLocation(r)
		}
		s.res.mu.RLock()
		defer s.res.mu.RUnlock()
		if id.is("Microsoft.Network", "networkInterfaces", "") {
			n, _ := s.findNIC(id)
			return n.Location
		}
		v, _ := s.findVNet(id)
		return v.Location
	}
}

// peekLocation reads the location a PUT's body asks for, leaving the body
// for its handler to read again, failure included.
func peekLocation(r *http.Request) string {
	if r.Body == nil {
		return ""
	}
	body, err := io.ReadAll(r.Body)
	rest := io.Reader(bytes.NewReader(body))
	if err != nil {
		rest = io.MultiReader(rest, errReader{err})
	}
	r.Body = io.NopCloser(rest)
	var req struct {
		Location string `json:"location"`
	}
	if json.Unmarshal(body, &req) != nil {
		return ""
	}
	return req.Location
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// admit meters a call against its subscription's rate limits, runs the
// world's faults for it and waits out any injected latency. It reports
// false when the client went away meanwhile.
func (s *Server) admit(w http.ResponseWriter, r *http.Request, call sim.Call) (sim.Outcome, bool) {
	call.Cloud = cloud
	call.Class, call.Tenant = requestClass(r), subscriptionOf(r)
	if s.denied(call.Op) {
		// RBAC answers before anything else looks at the call, as a
		// fault naming AuthorizationFailed would.
		return sim.Outcome{Err: &sim.Error{Kind: sim.KindServerError, Code: "AuthorizationFailed"}}, true
	}
	out := s.world.Intercept(call)
	if out.Metered {
		w.Header().Set(remainingHeaders[call.Class], strconv.Itoa(out.Remaining))
	}
	return out, sim.Wait(r.Context(), out.Latency)
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
