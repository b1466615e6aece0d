// SPDX-License-Identifier: Apache-2.0

package gcp

import (
	"errors"
	"net/http"
	"strconv"

	"cloud.google.com/go/compute/apiv1/computepb"
	"github.com/googleapis/gax-go/v2/apierror"
	"google.golang.org/api/googleapi"

	"github.com/gpufleet/gpufleet/providers"
)

// codeKinds classifies GCE's error codes: the reasons of synchronous HTTP
// errors (camelCase, in error.errors[].reason) and the codes of failed
// operations (UPPER_CASE, in error.errors[].code). One table serves both,
// so a code means the same wherever it turns up.
var codeKinds = map[string]providers.Kind{
	// Stock-outs: on the operation, and synchronously as a 503.
	"ZONE_RESOURCE_POOL_EXHAUSTED":              providers.KindCapacity,
	"ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS": providers.KindCapacity,
	"insufficientCapacity":                      providers.KindCapacity,

	// Quota: "Quota 'GPUS_ALL_REGIONS' exceeded", on the operation or as
	// a 403.
	"QUOTA_EXCEEDED": providers.KindQuota,
	"quotaExceeded":  providers.KindQuota,

	// Throttling. Too many concurrent operations is a limit that frees up
	// by itself, unlike a quota.
	"rateLimitExceeded":                    providers.KindThrottled,
	"userRateLimitExceeded":                providers.KindThrottled,
	"RESOURCE_OPERATION_RATE_EXCEEDED":     providers.KindThrottled,
	"CONCURRENT_OPERATIONS_QUOTA_EXCEEDED": providers.KindThrottled,

	"notFound":           providers.KindNotFound,
	"RESOURCE_NOT_FOUND": providers.KindNotFound,

	"forbidden":                     providers.KindAuth,
	"insufficientPermissions":       providers.KindAuth,
	"authError":                     providers.KindAuth,
	"unauthorized":                  providers.KindAuth,
	"accessNotConfigured":           providers.KindAuth,
	"PERMISSIONS_ERROR":             providers.KindAuth,
	"SERVICE_ACCOUNT_ACCESS_DENIED": providers.KindAuth,

	"invalid":                 providers.KindInvalid,
	"required":                providers.KindInvalid,
	"badRequest":              providers.KindInvalid,
	"invalidParameter":        providers.KindInvalid,
	"conditionNotMet":         providers.KindInvalid,
	"alreadyExists":           providers.KindInvalid,
	"RESOURCE_ALREADY_EXISTS": providers.KindInvalid,
	"INVALID_FIELD_VALUE":     providers.KindInvalid,
	"UNSUPPORTED_OPERATION":   providers.KindInvalid,
	// A resource still used by another, such as a placement policy
	// with instances in it: it stays until they go.
	"resourceInUseByAnotherResource": providers.KindInvalid,

	// The cloud's own failures, and resources busy with another
	// operation, which settle by themselves.
	"backendError":       providers.KindUnavailable,
	"internalError":      providers.KindUnavailable,
	"INTERNAL_ERROR":     providers.KindUnavailable,
	"resourceNotReady":   providers.KindUnavailable,
	"RESOURCE_NOT_READY": providers.KindUnavailable,
}

// classify turns an SDK error into a providers.Error for op. Errors that
// never reached GCE (transport failures, timeouts) are unavailable: trying
// later may work.
func classify(op string, err error) *providers.Error {
	out := &providers.Error{Kind: providers.KindUnavailable, Cloud: Name, Op: op, Err: err}
	var gerr *googleapi.Error
	if !errors.As(err, &gerr) {
		return out
	}
	var reasons []string
	for _, item := range gerr.Errors {
		reasons = append(reasons, item.Reason)
	}
	// The REST API puts its reasons in errors[]; an ErrorInfo detail is
	// the gRPC-style place for one, read in case a front sends it.
	var aerr *apierror.APIError
	if errors.As(err, &aerr) {
		reasons = append(reasons, aerr.Reason())
	}
	out.Message = gerr.Message
	code, kind, known := pick(reasons)
	if !known {
		kind = providers.KindOfStatus(gerr.Code)
	}
	out.Kind, out.Code = kind, code
	if out.Code == "" {
		out.Code = strconv.Itoa(gerr.Code)
	}
	if out.Message == "" && len(gerr.Errors) > 0 {
		out.Message = gerr.Errors[0].Message
	}
	return out
}

// pick chooses the first known code, else the first non-empty one.
func pick(codes []string) (code string, kind providers.Kind, known bool) {
	for _, c := range codes {
		if k, ok := codeKinds[c]; ok {
			return c, k, true
		}
	}
	for _, c := range codes {
		if c != "" {
			return c, "", false
		}
	}
	return "", "", false
}

// operationError classifies a finished operation's error, or returns nil
// when it succeeded. The SDK's Operation.Wait reports only operations that
// carry an HTTP error status, so the error list is read here directly.
func operationError(op string, o *computepb.Operation) *providers.Error {
	items := o.GetError().GetErrors()
	status := int(o.GetHttpErrorStatusCode())
	if len(items) == 0 && (status == 0 || status/100 == 2) {
		return nil
	}
	var codes []string
	for _, item := range items {
		codes = append(codes, item.GetCode())
	}
	code, kind, known := pick(codes)
	if !known {
		kind = providers.KindOfStatus(status)
		if status == 0 {
			kind = providers.KindUnavailable
		}
	}
	out := &providers.Error{Kind: kind, Cloud: Name, Op: op, Code: code, Message: o.GetHttpErrorMessage()}
	for _, item := range items {
		if item.GetCode() == code {
			out.Message = item.GetMessage()
			break
		}
	}
	if out.Code == "" {
		out.Code = strconv.Itoa(status)
	}
	return out
}

// nameTaken reports whether an insert was refused because an instance of
// that name exists.
func nameTaken(err error) bool {
	var gerr *googleapi.Error
	return errors.As(err, &gerr) && gerr.Code == http.StatusConflict || classify("", err).Code == "alreadyExists"
}
