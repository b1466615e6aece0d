// SPDX-License-Identifier: Apache-2.0

package sim

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/gpufleet/gpufleet/schema/catalog"
)

// RateLimit is a token bucket that meters one class of a cloud's requests,
// as each cloud throttles callers: a request takes a token, a request that
// finds the bucket empty is refused with the cloud's throttling error, and
// the bucket refills at Rate up to Burst. Each tenant has its own bucket: an
// EC2 account in one region, an Azure subscription, a Google Cloud project.
//
// EC2 documents its buckets per class, e.g. non-mutating (Describe*)
// actions at a bucket of 100 tokens refilled at 20 a second; ARM per
// subscription for reads and writes; Compute Engine as per-minute quotas,
// which are a Rate of the quota over 60 and a Burst of the quota; Lambda
// Cloud per API key, launches apart from every other request. OCI
// publishes no numbers; its front meters each tenancy's launches apart
// from its other requests, as Lambda's does. (EC2 now
// gives each action a bucket of its own, sized by its class; one bucket
// for the whole class, as its older documentation has it, is the stricter
// of the two.)
type RateLimit struct {
	Cloud string `json:"cloud"`
	// Class is the kind of request the bucket meters, in the cloud's
	// terms: ClassMutating or ClassNonMutating on EC2, ClassRead or
	// ClassWrite on ARM and Compute Engine, ClassLaunch or ClassGeneral on
	// Lambda Cloud and OCI.
	Class string `json:"class"`
	// Rate is how many tokens a second the bucket gains back.
	Rate float64 `json:"rate"`
	// Burst is how many tokens a full bucket holds: how many requests a
	// caller can make at once after a quiet spell.
	Burst int `json:"burst"`
}

// Request classes. EC2 meters the actions that change something apart
// from the rest; ARM and Compute Engine meter reads apart from writes;
// Lambda Cloud (and the OCI front) meter launches apart from every other
// request.
const (
	ClassMutating    = "mutating"
	ClassNonMutating = "non-mutating"
	ClassRead        = "read"
	ClassWrite       = "write"
	ClassLaunch      = "launch"
	ClassGeneral     = "general"
)

// rateClasses are the request classes of each cloud the world has a front
// for; its keys are those clouds.
var rateClasses = map[string][]string{
	catalog.AWS:    {ClassMutating, ClassNonMutating},
	catalog.Azure:  {ClassRead, ClassWrite},
	catalog.GCP:    {ClassRead, ClassWrite},
	catalog.Lambda: {ClassLaunch, ClassGeneral},
	catalog.OCI:    {ClassLaunch, ClassGeneral},
}

// emulated reports whether the world has a front for a cloud, which rules
// (rate limits, faults) may name.
func emulated(cloud string) bool {
	_, ok := rateClasses[cloud]
	return ok
}

// maxFill bounds how long an empty bucket may take to fill, which keeps
// the bucket's arithmetic within a time.Duration.
const maxFill = 365 * 24 * time.Hour

func (l RateLimit) validate() error {
	classes, ok := rateClasses[l.Cloud]
	if !ok {
		return fmt.Errorf("unknown cloud %q (want aws, azure, gcp, lambda or oci)", l.Cloud)
	}
	if !slices.Contains(classes, l.Class) {
		return fmt.Errorf("%s has no request class %q (want %s)", l.Cloud, l.Class, strings.Join(classes, " or "))
	}
	if math.IsNaN(l.Rate) || l.Rate <= 0 || l.Rate > 1e9 {
		return fmt.Errorf("rate must be above 0 and at most 1e9 tokens a second, not %g", l.Rate)
	}
	if l.Burst < 1 {
		return fmt.Errorf("burst must be at least 1 token, not %d", l.Burst)
	}
	if float64(l.Burst)/l.Rate > maxFill.Seconds() {
		return fmt.Errorf("a burst of %d at %g tokens a second takes more than a year to refill", l.Burst, l.Rate)
	}
	return nil
}

// validateRateLimits checks each rule and that no two meter the same
// bucket, which would leave which one applies to chance.
func validateRateLimits(rules []RateLimit) error {
	for i, l := range rules {
		if err := l.validate(); err != nil {
			return fmt.Errorf("rate limit %d: %w", i, err)
		}
		for j, other := range rules[:i] {
			if other.Cloud == l.Cloud && other.Class == l.Class {
				return fmt.Errorf("rate limit %d: %s %s requests are already limited by rate limit %d", i, l.Cloud, l.Class, j)
			}
		}
	}
	return nil
}

// ReadRateLimits reads a rate-limit file: {"rateLimits": [...]}.
func ReadRateLimits(r io.Reader) ([]RateLimit, error) {
	dec := json.NewDecoder(io.LimitReader(r, 1<<20))
	dec.DisallowUnknownFields()
	var file struct {
		RateLimits []RateLimit `json:"rateLimits"`
	}
	if err := dec.Decode(&file); err != nil {
		return nil, fmt.Errorf("reading rate limits: %w", err)
	}
	if err := validateRateLimits(file.RateLimits); err != nil {
		return nil, err
	}
	return file.RateLimits, nil
}

// LoadRateLimits reads a rate-limit file from disk.
func LoadRateLimits(path string) ([]RateLimit, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rules, err := ReadRateLimits(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return rules, nil
}

// SetRateLimits makes rules the world's rate limits, replacing those it
// has; none lifts every limit. A bucket whose rule is unchanged keeps its
// tokens, so declaring the same rules again does not refill it; a changed
// rule's buckets start full.
func (w *World) SetRateLimits(rules ...RateLimit) error {
	if err := validateRateLimits(rules); err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for k := range w.buckets {
		if !slices.Contains(rules, w.rateLimitFor(k.Cloud, k.Class)) {
			delete(w.buckets, k)
		}
	}
	if !slices.Equal(rules, w.rateLimits) {
		w.changed()
	}
	w.rateLimits = slices.Clone(rules)
	return nil
}

// RateLimits returns the world's rate limits.
func (w *World) RateLimits() []RateLimit {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.rateLimits)
}

// Throttled returns how many calls of each "cloud op" a rate limit
// refused, the counterpart of Calls. (A throttle fault counts in its
// Fired instead.)
func (w *World) Throttled() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]int, len(w.throttled))
	for k, v := range w.throttled {
		out[k] = v
	}
	return out
}

// bucketKey names one tenant's bucket for a class of a cloud's requests.
type bucketKey struct {
	Cloud, Class, Tenant string
}

// rateLimitFor returns the rule for a class of a cloud's requests, or the
// zero RateLimit. The caller holds w.mu.
func (w *World) rateLimitFor(cloud, class string) RateLimit {
	for _, l := range w.rateLimits {
		if l.Cloud == cloud && l.Class == class {
			return l
		}
	}
	return RateLimit{}
}

// meter takes a token for a call from its bucket, if a rule meters it:
// remaining is the whole tokens the bucket has left, and refused, when
// set, the error a call that found it empty is answered with. The caller
// holds w.mu.
//
// A bucket is kept as the time it is full again rather than as a count of
// tokens (the generic cell rate algorithm): whole durations keep every
// answer exact on a manual clock, where fractions of tokens would drift.
func (w *World) meter(c Call) (remaining int, refused *Error, metered bool) {
	if c.Class == "" {
		return 0, nil, false
	}
	l := w.rateLimitFor(c.Cloud, c.Class)
	if l.Burst == 0 {
		return 0, nil, false
	}
	key := bucketKey{c.Cloud, c.Class, c.Tenant}
	interval := max(time.Duration(float64(time.Second)/l.Rate), 1)
	capacity := time.Duration(l.Burst) * interval
	now := w.clock.Now()
	full := w.buckets[key]
	if full.Before(now) {
		full = now
	}
	next := full.Add(interval)
	if ahead := next.Sub(now); ahead > capacity {
		return 0, &Error{
			Kind:       KindThrottled,
			Message:    fmt.Sprintf("rate limit of %s %s requests reached (burst %d, %g a second)", c.Cloud, c.Class, l.Burst, l.Rate),
			RetryAfter: ahead - capacity,
		}, true
	}
	w.buckets[key] = next
	return int((capacity - next.Sub(now)) / interval), nil, true
}
