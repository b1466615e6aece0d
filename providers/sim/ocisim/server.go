// SPDX-License-Identifier: Apache-2.0

package ocisim

import (
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// cloud is the world's name for OCI.
const cloud = catalog.OCI

// maxBody caps request bodies: a launch's metadata is the largest part of
// any, and OCI caps it at 32,000 bytes.
const maxBody = 2 << 20

// Options tunes a Server. The zero value is usable.
type Options struct {
	// PublicKeys, when set, are the only keys the front accepts, by the
	// keyId a request is signed with ("<tenancy>/<user>/<fingerprint>"):
	// a request signed by another key, or whose signature does not verify,
	// is refused as OCI refuses it. Empty accepts any well-formed
	// signature, as the emulator needs no account.
	PublicKeys map[string]*rsa.PublicKey
	// ThrottleRetryAfter is the Retry-After an injected 429 carries, in
	// whole seconds (a refusal by a rate limit says when its bucket has a
	// token again). Zero means one second.
	ThrottleRetryAfter time.Duration
}

// Server is the OCI front. It never listens; serve it with net/http or
// httptest.
type Server struct {
	world *sim.World
	opts  Options
	// requests numbers the answers, for their opc-request-id.
	requests atomic.Uint64
	// panics counts requests that reached the last-resort recovery; tests
	// assert that no input does.
	panics atomic.Int64
}

var _ http.Handler = (*Server)(nil)

// New returns a front over world.
func New(world *sim.World, opts Options) *Server {
	if opts.ThrottleRetryAfter <= 0 {
		opts.ThrottleRetryAfter = time.Second
	}
	return &Server{world: world, opts: opts}
}

// ServeHTTP routes a request by its host and path. Every answer, an error
// too, carries an opc-request-id, which is what OCI asks a caller to quote.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("opc-request-id", s.requestID(r))
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.panics.Add(1)
			writeError(w, errInternal())
		}
	}()
	r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	if err := s.route(w, r); err != nil {
		if errors.Is(err, errClientGone) {
			return
		}
		writeError(w, asAPIError(err))
	}
}

// maxCallerRequestID bounds the caller's opc-request-id an answer repeats,
// so that a caller cannot make the front's headers as large as it likes.
const maxCallerRequestID = 128

// requestID is the id of an answer: the caller's opc-request-id, when it
// sent one, followed by the front's own, so that a caller can match the
// answer to its request. The front's part is numbered, not drawn from the
// world's random source, so that a read changes nothing the world saves.
func (s *Server) requestID(r *http.Request) string {
	own := fmt.Sprintf("%032X", s.requests.Add(1))
	if theirs := r.Header.Get("opc-request-id"); theirs != "" && len(theirs) <= maxCallerRequestID {
		return theirs + "/" + own
	}
	return own
}

// errClientGone ends a request whose caller left while it was delayed;
// nobody is there to answer.
var errClientGone = errors.New("client gone")

// request is a routed, authenticated call: where it was sent, who sent
// it, and what it carries.
type request struct {
	*http.Request
	// region is the region of the endpoint the call was sent to.
	region string
	// tenancy is the caller's tenancy OCID, from the key it signed with;
	// rate limits meter each tenancy apart.
	tenancy string
	// args are the path's variable segments, in order.
	args []string
	// body is the request's body, read whole to check its digest; nil for
	// a method without one.
	body []byte
}

// intercept reports the call to the world's rate limits and faults and
// applies their latency; a refusal or injected error is returned as the
// API's. Every request calls it exactly once, once authenticated.
func (s *Server) intercept(req *request, call sim.Call) error {
	_, err := s.interceptLater(req, call)
	return err
}

// interceptLater is intercept, returning as well the error a fail-later
// fault says the call must end with once it has done its work.
func (s *Server) interceptLater(req *request, call sim.Call) (*sim.Error, error) {
	call.Cloud, call.Region = cloud, req.region
	call.Class, call.Tenant = requestClass(call.Op), req.tenancy
	out := s.world.Intercept(call)
	if !sim.Wait(req.Context(), out.Latency) {
		return nil, errClientGone
	}
	if e := out.Err; e != nil {
		if e.Kind == sim.KindQuota && e.Quota == "" && call.InstanceType != "" {
			// A fault's error names no limit: name the one a launch of the
			// shape counts against.
			if q, ok := s.world.QuotaFor(cloud, call.Region, call.InstanceType, catalog.OnDemand); ok {
				e.Quota, e.Limit, e.Used, e.Requested = q.Name, q.Limit, q.Used, 1
			}
		}
		return nil, s.worldError(e)
	}
	return out.FailLater, nil
}

// writeJSON answers v with a status.
func writeJSON(w http.ResponseWriter, status int, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("marshalling %T, %w", v, err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
	return nil
}
