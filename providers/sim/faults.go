// SPDX-License-Identifier: Apache-2.0

package sim

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"
)

// Fault is a rule that makes matching API calls misbehave: scripted ("the
// next 3 RunInstances in us-east-1a fail with InsufficientInstanceCapacity")
// or random ("5% of Azure calls are throttled").
type Fault struct {
	// Match: empty fields match anything.
	Cloud        string `json:"cloud,omitempty"`
	Op           string `json:"op,omitempty"`
	Region       string `json:"region,omitempty"`
	Zone         string `json:"zone,omitempty"`
	InstanceType string `json:"instanceType,omitempty"`

	// Kind is what happens: throttle, capacity, quota, server-error,
	// latency, fail-later (the request is accepted and its operation fails
	// with a stock-out), or preempt (a running spot instance of the cloud is
	// taken back; the call itself proceeds).
	Kind string `json:"kind"`
	// Code overrides the cloud's usual error code for the kind.
	Code string `json:"code,omitempty"`
	// Times fires the fault on the next N matching calls. With Rate, it
	// caps how often the fault fires in all.
	Times int `json:"times,omitempty"`
	// Rate fires the fault on that share of matching calls, drawn from the
	// world's seeded source.
	Rate float64 `json:"rate,omitempty"`
	// Latency delays the call, for kind latency.
	Latency Duration `json:"latency,omitempty"`
	// Fired counts how often the fault struck.
	Fired int `json:"fired,omitempty"`
}

// Duration is a time.Duration written as "250ms" in fault files.
type Duration time.Duration

func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("durations are strings such as \"250ms\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// Fault kinds.
const (
	FaultThrottle    = "throttle"
	FaultCapacity    = "capacity"
	FaultQuota       = "quota"
	FaultServerError = "server-error"
	FaultLatency     = "latency"
	FaultFailLater   = "fail-later"
	FaultPreempt     = "preempt"
)

var faultKinds = []string{FaultThrottle, FaultCapacity, FaultQuota, FaultServerError, FaultLatency, FaultFailLater, FaultPreempt}

func (f *Fault) validate() error {
	if !slices.Contains(faultKinds, f.Kind) {
		return fmt.Errorf("unknown kind %q (want one of %s)", f.Kind, strings.Join(faultKinds, ", "))
	}
	if f.Cloud != "" && !emulated(f.Cloud) {
		return fmt.Errorf("unknown cloud %q", f.Cloud)
	}
	if f.Times < 0 || f.Rate < 0 || f.Rate > 1 {
		return fmt.Errorf("times must be >= 0 and rate within [0, 1]")
	}
	if f.Times == 0 && f.Rate == 0 {
		return fmt.Errorf("a fault needs times, rate or both")
	}
	if f.Kind == FaultLatency && f.Latency <= 0 {
		return fmt.Errorf("a latency fault needs a latency")
	}
	return nil
}

// ReadFaults reads a fault file: {"faults": [...]}.
func ReadFaults(r io.Reader) ([]*Fault, error) {
	dec := json.NewDecoder(io.LimitReader(r, 1<<20))
	dec.DisallowUnknownFields()
	var file struct {
		Faults []*Fault `json:"faults"`
	}
	if err := dec.Decode(&file); err != nil {
		return nil, fmt.Errorf("reading faults: %w", err)
	}
	for i, f := range file.Faults {
		if err := f.validate(); err != nil {
			return nil, fmt.Errorf("faults[%d]: %w", i, err)
		}
	}
	return file.Faults, nil
}

// LoadFaults reads a fault file from disk.
func LoadFaults(path string) ([]*Fault, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	faults, err := ReadFaults(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return faults, nil
}

// AddFaults appends rules; they are checked in the order added.
func (w *World) AddFaults(faults ...*Fault) error {
	for i, f := range faults {
		if err := f.validate(); err != nil {
			return fmt.Errorf("fault %d: %w", i, err)
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.faults = append(w.faults, faults...)
	w.changed()
	return nil
}

// SetFaults makes rules the world's fault rules, in that order, replacing
// those it has: what `sim serve --faults` declares on every start over a
// state that already holds the rules of the last start. A rule identical
// to one the world has, in everything but Fired, keeps that rule's Fired,
// so a restart neither re-arms a counted fault that is spent nor resets
// one partly spent; each old rule lends its count to one new rule at most.
// The world keeps copies of the rules, not the rules themselves.
func (w *World) SetFaults(rules ...*Fault) error {
	for i, f := range rules {
		if err := f.validate(); err != nil {
			return fmt.Errorf("fault %d: %w", i, err)
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	taken := make([]bool, len(w.faults))
	next := make([]*Fault, 0, len(rules))
	for _, rule := range rules {
		f := *rule
		for i, old := range w.faults {
			if !taken[i] && old.sameRule(&f) {
				taken[i] = true
				f.Fired = old.Fired
				break
			}
		}
		next = append(next, &f)
	}
	if !slices.EqualFunc(next, w.faults, func(a, b *Fault) bool { return *a == *b }) {
		w.changed()
	}
	w.faults = next
	return nil
}

// sameRule reports whether two faults are the same rule, however often
// each fired.
func (f *Fault) sameRule(other *Fault) bool {
	a, b := *f, *other
	a.Fired, b.Fired = 0, 0
	return a == b
}

// ClearFaults removes every rule.
func (w *World) ClearFaults() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.faults = nil
	w.changed()
}

// Faults returns a copy of the rules with how often each fired.
func (w *World) Faults() []Fault {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]Fault, len(w.faults))
	for i, f := range w.faults {
		out[i] = *f
	}
	return out
}

// Call describes an API call a front is about to serve.
type Call struct {
	Cloud, Op, Region, Zone, InstanceType string
	// Class is the request class a rate limit meters the call in
	// (ClassMutating, ClassRead, ...); a call without one is not metered.
	Class string
	// Tenant is whose bucket the call draws on: an Azure subscription, a
	// Google Cloud project, an AWS account in one region (EC2 throttles
	// each region apart).
	Tenant string
}

// Outcome is what the rate limits and faults decided for a call.
type Outcome struct {
	// Latency to add before answering.
	Latency time.Duration
	// Err, when set, is the error to answer with instead of serving.
	Err *Error
	// FailLater, when set, is the error the call's operation must end with.
	FailLater *Error
	// Metered is set when a rate limit metered the call; Remaining is then
	// the whole tokens its bucket has left, which ARM reports to callers.
	Metered   bool
	Remaining int
}

// Intercept counts a call, meters it against its rate limit and applies
// the first matching faults: at most one error and any latency. Fronts
// call it once per request, before serving it. A call its bucket refuses
// is answered with a throttling error before any fault is consulted: it
// never got past the cloud's front door.
func (w *World) Intercept(c Call) Outcome {
	w.mu.Lock()
	defer w.mu.Unlock()
	key := c.Cloud + " " + c.Op
	w.calls[key]++
	var out Outcome
	if remaining, refused, ok := w.meter(c); ok {
		out.Metered, out.Remaining = true, remaining
		if refused != nil {
			w.throttled[key]++
			out.Err = refused
			return out
		}
	}
	for _, f := range w.faults {
		if !f.matches(c) || !w.fire(f) {
			continue
		}
		switch f.Kind {
		case FaultLatency:
			out.Latency += time.Duration(f.Latency)
		case FaultPreempt:
			w.preemptRandom(c.Cloud)
		case FaultFailLater:
			if out.FailLater == nil && out.Err == nil {
				out.FailLater = &Error{Kind: KindCapacity, Code: f.Code, Message: "the operation failed after it was accepted"}
			}
		default:
			if out.Err == nil && out.FailLater == nil {
				out.Err = &Error{Kind: faultErrorKind[f.Kind], Code: f.Code, Message: fmt.Sprintf("injected %s fault", f.Kind)}
			}
		}
	}
	return out
}

var faultErrorKind = map[string]Kind{
	FaultThrottle:    KindThrottled,
	FaultCapacity:    KindCapacity,
	FaultQuota:       KindQuota,
	FaultServerError: KindServerError,
}

func (f *Fault) matches(c Call) bool {
	return (f.Cloud == "" || f.Cloud == c.Cloud) &&
		(f.Op == "" || f.Op == c.Op) &&
		(f.Region == "" || f.Region == c.Region) &&
		(f.Zone == "" || f.Zone == c.Zone) &&
		(f.InstanceType == "" || f.InstanceType == c.InstanceType)
}

// fire decides whether a matching fault strikes this time.
func (w *World) fire(f *Fault) bool {
	if f.Times > 0 && f.Fired >= f.Times {
		return false
	}
	if f.Rate > 0 && w.rng.Float64() >= f.Rate {
		return false
	}
	f.Fired++
	w.changed()
	return true
}

// Calls returns how many calls each "cloud op" received.
func (w *World) Calls() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]int, len(w.calls))
	for k, v := range w.calls {
		out[k] = v
	}
	return out
}
