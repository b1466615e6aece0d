// SPDX-License-Identifier: Apache-2.0

package lambda

import (
	"context"
	"net/http"
	"time"

	"github.com/hashicorp/go-retryablehttp"

	"github.com/gpufleet/gpufleet/providers/outbound"
)

// newClient is the retrying client every call goes through: to the
// endpoint's origin only, each attempt bounded by the timeout, nothing
// logged (a log line could carry the key's header), and the last answer
// of a request that ran out of retries handed back, so its error body is
// classified like any other.
func (p *Provider) newClient() *retryablehttp.Client {
	policy := outbound.Policy{Timeout: p.opts.Timeout, Origin: p.base}
	if p.opts.HTTPClient != nil {
		policy.Transport = p.opts.HTTPClient.Transport
	}
	c := outbound.Retrying(policy)
	c.RetryMax = p.opts.RetryMax
	c.RetryWaitMin = p.opts.RetryWaitMin
	c.RetryWaitMax = p.opts.RetryWaitMax
	c.CheckRetry = checkRetry
	c.Backoff = backoff
	c.ErrorHandler = func(resp *http.Response, err error, _ int) (*http.Response, error) {
		if resp != nil {
			return resp, nil
		}
		return nil, err
	}
	return c
}

// onceKey marks a request that must not be sent twice unless the API
// refused it at the door.
type onceKey struct{}

// once marks ctx's request as one a repeat could duplicate: a launch,
// which the API takes no token for. Such a request is retried on a 429
// only, which Lambda answers before doing anything; a 5xx or a lost
// connection may have launched the instance, and a second attempt would
// launch another. It goes back to the caller instead, whose next create
// finds the instance by name if it was made.
func once(ctx context.Context) context.Context { return context.WithValue(ctx, onceKey{}, true) }

// checkRetry retries throttling (429), the API's own failures (5xx) and
// failed connections, except for requests marked once, and never a
// request the client's policy refused or whose context ended.
func checkRetry(ctx context.Context, resp *http.Response, err error) (bool, error) {
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	if single, _ := ctx.Value(onceKey{}).(bool); single {
		return err == nil && resp.StatusCode == http.StatusTooManyRequests, nil
	}
	return outbound.CheckRetry(ctx, resp, err)
}

// backoff doubles from minWait, and honours a Retry-After on a 429 or 503,
// both capped at maxWait: the emulator's tests and demo wait milliseconds
// for what Lambda would have them wait seconds.
func backoff(minWait, maxWait time.Duration, attempt int, resp *http.Response) time.Duration {
	return min(retryablehttp.DefaultBackoff(minWait, maxWait, attempt, resp), maxWait)
}
