// SPDX-License-Identifier: Apache-2.0

package ocisim

import (
	"net"
	"net/http"
	"strings"

	"github.com/gpufleet/gpufleet/providers/sim"
)

// apiVersion is the base path of both APIs the front serves: Core
// Services and Identity are both version 20160918.
const apiVersion = "/20160918/"

// The services the front serves, by the first label of their hosts.
const (
	serviceCompute  = "iaas"
	serviceIdentity = "identity"
)

// domain is the second-level domain of OCI's commercial realm, oc1, the
// one realm the front serves.
const domain = "oraclecloud.com"

// The operations a fault can name in its "op" field, and the world counts
// calls by ("oci LaunchInstance"), after the SDK's operation names.
const (
	OpListAvailabilityDomains = "ListAvailabilityDomains"
	OpListShapes              = "ListShapes"
	OpLaunchInstance          = "LaunchInstance"
	OpListInstances           = "ListInstances"
	OpGetInstance             = "GetInstance"
	OpTerminateInstance       = "TerminateInstance"
)

// handler serves one operation of the API.
type handler func(s *Server, w http.ResponseWriter, req *request) error

// route is an operation: the service whose host it is sent to, its HTTP
// method and its path after apiVersion, "*" standing for a variable
// segment.
type route struct {
	service string
	method  string
	pattern string
	serve   handler
}

var routes = []route{
	{serviceIdentity, http.MethodGet, "availabilityDomains", (*Server).listAvailabilityDomains},
	{serviceCompute, http.MethodGet, "shapes", (*Server).listShapes},
	{serviceCompute, http.MethodPost, "instances", (*Server).launchInstance},
	{serviceCompute, http.MethodGet, "instances", (*Server).listInstances},
	{serviceCompute, http.MethodGet, "instances/*", (*Server).getInstance},
	{serviceCompute, http.MethodDelete, "instances/*", (*Server).terminateInstance},
}

// route finds the operation a request calls, by its host and then its
// path, authenticates the caller and serves it. A host or path the API
// does not have is refused whoever asks, as OCI's endpoints refuse it
// before they look at a signature.
func (s *Server) route(w http.ResponseWriter, r *http.Request) error {
	service, region, ok := parseHost(r.Host)
	if !ok {
		return errUnknownHost(r.Host)
	}
	if reg, ok := s.world.Region(cloud, region); !ok || len(reg.Zones) == 0 {
		return errUnknownRegion(region)
	}
	rest, ok := strings.CutPrefix(r.URL.Path, apiVersion)
	if !ok {
		return errNoOperation(r)
	}
	seg := strings.Split(rest, "/")
	pathFound := false
	for _, rt := range routes {
		if rt.service != service {
			continue
		}
		args, ok := sim.MatchPath(rt.pattern, seg)
		if !ok {
			continue
		}
		pathFound = true
		if rt.method != r.Method {
			continue
		}
		tenancy, body, err := s.authenticate(r)
		if err != nil {
			return err
		}
		return rt.serve(s, w, &request{Request: r, region: region, tenancy: tenancy, args: args, body: body})
	}
	if pathFound {
		return errMethodNotAllowed(r)
	}
	return errNoOperation(r)
}

// parseHost reads the service and region of a regional endpoint:
// <service>.<region>.oraclecloud.com, or with oci. before the domain, as
// the SDK names the identity endpoint (and ds.oci. for a dual-stack one).
// The port, the emulator's own, is not part of it.
func parseHost(host string) (service, region string, ok bool) {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	rest, ok := strings.CutSuffix(strings.ToLower(host), "."+domain)
	if !ok {
		return "", "", false
	}
	service, rest, ok = strings.Cut(rest, ".")
	if !ok || service != serviceCompute && service != serviceIdentity {
		return "", "", false
	}
	for _, infix := range []string{".ds.oci", ".oci"} {
		if r, found := strings.CutSuffix(rest, infix); found {
			rest = r
			break
		}
	}
	if rest == "" || strings.Contains(rest, ".") {
		return "", "", false
	}
	return service, rest, true
}
