// SPDX-License-Identifier: Apache-2.0

package oci

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/providers"
)

// TestErrorKinds: each of OCI's error answers to a launch, as the SDK
// reads it off the wire, is classified by what the caller should do,
// keeps OCI's code, message and request id, and names the offer; the
// ones worth repeating are repeated, the others are not.
func TestErrorKinds(t *testing.T) {
	for _, tt := range []struct {
		name          string
		status        int
		code, message string
		want          providers.Kind
		attempts      int
	}{
		{"a stock-out", http.StatusInternalServerError, "InternalError", "Out of host capacity.", providers.KindCapacity, 1},
		{"a service limit", http.StatusBadRequest, "LimitExceeded", "The following service limits were exceeded: gpu-a10-count", providers.KindQuota, 1},
		{"a compartment quota", http.StatusBadRequest, "QuotaExceeded", "Quota exceeded for gpu-a10-count", providers.KindQuota, 1},
		{"throttling", http.StatusTooManyRequests, "TooManyRequests", "Too many requests for the user", providers.KindThrottled, 4},
		{"refused credentials", http.StatusUnauthorized, "NotAuthenticated", "The required information to complete authentication was not provided.", providers.KindAuth, 1},
		{"a missing policy", http.StatusForbidden, "NotAuthorized", "not authorized", providers.KindAuth, 1},
		{"not found", http.StatusNotFound, "NotAuthorizedOrNotFound", "Authorization failed or requested resource not found.", providers.KindNotFound, 1},
		{"a retry token used for another request", http.StatusConflict, "Conflict", "The retry token was used for a different request.", providers.KindTokenSpent, 1},
		{"an invalidated retry token", http.StatusConflict, "InvalidatedRetryToken", "The retry token was invalidated.", providers.KindTokenSpent, 1},
		{"a bad parameter", http.StatusBadRequest, "InvalidParameter", "Shape VM.GPU.A10.1 is not valid for availability domain Uocm:US-ASHBURN-AD-1", providers.KindInvalid, 1},
		{"a missing parameter", http.StatusBadRequest, "MissingParameter", "subnetId is required", providers.KindInvalid, 1},
		{"OCI's own failure", http.StatusInternalServerError, "InternalError", "Internal error", providers.KindUnavailable, 4},
		{"an outage", http.StatusServiceUnavailable, "ServiceUnavailable", "Service unavailable", providers.KindUnavailable, 4},
		{"a state in transition", http.StatusConflict, "IncorrectState", "The instance is being updated", providers.KindUnavailable, 4},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := newFakeBackend(t)
			b.oci.fail("LaunchInstance", 10, fakeFault{status: tt.status, code: tt.code, message: tt.message})
			req := request("f", 0)
			_, err := b.provider.Create(context.Background(), req)
			var pe *providers.Error
			if !errors.As(err, &pe) {
				t.Fatalf("Create: %v, not a *providers.Error", err)
			}
			if pe.Kind != tt.want || pe.Code != tt.code || pe.Cloud != Name || pe.Offer != req.Offer || pe.Op != "create" {
				t.Errorf("Create: %+v, want kind %s and code %s on %s", pe, tt.want, tt.code, req.Offer)
			}
			if !strings.Contains(pe.Message, tt.message) || !strings.Contains(pe.Message, "fake-request-1") {
				t.Errorf("the message %q loses OCI's message or request id", pe.Message)
			}
			if n := b.oci.calls("LaunchInstance"); n != tt.attempts {
				t.Errorf("launched %d times, want %d", n, tt.attempts)
			}
		})
	}
}

func TestKindOf(t *testing.T) {
	for _, tt := range []struct {
		op            string
		status        int
		code, message string
		want          providers.Kind
	}{
		{"create", 500, "InternalError", "Out of host capacity.", providers.KindCapacity},
		{"create", 500, "InternalError", "Out of capacity for shape BM.GPU4.8 in availability domain Uocm:PHX-AD-1.", providers.KindCapacity},
		{"create", 500, "InternalError", "Internal error", providers.KindUnavailable},
		// A conflict outside a launch is no token of gpufleet's.
		{"delete", 409, "Conflict", "The requested state conflicts", providers.KindInvalid},
		{"delete", 409, "IncorrectState", "Instance is stopping", providers.KindUnavailable},
		{"create", 409, "NotAuthorizedOrResourceAlreadyExists", "not authorized", providers.KindAuth},
		{"create", 402, "SignUpRequired", "sign up first", providers.KindAuth},
		// No such operation is a client out of step, not a gone instance.
		{"delete", 404, "NotFound", "no such route", providers.KindInvalid},
		{"list", 404, "NotAuthorizedOrNotFound", "not found", providers.KindNotFound},
		{"list", 418, "", "", providers.KindInvalid},
		{"list", 502, "", "", providers.KindUnavailable},
	} {
		if got := kindOf(tt.op, tt.status, tt.code, tt.message); got != tt.want {
			t.Errorf("kindOf(%s, %d, %s, %q) = %s, want %s", tt.op, tt.status, tt.code, tt.message, got, tt.want)
		}
	}
}

// TestAuthError: refused credentials say where they come from, and
// never show the key.
func TestAuthError(t *testing.T) {
	// One region, so that no request of a list cancelled by the other
	// region's failure arrives late and takes the next fault.
	b := newFakeBackendWith(t, ashburnOnly())
	b.oci.fail("ListInstances", 1, fakeFault{status: http.StatusUnauthorized, code: "NotAuthenticated", message: "The required information to complete authentication was not provided or was incorrect."})
	_, err := b.provider.List(context.Background(), providers.Selector{})
	if !errors.Is(err, providers.ErrAuth) || !strings.Contains(err.Error(), "configuration provider") {
		t.Fatalf("List: %v, want an auth error naming where the credentials came from", err)
	}
	keys, _ := testKeys()
	fingerprint, _ := keys.KeyFingerprint()
	if strings.Contains(err.Error(), "PRIVATE KEY") || strings.Contains(err.Error(), fingerprint) {
		t.Errorf("the error shows the key: %v", err)
	}
	// With the SDK's own chain, it names the file and the variables.
	b.provider.credentials = defaultCredentials
	b.oci.fail("ListInstances", 1, fakeFault{status: http.StatusUnauthorized, code: "NotAuthenticated", message: "refused"})
	_, err = b.provider.List(context.Background(), providers.Selector{})
	if !strings.Contains(err.Error(), "~/.oci/config") || !strings.Contains(err.Error(), "OCI_CONFIG_FILE") || !strings.Contains(err.Error(), "TF_VAR_") {
		t.Errorf("List: %v, want it to name ~/.oci/config, OCI_CONFIG_FILE and the TF_VAR_ variables", err)
	}
}

// TestThrottledRetried: throttled calls are retried, honouring a
// Retry-After within the backoff's bound, and pass once OCI lets them.
func TestThrottledRetried(t *testing.T) {
	b := newFakeBackend(t)
	b.oci.fail("ListInstances", 2, fakeFault{status: http.StatusTooManyRequests, code: "TooManyRequests", message: "slow down", retryAfter: "1"})
	if _, err := b.provider.List(context.Background(), providers.Selector{}); err != nil {
		t.Fatalf("List under throttling: %v", err)
	}
	// Two throttled and one answered in the first region, one in the
	// other.
	if n := b.oci.calls("ListInstances"); n != 4 {
		t.Errorf("%d list calls, want 4", n)
	}
}

// TestTransportError: a request that gets no answer is unavailable, and
// its error names no URL.
func TestTransportError(t *testing.T) {
	dead := newTestProvider(t, testConfig(), "http://127.0.0.1:1")
	_, err := dead.List(context.Background(), providers.Selector{})
	if !errors.Is(err, providers.ErrUnavailable) || strings.Contains(err.Error(), "/20160918") {
		t.Fatalf("List against nothing: %v, want unavailable without the URL", err)
	}
}

// TestCancelledWhileWaiting: a call whose context ends while it waits to
// retry ends then, not when the wait would have.
func TestCancelledWhileWaiting(t *testing.T) {
	b := newFakeBackend(t)
	keys, _ := testKeys()
	slow, err := New(context.Background(), ashburnOnly(), testCatalog(), Options{Endpoint: b.url, ConfigurationProvider: keys, RetryWaitMin: time.Minute, RetryWaitMax: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	b.oci.fail("ListInstances", 10, fakeFault{status: http.StatusTooManyRequests, code: "TooManyRequests", message: "slow down"})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	start := time.Now()
	_, err = slow.List(ctx, providers.Selector{})
	if took := time.Since(start); err == nil || took > 30*time.Second {
		t.Fatalf("List cancelled while waiting to retry: %v after %s", err, took)
	}
	if !errors.Is(err, providers.ErrThrottled) {
		t.Errorf("List: %v, want the throttling it was waiting out", err)
	}
}
