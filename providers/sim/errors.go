// SPDX-License-Identifier: Apache-2.0

package sim

import (
	"fmt"
	"time"
)

// Kind classifies what went wrong in the world. Each front turns a kind
// into its cloud's own error code, status and envelope.
type Kind string

const (
	KindCapacity            Kind = "capacity"
	KindQuota               Kind = "quota"
	KindThrottled           Kind = "throttled"
	KindServerError         Kind = "server-error"
	KindNotFound            Kind = "not-found"
	KindAlreadyExists       Kind = "already-exists"
	KindUnknownZone         Kind = "unknown-zone"
	KindUnknownType         Kind = "unknown-type"
	KindUnsupported         Kind = "unsupported"
	KindIdempotencyMismatch Kind = "idempotency-mismatch"
	KindInvalid             Kind = "invalid"
	// KindIncorrectState is a call the instance's state does not allow,
	// such as starting one that is still stopping.
	KindIncorrectState Kind = "incorrect-state"
)

// Error is a failure of the world, or one a fault injected.
type Error struct {
	Kind Kind
	// Code, when set, is the exact cloud error code to answer with (from a
	// fault file); otherwise the front picks its cloud's usual code.
	Code    string
	Message string
	// Quota details, for the clouds that report them: the quota's name,
	// description and unit (catalog.Quota), where it applies ("" for a
	// global quota), its limit, what was in use and what was asked for.
	Limit, Used, Requested        int
	Region                        string
	Quota, QuotaDescription, Unit string
	// RetryAfter, on a call a rate limit refused, is how long until its
	// bucket holds a token, for the clouds that tell callers when to come
	// back.
	RetryAfter time.Duration
}

func (e *Error) Error() string {
	if e.Code != "" {
		return fmt.Sprintf("%s (%s): %s", e.Kind, e.Code, e.Message)
	}
	return fmt.Sprintf("%s: %s", e.Kind, e.Message)
}
