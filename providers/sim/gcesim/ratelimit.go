// SPDX-License-Identifier: Apache-2.0

package gcesim

import (
	"context"
	"net/http"
	"strings"

	"github.com/gpufleet/gpufleet/providers/sim"
)

// readMethods are the API methods that change nothing, which Compute
// Engine meters against its read-request quota; every other method, as
// any added later, counts as a write.
var readMethods = map[string]bool{"get": true, "list": true, "aggregatedList": true, "wait": true, "getFromFamily": true}

// requestClass is the request class of an operation named as the API's
// methods are, "resource.method".
func requestClass(op string) string {
	_, method, _ := strings.Cut(op, ".")
	if readMethods[method] {
		return sim.ClassRead
	}
	return sim.ClassWrite
}

// projectKey carries a request's project to intercept, which meters the
// call in the project's buckets: Compute Engine's request quotas, like
// all its quotas, are the project's.
type projectKey struct{}

func withProject(r *http.Request) *http.Request {
	rest, _ := strings.CutPrefix(r.URL.Path, "/compute/v1/projects/")
	project, _, _ := strings.Cut(rest, "/")
	return r.WithContext(context.WithValue(r.Context(), projectKey{}, project))
}

func projectFrom(ctx context.Context) string {
	project, _ := ctx.Value(projectKey{}).(string)
	return project
}
