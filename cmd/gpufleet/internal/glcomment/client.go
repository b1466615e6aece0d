// SPDX-License-Identifier: Apache-2.0

package glcomment

import (
	"cmp"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	gitlab "gitlab.com/gitlab-org/api/client-go"

	"github.com/gpufleet/gpufleet/providers/outbound"
)

// DefaultAPIURL is GitLab.com's REST API root.
const DefaultAPIURL = "https://gitlab.com/api/v4"

// Retry bounds how GitLab's client retries a request that failed with a
// server error (5xx) or was throttled (429): up to Max more times, waiting
// from WaitMin, doubling, to WaitMax, or what Retry-After or
// RateLimit-Reset ask, up to WaitMax.
type Retry struct {
	Max              int
	WaitMin, WaitMax time.Duration
}

// DefaultRetry rides out a short outage or a throttled minute in CI.
var DefaultRetry = Retry{Max: 5, WaitMin: 500 * time.Millisecond, WaitMax: 30 * time.Second}

// Client posts plan notes through GitLab's API.
type Client struct {
	notes gitlab.NotesServiceInterface
	token Token
}

// Options tune a Client.
type Options struct {
	// Retry is how requests are retried; zero means DefaultRetry.
	Retry Retry
	// Timeout bounds one attempt; zero means DefaultTimeout.
	Timeout time.Duration
	// AllowHTTP lets the token go to a plain http API beyond loopback
	// (outbound.AllowHTTPEnv).
	AllowHTTP bool
	// Transport, when set, carries the requests: tests give one that
	// trusts their certificate.
	Transport http.RoundTripper
}

// DefaultTimeout bounds one request to GitLab, a note of a million
// characters included.
const DefaultTimeout = 30 * time.Second

// NewClient makes a client of the GitLab API at apiURL (CI_API_V4_URL in
// GitLab CI; DefaultAPIURL when empty) that authenticates with token. The
// token goes to apiURL's host only, never to where GitLab's answers
// point (a redirect, a Link header), and over https unless the host is
// loopback or opts.AllowHTTP.
func NewClient(token Token, apiURL string, opts Options) (*Client, error) {
	if token.value == "" {
		return nil, fmt.Errorf("no GitLab token")
	}
	if apiURL == "" {
		apiURL = DefaultAPIURL
	}
	// The client only warns, on the default logger, of a URL it cannot
	// use; refuse it here instead.
	api, err := outbound.CheckURL(apiURL, opts.AllowHTTP)
	if err != nil {
		return nil, fmt.Errorf("the GitLab API URL %q %w", apiURL, err)
	}
	retry := opts.Retry
	if retry == (Retry{}) {
		retry = DefaultRetry
	}
	clientOpts := []gitlab.ClientOptionFunc{
		gitlab.WithBaseURL(apiURL),
		gitlab.WithHTTPClient(outbound.NewClient(outbound.Policy{Timeout: cmp.Or(opts.Timeout, DefaultTimeout), Origin: api, Transport: opts.Transport})),
		gitlab.WithCustomRetryMax(retry.Max),
		gitlab.WithCustomRetryWaitMinMax(retry.WaitMin, retry.WaitMax),
		gitlab.WithCustomBackoff(backoff),
		gitlab.WithUserAgent("gpufleet"),
	}
	newClient := gitlab.NewClient // PRIVATE-TOKEN
	if token.Job {
		newClient = gitlab.NewJobClient // JOB-TOKEN
	}
	gl, err := newClient(token.value, clientOpts...)
	if err != nil {
		return nil, fmt.Errorf("making the GitLab client, %w", err)
	}
	return &Client{notes: gl.Notes, token: token}, nil
}

// backoff waits what a throttled or unavailable server asks, else doubles
// from min; never more than max. The client's own backoff ignores
// Retry-After and waits most of a second after every server error.
func backoff(min, max time.Duration, attempt int, resp *http.Response) time.Duration {
	if resp != nil && (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable) {
		if wait, ok := askedWait(resp.Header, time.Now()); ok {
			return clamp(wait, min, max)
		}
	}
	if attempt > 30 {
		return max
	}
	wait := time.Duration(float64(min) * math.Pow(2, float64(attempt)))
	return clamp(wait, min, max)
}

// askedWait reads how long the server asks to wait: Retry-After in seconds
// or as a date, else GitLab's RateLimit-Reset, a Unix time.
func askedWait(h http.Header, now time.Time) (time.Duration, bool) {
	if v := h.Get("Retry-After"); v != "" {
		if s, err := strconv.Atoi(v); err == nil && s >= 0 {
			return time.Duration(s) * time.Second, true
		}
		if t, err := http.ParseTime(v); err == nil {
			return t.Sub(now), true
		}
	}
	if v := h.Get("RateLimit-Reset"); v != "" {
		if s, err := strconv.ParseInt(v, 10, 64); err == nil && s > 0 {
			return time.Unix(s, 0).Sub(now), true
		}
	}
	return 0, false
}

func clamp(d, lo, hi time.Duration) time.Duration {
	if d < lo || d < 0 {
		return lo
	}
	if d > hi {
		return hi
	}
	return d
}
