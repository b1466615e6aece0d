// SPDX-License-Identifier: Apache-2.0

package gcp

import (
	"context"
	"net/http"
	"testing"
	"time"

	"google.golang.org/api/googleapi"
)

// fakeClock is a clock the retryer reads; each pause it grants is slept by
// moving it on.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func newTestRetryer(c *fakeClock) *retryer {
	return &retryer{attempts: 5, budget: 2 * time.Minute, base: time.Second, max: 30 * time.Second, now: c.now}
}

func withRetryAfter(err error, value string) error {
	gerr := err.(interface{ Unwrap() error }).Unwrap().(*googleapi.Error)
	gerr.Header = http.Header{"Retry-After": {value}}
	return err
}

func TestRetryerRetries(t *testing.T) {
	tests := []struct {
		name  string
		err   error
		retry bool
	}{
		{"403 rateLimitExceeded", httpError(403, "rateLimitExceeded", "Rate Limit Exceeded"), true},
		{"403 userRateLimitExceeded", httpError(403, "userRateLimitExceeded", ""), true},
		{"429", httpError(429, "", ""), true},
		{"500", httpError(500, "backendError", ""), true},
		{"502", httpError(502, "", ""), true},
		{"503", httpError(503, "", "The service is currently unavailable."), true},
		{"504", httpError(504, "", ""), true},
		{"transport failure", &net503{}, true},
		{"503 insufficientCapacity", httpError(503, "insufficientCapacity", ""), false},
		{"403 quotaExceeded", httpError(403, "quotaExceeded", ""), false},
		{"429 quotaExceeded", httpError(429, "quotaExceeded", ""), false},
		{"403 forbidden", httpError(403, "forbidden", ""), false},
		{"400 invalid", httpError(400, "invalid", ""), false},
		{"404 notFound", httpError(404, "notFound", ""), false},
		{"409 alreadyExists", httpError(409, "alreadyExists", ""), false},
		{"context cancelled", context.Canceled, false},
		{"deadline", context.DeadlineExceeded, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newTestRetryer(&fakeClock{t: time.Unix(0, 0)})
			pause, retry := r.Retry(tt.err)
			if retry != tt.retry {
				t.Fatalf("retry %v, want %v", retry, tt.retry)
			}
			if retry && (pause < 500*time.Millisecond || pause > time.Second) {
				t.Errorf("first pause %s, want within [0.5s, 1s]", pause)
			}
		})
	}
}

type net503 struct{}

func (*net503) Error() string { return "read tcp: connection reset by peer" }

func TestRetryerBoundsAttempts(t *testing.T) {
	c := &fakeClock{t: time.Unix(0, 0)}
	r := newTestRetryer(c)
	err := httpError(503, "", "")
	var pauses []time.Duration
	for {
		pause, retry := r.Retry(err)
		if !retry {
			break
		}
		pauses = append(pauses, pause)
		c.t = c.t.Add(pause)
	}
	// Five attempts: the first and four retries.
	if len(pauses) != 4 {
		t.Fatalf("retried %d times, want 4", len(pauses))
	}
	for i, p := range pauses {
		backoff := time.Second << i
		if p < backoff/2 || p > backoff {
			t.Errorf("pause %d is %s, want within [%s, %s]", i, p, backoff/2, backoff)
		}
	}
}

func TestRetryerBoundsTime(t *testing.T) {
	c := &fakeClock{t: time.Unix(0, 0)}
	r := newTestRetryer(c)
	r.attempts = 100
	err := httpError(429, "", "")
	var slept time.Duration
	for {
		pause, retry := r.Retry(err)
		if !retry {
			break
		}
		slept += pause
		c.t = c.t.Add(pause)
	}
	if slept > r.budget {
		t.Errorf("retried for %s, beyond the budget of %s", slept, r.budget)
	}
	if slept < r.budget-r.max {
		t.Errorf("gave up after %s, well within the budget of %s", slept, r.budget)
	}
}

func TestRetryerHonoursRetryAfter(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		header string
		want   time.Duration
		retry  bool
	}{
		{"seconds", "7", 7 * time.Second, true},
		{"HTTP date", now.Add(9 * time.Second).Format(http.TimeFormat), 9 * time.Second, true},
		{"shorter than the backoff", "0", 0, true},
		{"beyond the budget", "600", 0, false},
		{"unreadable", "soon", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newTestRetryer(&fakeClock{t: now})
			pause, retry := r.Retry(withRetryAfter(httpError(429, "rateLimitExceeded", ""), tt.header))
			if retry != tt.retry {
				t.Fatalf("retry %v, want %v", retry, tt.retry)
			}
			if !retry {
				return
			}
			if tt.want > time.Second && pause != tt.want {
				t.Errorf("pause %s, want Retry-After's %s", pause, tt.want)
			}
			if tt.want <= time.Second && (pause < 500*time.Millisecond || pause > time.Second) {
				t.Errorf("pause %s, want the backoff's", pause)
			}
		})
	}
}
