// SPDX-License-Identifier: Apache-2.0

package armsim

import (
	"net/http"
	"strings"

	"github.com/gpufleet/gpufleet/providers/sim"
)

// remainingHeaders are where ARM tells a caller what is left of its
// subscription's reads or writes.
var remainingHeaders = map[string]string{
	sim.ClassRead:  "x-ms-ratelimit-remaining-subscription-reads",
	sim.ClassWrite: "x-ms-ratelimit-remaining-subscription-writes",
}

// requestClass is how ARM meters a request: a GET reads, every other
// method (PUT, PATCH, POST, DELETE) writes.
func requestClass(r *http.Request) string {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return sim.ClassRead
	}
	return sim.ClassWrite
}

// subscriptionOf is the subscription a request is for, whose buckets it
// draws on. route has checked the path starts /subscriptions/{id}; ARM
// knows subscription ids in any case.
func subscriptionOf(r *http.Request) string {
	seg := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if len(seg) < 2 {
		return ""
	}
	return strings.ToLower(seg[1])
}
