// SPDX-License-Identifier: Apache-2.0

package oci

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/oracle/oci-go-sdk/v65/common"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
)

// OCI's error codes that say more than their status does (the API
// Errors reference). The rest are classified by status.
var codeKinds = map[string]providers.Kind{
	// LimitExceeded is a service limit of the tenancy, QuotaExceeded an
	// administrator's quota on the compartment: a person must act either
	// way.
	"LimitExceeded": providers.KindQuota,
	"QuotaExceeded": providers.KindQuota,

	"TooManyRequests": providers.KindThrottled,

	// The token's instance was deleted since: only a new token launches.
	"InvalidatedRetryToken": providers.KindTokenSpent,

	// A resource between states, which settles by itself: OCI says to
	// retry with backoff.
	"IncorrectState": providers.KindUnavailable,
	"LockConflict":   providers.KindUnavailable,

	"NotAuthenticated": providers.KindAuth,
	"NotAuthorized":    providers.KindAuth,
	"SignUpRequired":   providers.KindAuth,
	// Answered by creates instead of NotAuthorizedOrNotFound. Instances
	// are not named uniquely, so for a launch it is a missing permission.
	"NotAuthorizedOrResourceAlreadyExists": providers.KindAuth,

	"NotAuthorizedOrNotFound": providers.KindNotFound,
	// No operation at that path and method: a client or emulator out of
	// step, never an instance that is gone.
	"NotFound": providers.KindInvalid,
}

// kindOf classifies an error answer of OCI to op.
//
// OCI answers a stock-out with 500 InternalError "Out of host capacity.",
// the code of its own failures, so the message tells them apart. A 409
// Conflict to a launch is its retry token spent on another request: the
// token made an instance which has ended (Create returns a live one before
// launching), and the launch it asks for now differs, as the
// configuration has changed since.
func kindOf(op string, status int, code, message string) providers.Kind {
	if status >= 500 && outOfCapacity(message) {
		return providers.KindCapacity
	}
	if op == "create" && status == http.StatusConflict && code == "Conflict" {
		return providers.KindTokenSpent
	}
	if kind, ok := codeKinds[code]; ok {
		return kind
	}
	return providers.KindOfStatus(status)
}

func outOfCapacity(message string) bool {
	m := strings.ToLower(message)
	return strings.Contains(m, "out of host capacity") || strings.Contains(m, "out of capacity")
}

// classify turns an SDK error for op into a *providers.Error. It keeps
// OCI's code, message and opc-request-id (what Oracle's support asks
// for), and says what to do where the kind asks a person to act. A
// request that got no answer is unavailable: trying later may work.
func (p *Provider) classify(op string, offer planner.OfferKey, err error) *providers.Error {
	var classified *providers.Error
	if errors.As(err, &classified) {
		if classified.Offer == (planner.OfferKey{}) {
			classified.Offer = offer
		}
		return classified
	}
	out := &providers.Error{Kind: providers.KindUnavailable, Cloud: Name, Op: op, Offer: offer, Err: err}
	se, ok := common.IsServiceError(err)
	if !ok {
		out.Message = transportMessage(err)
		return out
	}
	status := se.GetHTTPStatusCode()
	out.Code, out.Message = se.GetCode(), se.GetMessage()
	out.Kind = kindOf(op, status, out.Code, out.Message)
	if out.Code == "" {
		out.Code = strconv.Itoa(status)
	}
	if out.Message == "" {
		out.Message = fmt.Sprintf("HTTP %d %s", status, http.StatusText(status))
	}
	if id := se.GetOpcRequestID(); id != "" {
		out.Message += " (opc-request-id " + id + ")"
	}
	switch {
	case status == http.StatusUnauthorized:
		out.Message = fmt.Sprintf("OCI refused the credentials from %s: %s", p.credentials, out.Message)
	case out.Kind == providers.KindAuth:
		out.Message = fmt.Sprintf("the user's IAM policies do not allow this in compartment %s: %s", p.cfg.Compartment, out.Message)
	case out.Kind == providers.KindThrottled:
		out.Message = fmt.Sprintf("%s (still throttled when gpufleet stopped retrying, after at most %d retries)", out.Message, p.opts.RetryMax)
	case out.Kind == providers.KindTokenSpent:
		out.Message = fmt.Sprintf("the create's token is spent: %s", out.Message)
	}
	return out
}

// transportMessage says why a request got no answer. It names neither
// the URL (the error already names the operation) nor anything signed.
func transportMessage(err error) string {
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		return fmt.Sprintf("no answer from OCI: %v", urlErr.Err)
	}
	return err.Error()
}
