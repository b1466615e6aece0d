// SPDX-License-Identifier: Apache-2.0

package providers

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/gpufleet/gpufleet/planner"
)

// Kind classifies a cloud failure by what the caller should do about it.
type Kind string

const (
	// KindCapacity: the offer is out of stock; try another.
	KindCapacity Kind = "capacity"
	// KindQuota: the account may not have more; a person must act, or
	// another region or cloud may do.
	KindQuota Kind = "quota"
	// KindThrottled: too many requests; retry later (already retried).
	KindThrottled Kind = "throttled"
	// KindNotFound: no such instance.
	KindNotFound Kind = "not-found"
	// KindAuth: credentials are missing or not allowed.
	KindAuth Kind = "auth"
	// KindInvalid: the request is wrong; retrying will not help.
	KindInvalid Kind = "invalid"
	// KindUnavailable: the cloud failed (5xx, timeouts); retry later.
	KindUnavailable Kind = "unavailable"
	// KindTokenSpent: the create's token already made an instance, which
	// has since ended; the cloud answers the token with that instance, or
	// with nothing, for a while. Only a new token launches a node.
	KindTokenSpent Kind = "token-spent"
)

// Sentinels for errors.Is.
var (
	ErrCapacity    = errors.New("out of capacity")
	ErrQuota       = errors.New("quota exceeded")
	ErrThrottled   = errors.New("throttled")
	ErrNotFound    = errors.New("not found")
	ErrAuth        = errors.New("not authorised")
	ErrInvalid     = errors.New("invalid request")
	ErrUnavailable = errors.New("cloud unavailable")
	ErrTokenSpent  = errors.New("create token already spent")
)

var sentinels = map[Kind]error{
	KindCapacity:    ErrCapacity,
	KindQuota:       ErrQuota,
	KindThrottled:   ErrThrottled,
	KindNotFound:    ErrNotFound,
	KindAuth:        ErrAuth,
	KindInvalid:     ErrInvalid,
	KindUnavailable: ErrUnavailable,
	KindTokenSpent:  ErrTokenSpent,
}

// Error is a classified cloud failure that keeps the cloud's own code and
// message for reports.
type Error struct {
	Kind  Kind
	Cloud string
	// Op is the operation that failed: create, delete, list, offers.
	Op string
	// Offer is what a create asked for, so a capacity error can blocklist
	// it.
	Offer planner.OfferKey
	// Code and Message are the cloud's, e.g. InsufficientInstanceCapacity.
	Code    string
	Message string
	Err     error
}

func (e *Error) Error() string {
	where := e.Cloud
	if e.Offer != (planner.OfferKey{}) {
		where = e.Offer.String()
	}
	msg := e.Message
	if msg == "" && e.Err != nil {
		msg = e.Err.Error()
	}
	if e.Code != "" {
		return fmt.Sprintf("%s %s: %s: %s (%s)", e.Op, where, e.Kind, msg, e.Code)
	}
	return fmt.Sprintf("%s %s: %s: %s", e.Op, where, e.Kind, msg)
}

func (e *Error) Unwrap() error { return e.Err }

// Is matches the sentinel of the error's kind.
func (e *Error) Is(target error) bool { return sentinels[e.Kind] == target }

// KindOf returns the kind of a classified error, or "" for any other.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return ""
}

// Retryable reports whether trying again later may succeed.
func Retryable(err error) bool {
	switch KindOf(err) {
	case KindThrottled, KindUnavailable:
		return true
	}
	return false
}

// KindOfStatus classifies by its HTTP status an answer of a REST API that
// carries no error code the cloud's provider knows.
func KindOfStatus(status int) Kind {
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return KindAuth
	case status == http.StatusNotFound:
		return KindNotFound
	case status == http.StatusTooManyRequests:
		return KindThrottled
	case status >= 500, status == http.StatusRequestTimeout:
		return KindUnavailable
	case status >= 400:
		return KindInvalid
	}
	return KindUnavailable
}

// RetryAfter reads an answer's Retry-After header, in seconds or as an
// HTTP date relative to now; false when it has none that parses.
func RetryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	v := h.Get("Retry-After")
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.Atoi(v); err == nil && secs >= 0 {
		return time.Duration(secs) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}
