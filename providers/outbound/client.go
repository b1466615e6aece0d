// SPDX-License-Identifier: Apache-2.0

package outbound

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/hashicorp/go-retryablehttp"
)

// ErrRefused is what a client returns, wrapped, for a request its policy
// kept from being sent. Retrying cannot help.
var ErrRefused = errors.New("gpufleet sends a request only to the host it was configured with")

// Policy says where a client may send requests and how long one may take.
type Policy struct {
	// Timeout bounds one attempt, from dialling to reading the last byte
	// of the answer; zero means DefaultTimeout. A caller that retries
	// bounds the whole with its context.
	Timeout time.Duration
	// Origin, when set, is the only scheme, host and port the client
	// sends to: the API it was configured with. Redirects within it are
	// followed, and any request elsewhere is refused. Without it, the
	// client sends where it is asked but follows no redirect at all.
	Origin *url.URL
	// Transport carries what the policy lets through; nil means a
	// transport of the client's own, with the proxy from the environment.
	// Tests give one that trusts their certificate.
	Transport http.RoundTripper
}

// DefaultTimeout bounds an attempt whose policy says nothing.
const DefaultTimeout = 30 * time.Second

// NewClient is an HTTP client that keeps to p.
func NewClient(p Policy) *http.Client {
	if p.Timeout <= 0 {
		p.Timeout = DefaultTimeout
	}
	base := p.Transport
	if base == nil {
		base = http.DefaultTransport.(*http.Transport).Clone()
	}
	return &http.Client{Timeout: p.Timeout, Transport: &guard{origin: p.Origin, base: base}}
}

// guard refuses, before it is sent, a request the policy does not allow.
// It sits under the client's redirect handling, which builds each redirect
// as a new request carrying the first one's headers (tokens that are not
// Authorization included) and, for 307 and 308, its body; so a redirect
// is checked where it would be sent, however the client was built.
type guard struct {
	origin *url.URL
	base   http.RoundTripper
}

func (g *guard) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := g.allow(req); err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	return g.base.RoundTrip(req)
}

func (g *guard) allow(req *http.Request) error {
	// A request the client made from a redirect carries the answer that
	// asked for it.
	redirect := req.Response != nil
	switch {
	case g.origin != nil && !SameOrigin(req.URL, g.origin):
		if redirect {
			return fmt.Errorf("not following a redirect from %s to %s, %w", origin(g.origin), origin(req.URL), ErrRefused)
		}
		return fmt.Errorf("not sending to %s, configured for %s, %w", origin(req.URL), origin(g.origin), ErrRefused)
	case g.origin == nil && redirect:
		return fmt.Errorf("not following a redirect to %s, %w", origin(req.URL), ErrRefused)
	}
	return nil
}

// CheckRetry is retryablehttp's default policy, except that a request the
// policy refused is not tried again: it would be refused again.
func CheckRetry(ctx context.Context, resp *http.Response, err error) (bool, error) {
	if errors.Is(err, ErrRefused) {
		return false, err
	}
	return retryablehttp.DefaultRetryPolicy(ctx, resp, err)
}

// Retrying is a retryablehttp client whose attempts go through a client
// that keeps to p, with CheckRetry; the caller sets its retries and
// backoff, and nothing of it is logged.
func Retrying(p Policy) *retryablehttp.Client {
	rc := retryablehttp.NewClient()
	rc.HTTPClient = NewClient(p)
	rc.CheckRetry = CheckRetry
	rc.Logger = nil
	return rc
}
