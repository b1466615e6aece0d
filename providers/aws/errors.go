// SPDX-License-Identifier: Apache-2.0

package aws

import (
	"errors"
	"net/http"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// codeKinds classifies EC2's error codes by what the caller should do.
// Codes not listed fall back on the HTTP status: 5xx is an outage, any
// other client error an invalid request.
var codeKinds = map[string]providers.Kind{
	// The offer is out of stock in that zone; another may have it.
	"InsufficientInstanceCapacity":         providers.KindCapacity,
	"InsufficientHostCapacity":             providers.KindCapacity,
	"InsufficientReservedInstanceCapacity": providers.KindCapacity,
	"InsufficientCapacity":                 providers.KindCapacity,
	"InsufficientAddressCapacity":          providers.KindCapacity,
	"InsufficientVolumeCapacity":           providers.KindCapacity,
	"InsufficientFreeAddressesInSubnet":    providers.KindCapacity,
	"UnfulfillableCapacity":                providers.KindCapacity,
	"SpotMaxPriceTooLow":                   providers.KindCapacity,
	// The type is not offered in that zone: for the planner, the offer
	// does not exist, which it handles as a stock-out that lasts.
	"Unsupported": providers.KindCapacity,

	"InstanceLimitExceeded":        providers.KindQuota,
	"VcpuLimitExceeded":            providers.KindQuota,
	"MaxSpotInstanceCountExceeded": providers.KindQuota,

	"RequestLimitExceeded": providers.KindThrottled,

	"InvalidInstanceID.NotFound": providers.KindNotFound,

	"AuthFailure":                providers.KindAuth,
	"UnauthorizedOperation":      providers.KindAuth,
	"AccessDeniedException":      providers.KindAuth, // Service Quotas' denial
	"InvalidClientTokenId":       providers.KindAuth,
	"SignatureDoesNotMatch":      providers.KindAuth,
	"IncompleteSignature":        providers.KindAuth,
	"MissingAuthenticationToken": providers.KindAuth,
	"ExpiredToken":               providers.KindAuth,
	"RequestExpired":             providers.KindAuth,
	"OptInRequired":              providers.KindAuth,
	"Blocked":                    providers.KindAuth,
	"PendingVerification":        providers.KindAuth,

	"IdempotentParameterMismatch": providers.KindInvalid,
	"InvalidParameterValue":       providers.KindInvalid,
	"InvalidParameter":            providers.KindInvalid,
	"InvalidParameterCombination": providers.KindInvalid,
	"MissingParameter":            providers.KindInvalid,
	"InvalidAMIID.Malformed":      providers.KindInvalid,
	"InvalidAMIID.NotFound":       providers.KindInvalid,
	"InvalidSubnetID.NotFound":    providers.KindInvalid,
	"InvalidGroup.NotFound":       providers.KindInvalid,
	"InvalidGroupId.Malformed":    providers.KindInvalid,
	"InvalidInstanceID.Malformed": providers.KindInvalid,
	"TagLimitExceeded":            providers.KindInvalid,
	// A launch into a group that is gone, or whose instances are in
	// another zone, fails however often it is repeated; a group's removal
	// that finds it in use is told apart where it is made.
	"InvalidPlacementGroup.Unknown":     providers.KindInvalid,
	"InvalidPlacementGroup.InUse":       providers.KindInvalid,
	"InvalidPlacementGroup.Duplicate":   providers.KindInvalid,
	"InvalidPlacementGroupId.Malformed": providers.KindInvalid,

	"InternalError":      providers.KindUnavailable,
	"InternalFailure":    providers.KindUnavailable,
	"ServiceUnavailable": providers.KindUnavailable,
	"Unavailable":        providers.KindUnavailable,
}

// codeTokenReused is gpufleet's own code for a create whose token EC2
// already spent on an instance that has ended.
const codeTokenReused = "TokenReused"

// classify turns an SDK error into a providers.Error.
func classify(op string, offer planner.OfferKey, err error) error {
	if err == nil {
		return nil
	}
	e := &providers.Error{Cloud: catalog.AWS, Op: op, Offer: offer, Err: err}
	var apiErr smithy.APIError
	var credErr *credentialsError
	switch {
	case errors.As(err, &credErr):
		e.Kind = providers.KindAuth
	case errors.As(err, &apiErr):
		e.Code, e.Message = apiErr.ErrorCode(), apiErr.ErrorMessage()
		e.Kind = kindOf(e.Code, httpStatus(err))
	default:
		// Connection failures, timeouts and cancellations: what the
		// retryer gave up on, or the caller's context ended.
		e.Kind = providers.KindUnavailable
	}
	return e
}

func kindOf(code string, status int) providers.Kind {
	if kind, ok := codeKinds[code]; ok {
		return kind
	}
	if _, ok := retry.DefaultThrottleErrorCodes[code]; ok || status == http.StatusTooManyRequests {
		return providers.KindThrottled
	}
	if status >= 500 {
		return providers.KindUnavailable
	}
	return providers.KindInvalid
}

func httpStatus(err error) int {
	var respErr *awshttp.ResponseError
	if errors.As(err, &respErr) {
		return respErr.HTTPStatusCode()
	}
	return 0
}

func errorCode(err error) string {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode()
	}
	return ""
}

// newRetryer is the SDK's standard retryer, bounded in attempts and backoff
// (and, through CallTimeout, in time), except that stock-outs and exceeded
// quotas are never retried: EC2 answers InsufficientInstanceCapacity with
// HTTP 500, which the standard retryer would repeat, and the reconciler
// wants to fail over at once instead. The standard retryer already backs
// off on throttling and honours x-amz-retry-after, the only retry hint AWS
// sends.
func newRetryer(opts Options) awssdk.Retryer {
	return retry.NewStandard(func(o *retry.StandardOptions) {
		o.MaxAttempts = opts.MaxAttempts
		o.MaxBackoff = opts.MaxBackoff
		o.Retryables = append([]retry.IsErrorRetryable{retry.IsErrorRetryableFunc(failOver)}, o.Retryables...)
	})
}

// failOver says capacity and quota errors are not retryable, and leaves
// every other error to the standard checks.
func failOver(err error) awssdk.Ternary {
	switch codeKinds[errorCode(err)] {
	case providers.KindCapacity, providers.KindQuota:
		return awssdk.FalseTernary
	}
	return awssdk.UnknownTernary
}
