// SPDX-License-Identifier: Apache-2.0

package lambdasim

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// cloud is the world's name for Lambda Cloud.
const cloud = catalog.Lambda

// maxBody caps request bodies: a launch's user data is the largest part
// of any, and a bootstrap is kilobytes.
const maxBody = 2 << 20

// Options tunes a Server. The zero value is usable.
type Options struct {
	// APIKeys, when set, are the only keys the front accepts; any other is
	// refused as the real API refuses an unknown key. Empty accepts any
	// key that is not empty, as the emulator needs no account.
	APIKeys []string
	// SSHKeys are keys the account has from the start, so the demo's
	// launches find the key they name. They are not kept in the world,
	// which starting a front leaves as it was; deleting one is.
	SSHKeys []SSHKey
	// ThrottleRetryAfter is the Retry-After an injected 429 carries, in
	// whole seconds as the API sends it (a refusal by a rate limit says
	// when its bucket has a token again). Zero means one second.
	ThrottleRetryAfter time.Duration
}

// SSHKey is a public key the account holds.
type SSHKey struct {
	Name, PublicKey string
}

// Server is the Lambda Cloud front. It never listens; serve it with
// net/http or httptest.
type Server struct {
	world *sim.World
	opts  Options
	types *typeTable
	// keys serialises the adds of SSH keys, whose names are unique.
	keys sync.Mutex
	// panics counts requests that reached the last-resort recovery; tests
	// assert that no input does.
	panics atomic.Int64
}

var _ http.Handler = (*Server)(nil)

// New returns a front over world, whose account holds opts.SSHKeys from
// the start.
func New(world *sim.World, opts Options) *Server {
	if opts.ThrottleRetryAfter <= 0 {
		opts.ThrottleRetryAfter = time.Second
	}
	return &Server{world: world, opts: opts, types: newTypeTable(world)}
}

// ServeHTTP routes a request of the v1 API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.panics.Add(1)
			writeError(w, errUnknown())
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

// errClientGone ends a request whose caller left while it was delayed;
// nobody is there to answer.
var errClientGone = errors.New("client gone")

// apiKey reads the request's API key: a bearer token, or HTTP Basic with
// the key as the user name and no password, as the API takes both.
func apiKey(r *http.Request) string {
	auth := r.Header.Get("Authorization")
	if key, ok := strings.CutPrefix(auth, "Bearer "); ok {
		return strings.TrimSpace(key)
	}
	if enc, ok := strings.CutPrefix(auth, "Basic "); ok {
		raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(enc))
		if err != nil {
			return ""
		}
		user, pass, _ := strings.Cut(string(raw), ":")
		if pass != "" {
			return ""
		}
		return user
	}
	return ""
}

// authenticate refuses a request without a key the front accepts, and
// returns the tenant its rate limits are metered under: the key's digest,
// so the world never holds the key itself.
func (s *Server) authenticate(r *http.Request) (string, error) {
	key := apiKey(r)
	if key == "" || len(s.opts.APIKeys) > 0 && !slices.Contains(s.opts.APIKeys, key) {
		return "", errInvalidKey()
	}
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:8]), nil
}

// intercept reports the call to the world's rate limits and faults and
// applies their latency; a refusal or injected error is returned as the
// API's. Every request calls it exactly once, once authenticated.
func (s *Server) intercept(ctx context.Context, tenant string, call sim.Call) error {
	_, err := s.interceptLater(ctx, tenant, call)
	return err
}

// interceptLater is intercept, returning as well the error a fail-later
// fault says the call must end with once it has done its work.
func (s *Server) interceptLater(ctx context.Context, tenant string, call sim.Call) (*sim.Error, error) {
	call.Cloud = cloud
	call.Class, call.Tenant = requestClass(call.Op), tenant
	out := s.world.Intercept(call)
	if !sim.Wait(ctx, out.Latency) {
		return nil, errClientGone
	}
	if out.Err != nil {
		return nil, s.worldError(out.Err)
	}
	return out.FailLater, nil
}

// readBody decodes a request's JSON body into v strictly: a field the API
// does not have is refused by name, as a misspelt one would otherwise be
// dropped without a word.
func readBody(r *http.Request, v any) error {
	body, err := io.ReadAll(r.Body)
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return invalidParameters("", fmt.Sprintf("The request body is over %d bytes.", tooBig.Limit))
	case err != nil:
		return invalidParameters("", "The request body could not be read.")
	case strings.TrimSpace(string(body)) == "":
		return invalidParameters("", "The request needs a JSON body.")
	}
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) && typeErr.Field != "" {
			return invalidParameters(typeErr.Field, fmt.Sprintf("Field '%s' must be a %s.", typeErr.Field, jsonKind(typeErr.Type.Kind().String())))
		}
		if field, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			field = strings.Trim(field, `"`)
			return invalidParameters(field, fmt.Sprintf("Field '%s' is not a parameter of this request.", field))
		}
		return invalidParameters("", "The request body is not valid JSON.")
	}
	if dec.More() {
		return invalidParameters("", "The request body holds more than one JSON value.")
	}
	return nil
}

// jsonKind names a Go kind as JSON calls it.
func jsonKind(kind string) string {
	switch kind {
	case "string":
		return "string"
	case "slice", "array":
		return "list"
	case "struct", "map", "ptr":
		return "object"
	case "bool":
		return "boolean"
	}
	return "number"
}

// writeData answers {"data": v}, the envelope of every success.
func writeData(w http.ResponseWriter, v any) error {
	body, err := json.Marshal(struct {
		Data any `json:"data"`
	}{v})
	if err != nil {
		return fmt.Errorf("marshalling %T, %w", v, err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
	return nil
}
