// SPDX-License-Identifier: Apache-2.0

package oci

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"math/rand/v2"
	"net/http"
	"net/url"
	"time"

	"github.com/oracle/oci-go-sdk/v65/common"

	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/providers/outbound"
)

// call is what one SDK call is given: a context and gpufleet's retry
// policy, both bound to ctx.
//
// The SDK runs every call, retried or not, in a goroutine of its own
// (common.Retry), and when the call's context ends it returns at once,
// reading the goroutine's answer while that goroutine may still write it:
// a data race, and a goroutine left behind. So the SDK gets a context
// that never ends, carrying ctx, and the request takes ctx back where it
// is sent (see withCallContext): a cancelled call ends in its HTTP
// request, and the SDK returns only once its goroutine has. For the same
// reason the policy waits out a backoff itself, where ctx can end the
// wait, and leaves the SDK's own pause, which nothing ends, at zero.
func (p *Provider) call(ctx context.Context) (context.Context, common.RequestMetadata) {
	policy := common.NewRetryPolicy(uint(p.opts.RetryMax+1),
		func(r common.OCIOperationResponse) bool {
			if ctx.Err() != nil || !retryable(r.Error) {
				return false
			}
			wait := time.NewTimer(p.backoff(r))
			defer wait.Stop()
			select {
			case <-wait.C:
				return ctx.Err() == nil
			case <-ctx.Done():
				return false
			}
		},
		func(common.OCIOperationResponse) time.Duration { return 0 })
	return context.WithValue(context.WithoutCancel(ctx), callKey{}, ctx), common.RequestMetadata{RetryPolicy: &policy}
}

// callKey carries a call's own context past the SDK.
type callKey struct{}

// withCallContext is a request the SDK made with call's context, with the
// call's own context back, so that its end cancels the request.
func withCallContext(req *http.Request) *http.Request {
	if ctx, ok := req.Context().Value(callKey{}).(context.Context); ok {
		return req.Clone(ctx)
	}
	return req
}

// retryable says whether a failed attempt may succeed if repeated:
// throttling, OCI's own failures and a state in transition, and a request
// that got no answer. Never a stock-out, an exceeded limit or a refusal,
// which go back to the reconciler at once, nor a request outbound's policy
// kept from being sent, or one whose certificate failed.
//
// A launch is as safe to repeat as a read: its opc-retry-token makes OCI
// answer a repeat with the instance the first attempt launched.
func retryable(err error) bool {
	if err == nil {
		return false
	}
	if se, ok := common.IsServiceError(err); ok {
		switch kindOf("", se.GetHTTPStatusCode(), se.GetCode(), se.GetMessage()) {
		case providers.KindThrottled, providers.KindUnavailable:
			return true
		}
		return false
	}
	var urlErr *url.Error
	var unknownCA x509.UnknownAuthorityError
	var invalid x509.CertificateInvalidError
	var hostname x509.HostnameError
	var verify *tls.CertificateVerificationError
	switch {
	case !errors.As(err, &urlErr), errors.Is(err, outbound.ErrRefused),
		errors.Is(err, context.Canceled),
		errors.As(err, &unknownCA), errors.As(err, &invalid), errors.As(err, &hostname), errors.As(err, &verify):
		return false
	}
	return true
}

// backoff is the pause before the next attempt: doubling from
// RetryWaitMin, half of it random so that callers throttled together
// spread out, or what a Retry-After asks, both capped at RetryWaitMax (the
// emulator's tests wait milliseconds for what OCI would have them wait
// seconds).
func (p *Provider) backoff(r common.OCIOperationResponse) time.Duration {
	wait := p.opts.RetryWaitMin << min(r.AttemptNumber-1, 30)
	if wait <= 0 || wait > p.opts.RetryWaitMax {
		wait = p.opts.RetryWaitMax
	}
	wait = wait/2 + rand.N(wait/2+1)
	if after, ok := retryAfter(r.Response, time.Now()); ok {
		wait = max(wait, after)
	}
	return min(wait, p.opts.RetryWaitMax)
}

// retryAfter reads an answer's Retry-After, in seconds or as an HTTP date.
func retryAfter(resp common.OCIResponse, now time.Time) (time.Duration, bool) {
	if resp == nil || resp.HTTPResponse() == nil {
		return 0, false
	}
	return providers.RetryAfter(resp.HTTPResponse().Header, now)
}
