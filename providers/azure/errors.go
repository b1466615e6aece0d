// SPDX-License-Identifier: Apache-2.0

package azure

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// Error codes Compute answers a stock-out with, on the create's operation
// or, rarely, on the PUT itself.
var capacityCodes = []string{
	"AllocationFailed",
	"ZonalAllocationFailed",
	"SkuNotAvailable",
	"OverconstrainedAllocationRequest",
}

// authCodes are ARM's answers to a token it does not accept or a
// principal that may not act.
var authCodes = []string{
	"AuthenticationFailed",
	"AuthorizationFailed",
	"InvalidAuthenticationToken",
	"InvalidAuthenticationTokenTenant",
	"LinkedAuthorizationFailed",
}

// classify turns an error from armcompute into a providers.Error. offer is
// what a create asked for, zero for other calls.
func classify(op string, offer planner.OfferKey, err error) error {
	if err == nil {
		return nil
	}
	e := &providers.Error{Cloud: catalog.Azure, Op: op, Offer: offer, Err: err}
	var re *azcore.ResponseError
	var ce *credentialError
	switch {
	case errors.As(err, &re):
		e.Code = re.ErrorCode
		e.Message = responseMessage(re)
		e.Kind = kindOf(re.StatusCode, e.Code, e.Message)
	case errors.As(err, &ce):
		e.Kind = providers.KindAuth
		e.Message = "getting an Azure token: " + ce.err.Error()
	default:
		// Transport failures, timeouts and a cancelled context: nothing
		// says the request was wrong, so a later try may succeed.
		e.Kind = providers.KindUnavailable
	}
	return e
}

// kindOf classifies an ARM error by its code first and its HTTP status
// second. A long-running operation's failure arrives with status 200 (the
// status of the poll that found it).
func kindOf(status int, code, message string) providers.Kind {
	switch {
	case containsFold(capacityCodes, code):
		return providers.KindCapacity
	case strings.EqualFold(code, "ResourceQuotaExceeded"):
		return providers.KindQuota
	case strings.EqualFold(code, "OperationNotAllowed"):
		// The code also refuses a max price under the spot price and
		// changes to a VM being deleted; only the quota one says so.
		if strings.Contains(strings.ToLower(message), "quota") {
			return providers.KindQuota
		}
		return providers.KindInvalid
	case status == http.StatusTooManyRequests || strings.EqualFold(code, "TooManyRequests"):
		return providers.KindThrottled
	case containsFold(authCodes, code) || status == http.StatusUnauthorized || status == http.StatusForbidden:
		return providers.KindAuth
	case strings.EqualFold(code, "ResourceGroupNotFound"), strings.EqualFold(code, "SubscriptionNotFound"):
		// The configured scope does not exist: a config error, not a
		// missing VM.
		return providers.KindInvalid
	case status == http.StatusNotFound || strings.EqualFold(code, "ResourceNotFound") || strings.EqualFold(code, "NotFound"):
		return providers.KindNotFound
	case status == http.StatusRequestTimeout || status >= 500:
		return providers.KindUnavailable
	case status >= 400:
		return providers.KindInvalid
	}
	// An operation that failed after it was accepted, for a reason not
	// named above (InternalExecutionError, OSProvisioningTimedOut…).
	return providers.KindUnavailable
}

// responseMessage reads ARM's error message from the body azcore kept,
// {"error":{"code","message"}}, as both errors and failed operations send.
func responseMessage(re *azcore.ResponseError) string {
	if re.RawResponse != nil {
		if body, err := runtime.Payload(re.RawResponse); err == nil {
			var envelope struct {
				Error struct {
					Message string `json:"message"`
				} `json:"error"`
			}
			if json.Unmarshal(body, &envelope) == nil && envelope.Error.Message != "" {
				return envelope.Error.Message
			}
		}
	}
	return fmt.Sprintf("HTTP %d %s", re.StatusCode, http.StatusText(re.StatusCode))
}

// isStatus reports whether err is an ARM answer with that HTTP status.
func isStatus(err error, status int) bool {
	var re *azcore.ResponseError
	return errors.As(err, &re) && re.StatusCode == status
}

func containsFold(list []string, s string) bool {
	for _, v := range list {
		if strings.EqualFold(v, s) {
			return true
		}
	}
	return false
}

// credential marks the failures of the credential chain, so that they are
// told apart from ARM's answers whatever credential type raised them.
type credential struct{ azcore.TokenCredential }

func (c credential) GetToken(ctx context.Context, opts policy.TokenRequestOptions) (azcore.AccessToken, error) {
	tok, err := c.TokenCredential.GetToken(ctx, opts)
	if err != nil && ctx.Err() == nil {
		return tok, &credentialError{err}
	}
	return tok, err
}

type credentialError struct{ err error }

func (e *credentialError) Error() string { return e.err.Error() }
func (e *credentialError) Unwrap() error { return e.err }

// invalid is a request the provider refuses before calling ARM.
func invalid(op string, offer planner.OfferKey, format string, args ...any) error {
	return &providers.Error{Kind: providers.KindInvalid, Cloud: catalog.Azure, Op: op, Offer: offer, Message: fmt.Sprintf(format, args...)}
}
