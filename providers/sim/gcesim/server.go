// SPDX-License-Identifier: Apache-2.0

package gcesim

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// cloud is the world's name for Compute Engine.
const cloud = catalog.GCP

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
	r = withLinks(withProject(r))
	var err error
	if r.URL.Path == batchPath {
		r.Body = http.MaxBytesReader(w, r.Body, maxBatchBody)
		err = s.serveBatch(w, r)
	} else {
		r.Body = http.MaxBytesReader(w, r.Body, maxBody)
		err = s.route(w, r)
	}
	if err != nil {
		if errors.Is(err, errClientGone) {
			return
		}
		writeError(w, asAPIError(err))
	}
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
	// IAM answers before anything else looks at the call: a method the
	// account denies its caller, named by its API id
	// ("gcp:compute.instances.insert"), is refused at once, as a
	// forbidden fault would refuse it.
	if s.world.Denied(cloud, "compute."+call.Op) {
		return sim.Outcome{Err: &sim.Error{Kind: sim.KindServerError, Code: reasonForbidden}}, nil
	}
	out := s.world.Intercept(call)
	if !sim.Wait(ctx, out.Latency) {
		return out, errClientGone
	}
	return out, nil
}

// interceptSync intercepts a call that is answered at once, so that a
// fault's error is answered as GCE answers it for fc.
func (s *Server) interceptSync(r *http.Request, call sim.Call, fc faultContext) (sim.Outcome, error) {
	out, err := s.intercept(r.Context(), call)
	if err != nil {
		return out, err
	}
	if out.Err != nil {
		return out, s.syncError(out.Err, fc)
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

// timestamp formats times as GCE does: RFC 3339 with milliseconds and a
// numeric offset.
func timestamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000-07:00") }
