// SPDX-License-Identifier: Apache-2.0

package aws

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/gpufleet/gpufleet/providers"
)

// apiError is an EC2 error as the SDK returns it: the API error inside the
// HTTP response error.
func apiError(status int, code string) error {
	return &awshttp.ResponseError{ResponseError: &smithyhttp.ResponseError{
		Response: &smithyhttp.Response{Response: &http.Response{StatusCode: status}},
		Err:      &smithy.GenericAPIError{Code: code, Message: "message of " + code},
	}}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		status int
		code   string
		want   providers.Kind
	}{
		{500, "InsufficientInstanceCapacity", providers.KindCapacity},
		{500, "InsufficientHostCapacity", providers.KindCapacity},
		{500, "InsufficientReservedInstanceCapacity", providers.KindCapacity},
		{500, "InsufficientCapacity", providers.KindCapacity},
		{500, "InsufficientAddressCapacity", providers.KindCapacity},
		{500, "InsufficientVolumeCapacity", providers.KindCapacity},
		{400, "InsufficientFreeAddressesInSubnet", providers.KindCapacity},
		{400, "UnfulfillableCapacity", providers.KindCapacity},
		{400, "SpotMaxPriceTooLow", providers.KindCapacity},
		{400, "Unsupported", providers.KindCapacity},

		{400, "InstanceLimitExceeded", providers.KindQuota},
		{400, "VcpuLimitExceeded", providers.KindQuota},
		{400, "MaxSpotInstanceCountExceeded", providers.KindQuota},

		{503, "RequestLimitExceeded", providers.KindThrottled},
		{400, "Throttling", providers.KindThrottled},
		{429, "SomethingNew", providers.KindThrottled},

		{400, "InvalidInstanceID.NotFound", providers.KindNotFound},

		{401, "AuthFailure", providers.KindAuth},
		{403, "UnauthorizedOperation", providers.KindAuth},
		{403, "AccessDeniedException", providers.KindAuth},
		{403, "InvalidClientTokenId", providers.KindAuth},
		{403, "SignatureDoesNotMatch", providers.KindAuth},
		{400, "IncompleteSignature", providers.KindAuth},
		{403, "MissingAuthenticationToken", providers.KindAuth},
		{400, "ExpiredToken", providers.KindAuth},
		{400, "RequestExpired", providers.KindAuth},
		{401, "OptInRequired", providers.KindAuth},
		{403, "Blocked", providers.KindAuth},
		{401, "PendingVerification", providers.KindAuth},

		{400, "IdempotentParameterMismatch", providers.KindInvalid},
		{400, "InvalidParameterValue", providers.KindInvalid},
		{400, "InvalidParameter", providers.KindInvalid},
		{400, "InvalidParameterCombination", providers.KindInvalid},
		{400, "MissingParameter", providers.KindInvalid},
		{400, "InvalidAMIID.Malformed", providers.KindInvalid},
		{400, "InvalidAMIID.NotFound", providers.KindInvalid},
		{400, "InvalidSubnetID.NotFound", providers.KindInvalid},
		{400, "InvalidGroup.NotFound", providers.KindInvalid},
		{400, "InvalidGroupId.Malformed", providers.KindInvalid},
		{400, "InvalidInstanceID.Malformed", providers.KindInvalid},
		{400, "TagLimitExceeded", providers.KindInvalid},
		{400, "InvalidPlacementGroup.Unknown", providers.KindInvalid},
		{400, "InvalidPlacementGroup.InUse", providers.KindInvalid},
		{400, "InvalidPlacementGroup.Duplicate", providers.KindInvalid},
		{400, "InvalidPlacementGroupId.Malformed", providers.KindInvalid},
		{400, "SomeFutureClientError", providers.KindInvalid},

		{500, "InternalError", providers.KindUnavailable},
		{500, "InternalFailure", providers.KindUnavailable},
		{503, "ServiceUnavailable", providers.KindUnavailable},
		{503, "Unavailable", providers.KindUnavailable},
		{502, "SomeFutureServerError", providers.KindUnavailable},
	}
	// Every code the table names is tested.
	tested := map[string]bool{}
	for _, tt := range tests {
		tested[tt.code] = true
	}
	for code := range codeKinds {
		if !tested[code] {
			t.Errorf("code %s is classified but not tested", code)
		}
	}
	offer := testOffer
	for _, tt := range tests {
		t.Run(tt.code, func(t *testing.T) {
			err := classify("create", offer, fmt.Errorf("operation error EC2: RunInstances, %w", apiError(tt.status, tt.code)))
			var pe *providers.Error
			if !errors.As(err, &pe) {
				t.Fatalf("got %T, want *providers.Error", err)
			}
			if pe.Kind != tt.want || pe.Code != tt.code || pe.Message != "message of "+tt.code || pe.Cloud != "aws" || pe.Op != "create" || pe.Offer != offer {
				t.Errorf("got %+v, want kind %s with the code, message, cloud, op and offer", pe, tt.want)
			}
		})
	}
}

func TestClassifyWithoutAPIError(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want providers.Kind
	}{
		{"no credentials", fmt.Errorf("get identity: %w", &credentialsError{err: errors.New("no EC2 IMDS role found")}), providers.KindAuth},
		{"connection refused", errors.New("dial tcp 127.0.0.1:1: connect: connection refused"), providers.KindUnavailable},
		{"deadline", context.DeadlineExceeded, providers.KindUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := classify("list", testOffer, tt.err)
			if got := providers.KindOf(err); got != tt.want {
				t.Errorf("kind %s, want %s", got, tt.want)
			}
			if !errors.Is(err, tt.err) {
				t.Errorf("%v does not wrap %v", err, tt.err)
			}
		})
	}
}

// The retryer gives up at once on stock-outs and quotas, which EC2 sends
// partly as HTTP 500, and retries what the standard retryer retries.
func TestRetryerFailsOverOnCapacityAndQuota(t *testing.T) {
	r := newRetryer(Options{MaxAttempts: 5, MaxBackoff: defaultMaxBackoff})
	tests := []struct {
		status int
		code   string
		want   bool
	}{
		{500, "InsufficientInstanceCapacity", false},
		{500, "InsufficientHostCapacity", false},
		{400, "VcpuLimitExceeded", false},
		{500, "InternalError", true},
		{503, "RequestLimitExceeded", true},
		{503, "Unavailable", true},
		{400, "InvalidParameterValue", false},
	}
	for _, tt := range tests {
		if got := r.IsErrorRetryable(apiError(tt.status, tt.code)); got != tt.want {
			t.Errorf("%d %s: retryable %v, want %v", tt.status, tt.code, got, tt.want)
		}
	}
	if r.MaxAttempts() != 5 {
		t.Errorf("max attempts %d, want 5", r.MaxAttempts())
	}
	if failOver(errors.New("no code")) != awssdk.UnknownTernary {
		t.Error("failOver decides about an error without a code")
	}
}
