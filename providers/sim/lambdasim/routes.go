// SPDX-License-Identifier: Apache-2.0

package lambdasim

import (
	"net/http"
	"strings"

	"github.com/gpufleet/gpufleet/providers/sim"
)

// apiPath is where the v1 API lives, under the API's origin
// (https://cloud.lambda.ai/api/v1).
const apiPath = "/api/v1/"

// The operations a fault can name in its "op" field, and the world counts
// calls by ("lambda launch"), after the API's paths.
const (
	OpInstanceTypes = "instance-types"
	OpList          = "list"
	OpGet           = "get"
	OpLaunch        = "launch"
	OpTerminate     = "terminate"
	OpSSHKeys       = "ssh-keys"
	OpAddSSHKey     = "add-ssh-key"
	OpDeleteSSHKey  = "delete-ssh-key"
)

// handler serves one method of the API, for a caller whose rate limits
// are tenant's; args are the path's variable segments, in order.
type handler func(s *Server, w http.ResponseWriter, r *http.Request, tenant string, args []string) error

// route is a method of the API: its HTTP method and its path after
// apiPath, "*" standing for a variable segment.
type route struct {
	method  string
	pattern string
	serve   handler
}

var routes = []route{
	{http.MethodGet, "instance-types", (*Server).instanceTypes},
	{http.MethodGet, "instances", (*Server).listInstances},
	{http.MethodGet, "instances/*", (*Server).getInstance},
	{http.MethodPost, "instance-operations/launch", (*Server).launch},
	{http.MethodPost, "instance-operations/terminate", (*Server).terminate},
	{http.MethodGet, "ssh-keys", (*Server).listSSHKeys},
	{http.MethodPost, "ssh-keys", (*Server).addSSHKey},
	{http.MethodDelete, "ssh-keys/*", (*Server).deleteSSHKey},
}

// route finds the method a request calls, authenticates the caller and
// serves it. A path the API does not have is a 404 whoever asks.
func (s *Server) route(w http.ResponseWriter, r *http.Request) error {
	rest, ok := strings.CutPrefix(r.URL.Path, apiPath)
	if !ok {
		return notFoundRoute(r)
	}
	seg := strings.Split(rest, "/")
	for _, rt := range routes {
		if rt.method != r.Method {
			continue
		}
		if args, ok := sim.MatchPath(rt.pattern, seg); ok {
			tenant, err := s.authenticate(r)
			if err != nil {
				return err
			}
			return rt.serve(s, w, r, tenant, args)
		}
	}
	return notFoundRoute(r)
}
