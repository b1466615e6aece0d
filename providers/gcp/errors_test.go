// SPDX-License-Identifier: Apache-2.0

package gcp

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	"cloud.google.com/go/compute/apiv1/computepb"
	"github.com/googleapis/gax-go/v2/apierror"
	"google.golang.org/api/googleapi"
	"google.golang.org/protobuf/proto"

	"github.com/gpufleet/gpufleet/providers"
)

// httpError is an error as the REST client returns it: GCE's envelope read
// into a googleapi.Error, wrapped by gax in an apierror.APIError.
func httpError(status int, reason, message string) error {
	gerr := &googleapi.Error{Code: status, Message: message, Header: http.Header{}}
	if reason != "" {
		gerr.Errors = []googleapi.ErrorItem{{Reason: reason, Message: message}}
	}
	if aerr, ok := apierror.FromError(gerr); ok {
		return aerr
	}
	return gerr
}

// failedOperation is a finished operation with one error, as GCE reports a
// failure after it accepted the request.
func failedOperation(code, message string, status int32) *computepb.Operation {
	op := &computepb.Operation{
		Status: computepb.Operation_DONE.Enum(),
		Error:  &computepb.Error{Errors: []*computepb.Errors{{Code: proto.String(code), Message: proto.String(message)}}},
	}
	if status != 0 {
		op.HttpErrorStatusCode = proto.Int32(status)
		op.HttpErrorMessage = proto.String(http.StatusText(int(status)))
	}
	return op
}

// TestClassifyCodes covers every code the classifier knows, each as a
// synchronous reason and as an operation's code: a code means the same
// wherever GCE reports it.
func TestClassifyCodes(t *testing.T) {
	tests := []struct {
		code   string
		status int
		want   providers.Kind
	}{
		{"ZONE_RESOURCE_POOL_EXHAUSTED", 503, providers.KindCapacity},
		{"ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS", 503, providers.KindCapacity},
		{"insufficientCapacity", 503, providers.KindCapacity},
		{"QUOTA_EXCEEDED", 403, providers.KindQuota},
		{"quotaExceeded", 403, providers.KindQuota},
		{"rateLimitExceeded", 403, providers.KindThrottled},
		{"userRateLimitExceeded", 403, providers.KindThrottled},
		{"RESOURCE_OPERATION_RATE_EXCEEDED", 403, providers.KindThrottled},
		{"CONCURRENT_OPERATIONS_QUOTA_EXCEEDED", 403, providers.KindThrottled},
		{"notFound", 404, providers.KindNotFound},
		{"RESOURCE_NOT_FOUND", 404, providers.KindNotFound},
		{"forbidden", 403, providers.KindAuth},
		{"insufficientPermissions", 403, providers.KindAuth},
		{"authError", 401, providers.KindAuth},
		{"unauthorized", 401, providers.KindAuth},
		{"accessNotConfigured", 403, providers.KindAuth},
		{"PERMISSIONS_ERROR", 403, providers.KindAuth},
		{"SERVICE_ACCOUNT_ACCESS_DENIED", 403, providers.KindAuth},
		{"invalid", 400, providers.KindInvalid},
		{"required", 400, providers.KindInvalid},
		{"badRequest", 400, providers.KindInvalid},
		{"invalidParameter", 400, providers.KindInvalid},
		{"conditionNotMet", 412, providers.KindInvalid},
		{"alreadyExists", 409, providers.KindInvalid},
		{"RESOURCE_ALREADY_EXISTS", 409, providers.KindInvalid},
		{"INVALID_FIELD_VALUE", 400, providers.KindInvalid},
		{"UNSUPPORTED_OPERATION", 400, providers.KindInvalid},
		{"resourceInUseByAnotherResource", 400, providers.KindInvalid},
		{"backendError", 500, providers.KindUnavailable},
		{"internalError", 500, providers.KindUnavailable},
		{"INTERNAL_ERROR", 500, providers.KindUnavailable},
		{"resourceNotReady", 400, providers.KindUnavailable},
		{"RESOURCE_NOT_READY", 400, providers.KindUnavailable},
	}
	covered := map[string]bool{}
	for _, tt := range tests {
		covered[tt.code] = true
		t.Run(tt.code, func(t *testing.T) {
			msg := "message for " + tt.code
			got := classify("create", httpError(tt.status, tt.code, msg))
			if got.Kind != tt.want || got.Code != tt.code || got.Message != msg || got.Cloud != Name || got.Op != "create" {
				t.Errorf("synchronous: got %+v, want kind %s with code and message kept", got, tt.want)
			}
			got = operationError("create", failedOperation(tt.code, msg, int32(tt.status)))
			if got == nil || got.Kind != tt.want || got.Code != tt.code || got.Message != msg {
				t.Errorf("on the operation: got %+v, want kind %s", got, tt.want)
			}
		})
	}
	for code := range codeKinds {
		if !covered[code] {
			t.Errorf("code %s has no case", code)
		}
	}
}

// TestClassifyFallbacks covers what no known code decides.
func TestClassifyFallbacks(t *testing.T) {
	tests := []struct {
		name     string
		err      error
		want     providers.Kind
		wantCode string
	}{
		{"unknown reason, 403", httpError(403, "somethingNew", "no"), providers.KindAuth, "somethingNew"},
		{"no reason, 401", httpError(401, "", "login required"), providers.KindAuth, "401"},
		{"no reason, 404", httpError(404, "", ""), providers.KindNotFound, "404"},
		{"no reason, 429", httpError(429, "", "slow down"), providers.KindThrottled, "429"},
		{"no reason, 502", httpError(502, "", "bad gateway"), providers.KindUnavailable, "502"},
		{"no reason, 503", httpError(503, "", ""), providers.KindUnavailable, "503"},
		{"no reason, 400", httpError(400, "", "bad"), providers.KindInvalid, "400"},
		{"no reason, 408", httpError(408, "", ""), providers.KindUnavailable, "408"},
		{"capacity behind a 429", httpError(429, "insufficientCapacity", "none left"), providers.KindCapacity, "insufficientCapacity"},
		{"bare googleapi error", &googleapi.Error{Code: 503, Errors: []googleapi.ErrorItem{{Reason: "insufficientCapacity"}}}, providers.KindCapacity, "insufficientCapacity"},
		{"wrapped", fmt.Errorf("waiting, %w", httpError(403, "quotaExceeded", "Quota 'CPUS' exceeded.")), providers.KindQuota, "quotaExceeded"},
		{"transport failure", errors.New("dial tcp 127.0.0.1:1: connection refused"), providers.KindUnavailable, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := classify("list", tt.err)
			if got.Kind != tt.want || got.Code != tt.wantCode {
				t.Errorf("got %s (%q), want %s (%q)", got.Kind, got.Code, tt.want, tt.wantCode)
			}
			if !errors.Is(got, tt.err) {
				t.Errorf("the classified error does not wrap the SDK's")
			}
		})
	}
}

func TestOperationError(t *testing.T) {
	tests := []struct {
		name     string
		op       *computepb.Operation
		want     providers.Kind // "" for no error
		wantCode string
	}{
		{"succeeded", &computepb.Operation{Status: computepb.Operation_DONE.Enum()}, "", ""},
		{"succeeded with a 200 status", &computepb.Operation{Status: computepb.Operation_DONE.Enum(), HttpErrorStatusCode: proto.Int32(200)}, "", ""},
		// Operation.Wait would return no error here: the operation
		// carries no HTTP status, only its error list.
		{"stock-out without an HTTP status", failedOperation("ZONE_RESOURCE_POOL_EXHAUSTED", "The zone 'projects/p/zones/z' does not have enough resources", 0), providers.KindCapacity, "ZONE_RESOURCE_POOL_EXHAUSTED"},
		{"quota with its HTTP status", failedOperation("QUOTA_EXCEEDED", "Quota 'GPUS_ALL_REGIONS' exceeded. Limit: 8.0 globally.", 403), providers.KindQuota, "QUOTA_EXCEEDED"},
		{"unknown code, HTTP 503", failedOperation("SOMETHING_NEW", "?", 503), providers.KindUnavailable, "SOMETHING_NEW"},
		{"unknown code, HTTP 400", failedOperation("SOMETHING_NEW", "?", 400), providers.KindInvalid, "SOMETHING_NEW"},
		{"unknown code, no status", failedOperation("SOMETHING_NEW", "?", 0), providers.KindUnavailable, "SOMETHING_NEW"},
		{"only an HTTP status", &computepb.Operation{Status: computepb.Operation_DONE.Enum(), HttpErrorStatusCode: proto.Int32(500), HttpErrorMessage: proto.String("INTERNAL SERVER ERROR")}, providers.KindUnavailable, "500"},
		{"the known code wins over the first", &computepb.Operation{
			Status: computepb.Operation_DONE.Enum(),
			Error: &computepb.Error{Errors: []*computepb.Errors{
				{Code: proto.String("SOMETHING_NEW"), Message: proto.String("first")},
				{Code: proto.String("ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS"), Message: proto.String("second")},
			}},
		}, providers.KindCapacity, "ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := operationError("create", tt.op)
			if tt.want == "" {
				if got != nil {
					t.Errorf("got %v, want no error", got)
				}
				return
			}
			if got == nil || got.Kind != tt.want || got.Code != tt.wantCode {
				t.Errorf("got %+v, want %s (%s)", got, tt.want, tt.wantCode)
			}
		})
	}
}
