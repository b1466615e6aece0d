// SPDX-License-Identifier: Apache-2.0

package ocisim

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/gpufleet/gpufleet/providers/sim"
)

// The API's error codes, as OCI documents them for every service, and
// InternalError, the code of a launch's stock-out.
const (
	CodeCannotParseRequest      = "CannotParseRequest"
	CodeInvalidParameter        = "InvalidParameter"
	CodeMissingParameter        = "MissingParameter"
	CodeLimitExceeded           = "LimitExceeded"
	CodeQuotaExceeded           = "QuotaExceeded"
	CodeNotAuthenticated        = "NotAuthenticated"
	CodeNotAuthorized           = "NotAuthorized"
	CodeNotAuthorizedOrNotFound = "NotAuthorizedOrNotFound"
	CodeNotFound                = "NotFound"
	CodeMethodNotAllowed        = "MethodNotAllowed"
	CodeConflict                = "Conflict"
	CodeIncorrectState          = "IncorrectState"
	CodeTooManyRequests         = "TooManyRequests"
	CodeInternalError           = "InternalError"
	CodeInternalServerError     = "InternalServerError"
	CodeServiceUnavailable      = "ServiceUnavailable"
)

// codeStatus is the HTTP status each code is answered with; a fault's Code
// may name any of them.
var codeStatus = map[string]int{
	CodeCannotParseRequest:      http.StatusBadRequest,
	CodeInvalidParameter:        http.StatusBadRequest,
	CodeMissingParameter:        http.StatusBadRequest,
	CodeLimitExceeded:           http.StatusBadRequest,
	CodeQuotaExceeded:           http.StatusBadRequest,
	CodeNotAuthenticated:        http.StatusUnauthorized,
	CodeNotAuthorized:           http.StatusForbidden,
	CodeNotAuthorizedOrNotFound: http.StatusNotFound,
	CodeNotFound:                http.StatusNotFound,
	CodeMethodNotAllowed:        http.StatusMethodNotAllowed,
	CodeConflict:                http.StatusConflict,
	CodeIncorrectState:          http.StatusConflict,
	CodeTooManyRequests:         http.StatusTooManyRequests,
	CodeInternalError:           http.StatusInternalServerError,
	CodeInternalServerError:     http.StatusInternalServerError,
	CodeServiceUnavailable:      http.StatusServiceUnavailable,
}

// apiError is an error in the API's envelope, {"code":"…","message":"…"},
// which the SDK reads into a common.ServiceError.
type apiError struct {
	Status  int
	Code    string
	Message string
	// RetryAfter, on a 429, is sent as Retry-After in whole seconds.
	RetryAfter time.Duration
}

func (e *apiError) Error() string { return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message) }

type errorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func writeError(w http.ResponseWriter, e *apiError) {
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(e.RetryAfter.Seconds()))))
	}
	_ = writeJSON(w, e.Status, errorBody{Code: e.Code, Message: e.Message})
}

// asAPIError turns anything a handler returns into the envelope; what is
// not already an apiError is the emulator's own failure.
func asAPIError(err error) *apiError {
	var e *apiError
	if errors.As(err, &e) {
		return e
	}
	out := errInternal()
	out.Message += " (" + err.Error() + ")"
	return out
}

func errInternal() *apiError {
	return &apiError{Status: http.StatusInternalServerError, Code: CodeInternalServerError, Message: "Internal server error."}
}

// errNotAuthenticated refuses a request whose signature is missing, malformed
// or wrong. OCI's message says no more than that; the reason after it is
// the emulator's, for whoever debugs a client.
func errNotAuthenticated(why string) *apiError {
	return &apiError{Status: http.StatusUnauthorized, Code: CodeNotAuthenticated,
		Message: "The required information to complete authentication was not provided or was incorrect: " + why + "."}
}

func errUnknownHost(host string) *apiError {
	return &apiError{Status: http.StatusNotFound, Code: CodeNotAuthorizedOrNotFound,
		Message: fmt.Sprintf("Host %q is not an OCI endpoint the emulator serves: send requests with the regional host, iaas.<region>.%s or identity.<region>.oci.%s.", host, domain, domain)}
}

func errUnknownRegion(region string) *apiError {
	return &apiError{Status: http.StatusNotFound, Code: CodeNotAuthorizedOrNotFound, Message: fmt.Sprintf("Region %q does not exist.", region)}
}

func errNoOperation(r *http.Request) *apiError {
	return &apiError{Status: http.StatusNotFound, Code: CodeNotFound,
		Message: fmt.Sprintf("There is no operation supported at the URI path and HTTP method specified: %s %s.", r.Method, r.URL.Path)}
}

func errMethodNotAllowed(r *http.Request) *apiError {
	return &apiError{Status: http.StatusMethodNotAllowed, Code: CodeMethodNotAllowed,
		Message: fmt.Sprintf("The resource at %s does not support %s.", r.URL.Path, r.Method)}
}

func errNotFound() *apiError {
	return &apiError{Status: http.StatusNotFound, Code: CodeNotAuthorizedOrNotFound, Message: "Authorization failed or requested resource not found."}
}

// errMissing is the answer to a request without a parameter it needs,
// named as the API names it (compartmentId, sourceDetails.imageId).
func errMissing(param string) *apiError {
	return &apiError{Status: http.StatusBadRequest, Code: CodeMissingParameter, Message: fmt.Sprintf("Missing parameter %s.", param)}
}

// errInvalid is the answer to a parameter the API cannot take, with why.
func errInvalid(param, why string) *apiError {
	return &apiError{Status: http.StatusBadRequest, Code: CodeInvalidParameter, Message: fmt.Sprintf("Invalid %s: %s", param, why)}
}

func errCannotParse(why string) *apiError {
	return &apiError{Status: http.StatusBadRequest, Code: CodeCannotParseRequest, Message: "The request is incorrectly formatted: " + why}
}

// errCapacity is what OCI answers a launch no host has room for: a 500,
// though nothing failed, with this message word for word.
func errCapacity() *apiError {
	return &apiError{Status: http.StatusInternalServerError, Code: CodeInternalError, Message: "Out of host capacity."}
}

// errLimit is OCI's answer to a launch over a service limit, naming the
// limit when it is known.
func errLimit(e *sim.Error) *apiError {
	limit := "a service limit of the tenancy"
	if e.Quota != "" {
		limit = fmt.Sprintf("%s (limit %d, in use %d, requested %d)", e.Quota, e.Limit, e.Used, e.Requested)
	}
	return &apiError{Status: http.StatusBadRequest, Code: CodeLimitExceeded,
		Message: fmt.Sprintf("The following service limits were exceeded: %s. Request a service limit increase from the service limits page in the console.", limit)}
}

func errTokenReused() *apiError {
	return &apiError{Status: http.StatusConflict, Code: CodeConflict, Message: "The retry token was used for a different request."}
}

// worldError renders an error of the world or of a fault as the API's. A
// fault's Code is the API code to answer with, or, when it is a number, the
// HTTP status (so a server-error fault can be a 503).
func (s *Server) worldError(e *sim.Error) *apiError {
	var out *apiError
	switch e.Kind {
	case sim.KindThrottled:
		out = &apiError{Status: http.StatusTooManyRequests, Code: CodeTooManyRequests, Message: "Too many requests for the tenancy.", RetryAfter: e.RetryAfter}
		if out.RetryAfter <= 0 {
			out.RetryAfter = s.opts.ThrottleRetryAfter
		}
	case sim.KindCapacity:
		out = errCapacity()
	case sim.KindQuota:
		out = errLimit(e)
	case sim.KindNotFound:
		out = errNotFound()
	case sim.KindIdempotencyMismatch:
		out = errTokenReused()
	case sim.KindIncorrectState:
		out = &apiError{Status: http.StatusConflict, Code: CodeIncorrectState, Message: e.Message}
	case sim.KindServerError:
		out = errInternal()
	default:
		out = &apiError{Status: http.StatusBadRequest, Code: CodeInvalidParameter, Message: e.Message}
	}
	if e.Code != "" {
		if status, ok := codeStatus[e.Code]; ok {
			out.Code, out.Status = e.Code, status
		} else if n, err := strconv.Atoi(e.Code); err == nil && n >= 400 && n <= 599 {
			out.Status = n
			if n == http.StatusServiceUnavailable {
				out.Code, out.Message = CodeServiceUnavailable, "Service unavailable."
			}
		}
	}
	return out
}
