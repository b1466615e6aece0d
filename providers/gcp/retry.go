// SPDX-License-Identifier: Apache-2.0

package gcp

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/googleapis/gax-go/v2"
	"google.golang.org/api/googleapi"

	"github.com/gpufleet/gpufleet/providers"
)

// callOptions puts gpufleet's retry policy on one SDK call. The REST client
// retries only a few reads, and only on 503 and 504, so every call gets it:
// inserts and deletes are safe to repeat because they carry a requestId.
func (p *Provider) callOptions() []gax.CallOption {
	return []gax.CallOption{gax.WithRetry(func() gax.Retryer {
		return &retryer{
			attempts: p.opts.RetryAttempts,
			budget:   p.opts.RetryTime,
			base:     p.opts.RetryBase,
			max:      p.opts.RetryMax,
			now:      time.Now,
		}
	})}
}

// retryer is a gax.Retryer bounded in attempts and in total time. gax makes
// one per call and asks it after every failure.
type retryer struct {
	attempts int
	budget   time.Duration
	base     time.Duration
	max      time.Duration
	now      func() time.Time

	failures int
	start    time.Time
}

func (r *retryer) Retry(err error) (time.Duration, bool) {
	if r.failures == 0 {
		r.start = r.now()
	}
	r.failures++
	if r.failures >= r.attempts || !retryable(err) {
		return 0, false
	}
	backoff := r.base << (r.failures - 1)
	if backoff > r.max || backoff <= 0 {
		backoff = r.max
	}
	// Half fixed, half random: callers throttled together spread out, and
	// no pause falls below half the backoff.
	pause := backoff/2 + rand.N(backoff/2+1)
	if after, ok := retryAfter(err, r.now()); ok && after > pause {
		pause = after
	}
	if r.now().Sub(r.start)+pause > r.budget {
		return 0, false
	}
	return pause, true
}

// retryable says whether a failed call may succeed if repeated: throttling
// and the cloud's own failures, but never a stock-out or an exhausted
// quota, which go back to the reconciler to fail over.
func retryable(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	return providers.Retryable(classify("call", err))
}

// retryAfter reads a Retry-After header, in seconds or as an HTTP date.
func retryAfter(err error, now time.Time) (time.Duration, bool) {
	var gerr *googleapi.Error
	if !errors.As(err, &gerr) || gerr.Header == nil {
		return 0, false
	}
	return providers.RetryAfter(gerr.Header, now)
}
