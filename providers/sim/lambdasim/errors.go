// SPDX-License-Identifier: Apache-2.0

package lambdasim

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gpufleet/gpufleet/providers/sim"
)

// The API's error codes.
const (
	CodeInvalidAPIKey        = "global/invalid-api-key"
	CodeAccountInactive      = "global/account-inactive"
	CodeInvalidParameters    = "global/invalid-parameters"
	CodeObjectDoesNotExist   = "global/object-does-not-exist"
	CodeQuotaExceeded        = "global/quota-exceeded"
	CodeInsufficientCapacity = "instance-operations/launch/insufficient-capacity"
	CodeTooManyRequests      = "global/too-many-requests"
	CodeUnknown              = "global/unknown"
)

// codeStatus is the HTTP status each code is answered with; a fault's Code
// may name any of them.
var codeStatus = map[string]int{
	CodeInvalidAPIKey:        http.StatusUnauthorized,
	CodeAccountInactive:      http.StatusForbidden,
	CodeInvalidParameters:    http.StatusBadRequest,
	CodeObjectDoesNotExist:   http.StatusNotFound,
	CodeQuotaExceeded:        http.StatusBadRequest,
	CodeInsufficientCapacity: http.StatusBadRequest,
	CodeTooManyRequests:      http.StatusTooManyRequests,
	CodeUnknown:              http.StatusInternalServerError,
}

// apiError is an error in the API's envelope:
//
//	{"error":{"code":"…","message":"…","suggestion":"…"}}
type apiError struct {
	Status     int
	Code       string
	Message    string
	Suggestion string
	// RetryAfter, on a 429, is sent as Retry-After in whole seconds.
	RetryAfter time.Duration
}

func (e *apiError) Error() string { return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message) }

type errorEnvelope struct {
	Error errorBody `json:"error"`
}

type errorBody struct {
	Code       string `json:"code"`
	Message    string `json:"message"`
	Suggestion string `json:"suggestion,omitempty"`
}

func writeError(w http.ResponseWriter, e *apiError) {
	body, _ := json.Marshal(errorEnvelope{errorBody{Code: e.Code, Message: e.Message, Suggestion: e.Suggestion}})
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(e.RetryAfter.Seconds()))))
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.Status)
	_, _ = w.Write(body)
}

// asAPIError turns anything a handler returns into the envelope; what is
// not already an apiError is the emulator's own failure.
func asAPIError(err error) *apiError {
	var e *apiError
	if errors.As(err, &e) {
		return e
	}
	out := errUnknown()
	out.Message += " (" + err.Error() + ")"
	return out
}

func errUnknown() *apiError {
	return &apiError{Status: http.StatusInternalServerError, Code: CodeUnknown, Message: "An unknown error occurred.",
		Suggestion: "Try again later."}
}

func errInvalidKey() *apiError {
	return &apiError{Status: http.StatusUnauthorized, Code: CodeInvalidAPIKey, Message: "API key was invalid, expired, or deleted.",
		Suggestion: "Check your API key or create a new one, then try again."}
}

func notFoundRoute(r *http.Request) *apiError {
	return &apiError{Status: http.StatusNotFound, Code: CodeObjectDoesNotExist, Message: fmt.Sprintf("%s %s is not a method of the API.", r.Method, r.URL.Path)}
}

func notFound(what string) *apiError {
	return &apiError{Status: http.StatusNotFound, Code: CodeObjectDoesNotExist, Message: fmt.Sprintf("Specified %s does not exist.", what)}
}

// invalidParameters is the answer to a bad request: the message names the
// field at fault, when there is one, and what is wrong with it.
func invalidParameters(field, why string) *apiError {
	msg := "Invalid request data."
	if field != "" {
		msg = fmt.Sprintf("Invalid value for field '%s'.", field)
	}
	if why != "" {
		msg += " " + why
	}
	return &apiError{Status: http.StatusBadRequest, Code: CodeInvalidParameters, Message: msg}
}

func errCapacity() *apiError {
	return &apiError{Status: http.StatusBadRequest, Code: CodeInsufficientCapacity, Message: "Not enough capacity to fulfill launch request.",
		Suggestion: "Choose an instance type with more availability, or try again later."}
}

func errQuota(detail string) *apiError {
	msg := "Quota exceeded."
	if detail != "" {
		msg += " " + strings.TrimSuffix(detail, ".") + "."
	}
	return &apiError{Status: http.StatusBadRequest, Code: CodeQuotaExceeded, Message: msg,
		Suggestion: "Contact Support to increase your quota."}
}

// worldError renders an error of the world or of a fault as the API's. A
// fault's Code is the API code to answer with, or, when it is a number, the
// HTTP status (so a server-error fault can be a 503).
func (s *Server) worldError(e *sim.Error) *apiError {
	var out *apiError
	switch e.Kind {
	case sim.KindThrottled:
		out = &apiError{Status: http.StatusTooManyRequests, Code: CodeTooManyRequests, Message: "Too many requests.",
			Suggestion: "Wait before making another request.", RetryAfter: e.RetryAfter}
		if out.RetryAfter <= 0 {
			out.RetryAfter = s.opts.ThrottleRetryAfter
		}
	case sim.KindCapacity, sim.KindUnsupported:
		out = errCapacity()
	case sim.KindQuota:
		out = errQuota(e.Message)
		if e.Quota == "" {
			// A fault's error names no quota.
			out = errQuota("")
		}
	case sim.KindNotFound:
		out = notFound("instance")
	case sim.KindServerError:
		out = errUnknown()
	default:
		out = invalidParameters("", e.Message)
	}
	if e.Code != "" {
		if status, ok := codeStatus[e.Code]; ok {
			out.Code, out.Status = e.Code, status
		} else if n, err := strconv.Atoi(e.Code); err == nil && n >= 400 && n <= 599 {
			out.Status = n
		}
	}
	return out
}
