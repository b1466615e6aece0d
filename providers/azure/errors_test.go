// SPDX-License-Identifier: Apache-2.0

package azure

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"

	"github.com/gpufleet/gpufleet/providers"
)

// armResponse is an ARM error as azcore hands it over: the code in
// x-ms-error-code (unless headerless) and in the body's envelope.
func armResponse(status int, code, message string, headerless bool) error {
	body := `{"error":{"code":"` + code + `","message":"` + message + `"}}`
	resp := &http.Response{
		StatusCode: status,
		Status:     http.StatusText(status),
		Header:     http.Header{"Content-Type": {"application/json"}},
		Body:       io.NopCloser(strings.NewReader(body)),
		Request:    &http.Request{Method: http.MethodPut, URL: &url.URL{Scheme: "https", Host: "management.azure.com", Path: "/subscriptions/s"}},
	}
	if code != "" && !headerless {
		resp.Header.Set("x-ms-error-code", code)
	}
	return runtime.NewResponseError(resp)
}

// operationFailure is a failed long-running operation as the poller
// reports it: the status of the poll (200) and the code in the body only.
func operationFailure(code, message string) error {
	body := `{"status":"Failed","error":{"code":"` + code + `","message":"` + message + `"}}`
	resp := &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(body)),
		Request: &http.Request{Method: http.MethodGet, URL: &url.URL{Scheme: "https", Host: "management.azure.com", Path: "/op"}}}
	return runtime.NewResponseError(resp)
}

const quotaMessage = "Operation results in exceeding quota limits of Core. Maximum allowed: 4, Current in use: 4, Additional requested: 2."

func TestClassify(t *testing.T) {
	tests := []struct {
		name     string
		err      error
		want     providers.Kind
		wantCode string
	}{
		{"AllocationFailed on the operation", operationFailure("AllocationFailed", "Allocation failed."), providers.KindCapacity, "AllocationFailed"},
		{"ZonalAllocationFailed on the operation", operationFailure("ZonalAllocationFailed", "Allocation failed in this zone."), providers.KindCapacity, "ZonalAllocationFailed"},
		{"OverconstrainedAllocationRequest on the operation", operationFailure("OverconstrainedAllocationRequest", "Too restrictive."), providers.KindCapacity, "OverconstrainedAllocationRequest"},
		{"AllocationFailed on the PUT", armResponse(409, "AllocationFailed", "Allocation failed.", false), providers.KindCapacity, "AllocationFailed"},
		{"SkuNotAvailable", armResponse(409, "SkuNotAvailable", "The requested size is not available.", false), providers.KindCapacity, "SkuNotAvailable"},
		{"SkuNotAvailable from the body alone", armResponse(409, "SkuNotAvailable", "The requested size is not available.", true), providers.KindCapacity, "SkuNotAvailable"},
		{"OperationNotAllowed over quota", armResponse(409, "OperationNotAllowed", quotaMessage, false), providers.KindQuota, "OperationNotAllowed"},
		{"OperationNotAllowed for another reason", armResponse(409, "OperationNotAllowed", "Operation 'PUT' is not allowed on VM 'x' since the VM is marked for deletion.", false), providers.KindInvalid, "OperationNotAllowed"},
		{"ResourceQuotaExceeded", armResponse(409, "ResourceQuotaExceeded", "Submitting this would exceed the subscription's resource quota.", false), providers.KindQuota, "ResourceQuotaExceeded"},
		{"429 TooManyRequests", armResponse(429, "TooManyRequests", "The request is being throttled.", false), providers.KindThrottled, "TooManyRequests"},
		{"429 without a code", armResponse(429, "", "", false), providers.KindThrottled, ""},
		{"401 InvalidAuthenticationToken", armResponse(401, "InvalidAuthenticationToken", "The access token is invalid.", false), providers.KindAuth, "InvalidAuthenticationToken"},
		{"401 AuthenticationFailed", armResponse(401, "AuthenticationFailed", "Authentication failed.", false), providers.KindAuth, "AuthenticationFailed"},
		{"403 AuthorizationFailed", armResponse(403, "AuthorizationFailed", "The client does not have authorization.", false), providers.KindAuth, "AuthorizationFailed"},
		{"403 LinkedAuthorizationFailed", armResponse(403, "LinkedAuthorizationFailed", "The client has no permission on the subnet.", false), providers.KindAuth, "LinkedAuthorizationFailed"},
		{"401 InvalidAuthenticationTokenTenant", armResponse(401, "InvalidAuthenticationTokenTenant", "Wrong tenant.", false), providers.KindAuth, "InvalidAuthenticationTokenTenant"},
		{"404 ResourceNotFound", armResponse(404, "ResourceNotFound", "The Resource was not found.", false), providers.KindNotFound, "ResourceNotFound"},
		{"404 NotFound", armResponse(404, "NotFound", "Not found.", false), providers.KindNotFound, "NotFound"},
		{"404 ResourceGroupNotFound is a config error", armResponse(404, "ResourceGroupNotFound", "Resource group 'x' could not be found.", false), providers.KindInvalid, "ResourceGroupNotFound"},
		{"404 SubscriptionNotFound is a config error", armResponse(404, "SubscriptionNotFound", "The subscription 'x' could not be found.", false), providers.KindInvalid, "SubscriptionNotFound"},
		{"400 InvalidParameter", armResponse(400, "InvalidParameter", "The value of parameter imageReference is invalid.", false), providers.KindInvalid, "InvalidParameter"},
		{"409 PropertyChangeNotAllowed", armResponse(409, "PropertyChangeNotAllowed", "Changing property 'zones' is not allowed.", false), providers.KindInvalid, "PropertyChangeNotAllowed"},
		{"412 PreconditionFailed", armResponse(412, "PreconditionFailed", "The condition is not met.", false), providers.KindInvalid, "PreconditionFailed"},
		{"408", armResponse(408, "RequestTimeout", "Timed out.", false), providers.KindUnavailable, "RequestTimeout"},
		{"500 InternalServerError", armResponse(500, "InternalServerError", "Encountered internal server error.", false), providers.KindUnavailable, "InternalServerError"},
		{"502", armResponse(502, "BadGateway", "Bad gateway.", false), providers.KindUnavailable, "BadGateway"},
		{"503 ServiceUnavailable", armResponse(503, "ServiceUnavailable", "The service is unavailable.", false), providers.KindUnavailable, "ServiceUnavailable"},
		{"504 GatewayTimeout", armResponse(504, "GatewayTimeout", "Gateway timeout.", false), providers.KindUnavailable, "GatewayTimeout"},
		{"InternalExecutionError on the operation", operationFailure("InternalExecutionError", "An internal execution error occurred."), providers.KindUnavailable, "InternalExecutionError"},
		{"the credential chain failed", &credentialError{errors.New("DefaultAzureCredential: failed to acquire a token")}, providers.KindAuth, ""},
		{"a transport failure", &url.Error{Op: "Put", URL: "https://management.azure.com", Err: errors.New("connection refused")}, providers.KindUnavailable, ""},
		{"a deadline", context.DeadlineExceeded, providers.KindUnavailable, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := classify("create", onDemandT4, tt.err)
			var pe *providers.Error
			if !errors.As(err, &pe) {
				t.Fatalf("not a providers.Error: %v", err)
			}
			if pe.Kind != tt.want || pe.Code != tt.wantCode || pe.Cloud != "azure" || pe.Op != "create" || pe.Offer != onDemandT4 {
				t.Errorf("got kind %q code %q cloud %q op %q offer %s, want kind %q code %q", pe.Kind, pe.Code, pe.Cloud, pe.Op, pe.Offer, tt.want, tt.wantCode)
			}
			if !errors.Is(err, tt.err) {
				t.Errorf("the classified error does not wrap the original")
			}
			var re *azcore.ResponseError
			if errors.As(tt.err, &re) && tt.wantCode != "" && (pe.Message == "" || strings.HasPrefix(pe.Message, "HTTP ")) {
				t.Errorf("message %q: ARM's message was not kept", pe.Message)
			}
		})
	}
}

func TestClassifyKeepsQuotaMessage(t *testing.T) {
	err := classify("create", onDemandT4, armResponse(409, "OperationNotAllowed", quotaMessage, false))
	var pe *providers.Error
	if !errors.As(err, &pe) || pe.Message != quotaMessage {
		t.Fatalf("message %q, want ARM's", pe.Message)
	}
	if !errors.Is(err, providers.ErrQuota) || providers.Retryable(err) {
		t.Errorf("a quota error must match ErrQuota and not be retryable: %v", err)
	}
}
