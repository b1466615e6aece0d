// SPDX-License-Identifier: Apache-2.0

package sim

import (
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// mutating is a call EC2 meters as mutating, for account a in us-east-1.
var mutating = Call{Cloud: "aws", Op: "RunInstances", Class: ClassMutating, Tenant: "a/us-east-1"}

// admitted reports whether a call got past its bucket.
func admitted(t *testing.T, w *World, c Call) bool {
	t.Helper()
	out := w.Intercept(c)
	if out.Err != nil && out.Err.Kind != KindThrottled {
		t.Fatalf("%s: %v, want it admitted or throttled", c.Op, out.Err)
	}
	return out.Err == nil
}

func TestRateLimitBurstsThenRefills(t *testing.T) {
	w, clock := newWorld(t, Config{})
	if err := w.SetRateLimits(RateLimit{Cloud: "aws", Class: ClassMutating, Rate: 10, Burst: 3}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		out := w.Intercept(mutating)
		if out.Err != nil || !out.Metered || out.Remaining != 2-i {
			t.Fatalf("call %d of a full bucket of 3: %+v, want admitted with %d left", i+1, out, 2-i)
		}
	}
	out := w.Intercept(mutating)
	if out.Err == nil || out.Err.Kind != KindThrottled || out.Err.RetryAfter != 100*time.Millisecond {
		t.Fatalf("the call past the burst: %+v, want throttled until a token in 100ms", out.Err)
	}
	clock.Advance(99 * time.Millisecond)
	if out := w.Intercept(mutating); out.Err == nil || out.Err.RetryAfter != time.Millisecond {
		t.Fatalf("1ms before the token: %+v, want throttled for 1ms more", out.Err)
	}
	clock.Advance(time.Millisecond)
	if !admitted(t, w, mutating) {
		t.Fatal("a token refilled at 10 a second is not there after 100ms")
	}
	if admitted(t, w, mutating) {
		t.Fatal("the one refilled token served two calls")
	}

	// A long quiet spell fills the bucket to its burst, no further.
	clock.Advance(time.Hour)
	n := 0
	for admitted(t, w, mutating) {
		n++
	}
	if n != 3 {
		t.Errorf("after an hour's rest %d calls went through, want the burst of 3", n)
	}
	if got := w.Throttled(); !maps.Equal(got, map[string]int{"aws RunInstances": 4}) {
		t.Errorf("Throttled() = %v, want the 4 refusals", got)
	}
	if got := w.Calls()["aws RunInstances"]; got != 11 {
		t.Errorf("Calls counts %d RunInstances, want all 11, throttled or not", got)
	}
}

// Over a minute a bucket serves its burst and then exactly its rate, as a
// per-minute quota of Compute Engine does.
func TestRateLimitSustainsItsRate(t *testing.T) {
	w, clock := newWorld(t, Config{})
	if err := w.SetRateLimits(RateLimit{Cloud: "gcp", Class: ClassWrite, Rate: 25, Burst: 1500}); err != nil {
		t.Fatal(err)
	}
	insert := Call{Cloud: "gcp", Op: "instances.insert", Class: ClassWrite, Tenant: "p"}
	// Calls come every 10ms from the start to the end of a minute.
	served := 0
	for i := 0; i <= 60*100; i++ {
		if i > 0 {
			clock.Advance(10 * time.Millisecond)
		}
		for admitted(t, w, insert) {
			served++
		}
	}
	// A full minute's quota at once, then 25 a second for the 60 seconds.
	if served != 1500+25*60 {
		t.Errorf("served %d in a minute, want the burst of 1500 and 1500 refilled", served)
	}
}

func TestRateLimitBucketsAreSeparate(t *testing.T) {
	w, _ := newWorld(t, Config{})
	err := w.SetRateLimits(
		RateLimit{Cloud: "aws", Class: ClassMutating, Rate: 1, Burst: 1},
		RateLimit{Cloud: "aws", Class: ClassNonMutating, Rate: 1, Burst: 2},
		RateLimit{Cloud: "azure", Class: ClassWrite, Rate: 1, Burst: 1},
	)
	if err != nil {
		t.Fatal(err)
	}
	describe := Call{Cloud: "aws", Op: "DescribeInstances", Class: ClassNonMutating, Tenant: "a/us-east-1"}
	if !admitted(t, w, mutating) || admitted(t, w, mutating) {
		t.Fatal("a mutating bucket of 1 did not admit exactly one call")
	}
	if !admitted(t, w, describe) || !admitted(t, w, describe) || admitted(t, w, describe) {
		t.Fatal("the non-mutating bucket of 2 did not admit exactly two calls after the mutating one ran dry")
	}
	other := mutating
	other.Tenant = "a/eu-west-1"
	if !admitted(t, w, other) {
		t.Fatal("another region's mutating bucket was drained by us-east-1's calls")
	}
	put := Call{Cloud: "azure", Op: "put", Class: ClassWrite, Tenant: "sub-1"}
	if !admitted(t, w, put) || admitted(t, w, put) {
		t.Fatal("an ARM write bucket of 1 did not admit exactly one call")
	}
	put.Tenant = "sub-2"
	if !admitted(t, w, put) {
		t.Fatal("another subscription's write bucket was drained")
	}
	// No rule for Azure reads, and no class at all: never metered.
	for _, c := range []Call{{Cloud: "azure", Op: "get", Class: ClassRead, Tenant: "sub-1"}, {Cloud: "aws", Op: "GetServiceQuota"}} {
		for range 10 {
			if out := w.Intercept(c); out.Err != nil || out.Metered {
				t.Fatalf("%s %s: %+v, want it served unmetered", c.Cloud, c.Op, out)
			}
		}
	}
	want := map[string]int{"aws RunInstances": 1, "aws DescribeInstances": 1, "azure put": 1}
	if got := w.Throttled(); !maps.Equal(got, want) {
		t.Errorf("Throttled() = %v, want %v", got, want)
	}
}

// A throttled call never reached the service, so no fault fires on it.
func TestRateLimitRefusesBeforeFaults(t *testing.T) {
	w, _ := newWorld(t, Config{})
	if err := w.SetRateLimits(RateLimit{Cloud: "aws", Class: ClassMutating, Rate: 1, Burst: 1}); err != nil {
		t.Fatal(err)
	}
	fault := &Fault{Cloud: "aws", Op: "RunInstances", Kind: FaultCapacity, Times: 5}
	if err := w.AddFaults(fault); err != nil {
		t.Fatal(err)
	}
	if out := w.Intercept(mutating); out.Err == nil || out.Err.Kind != KindCapacity {
		t.Fatalf("the admitted call: %v, want the capacity fault", out.Err)
	}
	if out := w.Intercept(mutating); out.Err == nil || out.Err.Kind != KindThrottled {
		t.Fatalf("the call past the bucket: %v, want throttled", out.Err)
	}
	if got := w.Faults()[0].Fired; got != 1 {
		t.Errorf("the fault fired %d times, want only on the admitted call", got)
	}
}

func TestSetRateLimitsValidates(t *testing.T) {
	tests := []struct {
		name  string
		rules []RateLimit
		want  string
	}{
		{"unknown cloud", []RateLimit{{Cloud: "oracle", Class: ClassRead, Rate: 1, Burst: 1}}, `unknown cloud "oracle"`},
		{"no cloud", []RateLimit{{Class: ClassRead, Rate: 1, Burst: 1}}, `unknown cloud ""`},
		{"a class of another cloud", []RateLimit{{Cloud: "aws", Class: ClassRead, Rate: 1, Burst: 1}}, `aws has no request class "read" (want mutating or non-mutating)`},
		{"no class", []RateLimit{{Cloud: "gcp", Rate: 1, Burst: 1}}, `gcp has no request class "" (want read or write)`},
		{"no rate", []RateLimit{{Cloud: "gcp", Class: ClassRead, Burst: 1}}, "rate must be above 0"},
		{"a negative rate", []RateLimit{{Cloud: "gcp", Class: ClassRead, Rate: -5, Burst: 1}}, "rate must be above 0"},
		{"no burst", []RateLimit{{Cloud: "azure", Class: ClassWrite, Rate: 1}}, "burst must be at least 1 token, not 0"},
		{"a bucket that never fills", []RateLimit{{Cloud: "azure", Class: ClassWrite, Rate: 1e-9, Burst: 10}}, "more than a year"},
		{"the same bucket twice", []RateLimit{{Cloud: "aws", Class: ClassMutating, Rate: 1, Burst: 1}, {Cloud: "aws", Class: ClassMutating, Rate: 2, Burst: 2}},
			"rate limit 1: aws mutating requests are already limited by rate limit 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, _ := newWorld(t, Config{})
			err := w.SetRateLimits(tt.rules...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("SetRateLimits = %v, want an error saying %q", err, tt.want)
			}
			if got := w.RateLimits(); len(got) != 0 {
				t.Errorf("a refused set left %v", got)
			}
		})
	}
}

// Declaring the same rules again (every `sim serve --rate-limits` start
// does) leaves their buckets as they are; a changed rule starts afresh.
func TestSetRateLimitsKeepsBucketsOfUnchangedRules(t *testing.T) {
	w, _ := newWorld(t, Config{})
	writes := RateLimit{Cloud: "aws", Class: ClassMutating, Rate: 1, Burst: 1}
	reads := RateLimit{Cloud: "aws", Class: ClassNonMutating, Rate: 1, Burst: 1}
	describe := Call{Cloud: "aws", Op: "DescribeInstances", Class: ClassNonMutating, Tenant: "a/us-east-1"}
	if err := w.SetRateLimits(writes, reads); err != nil {
		t.Fatal(err)
	}
	admitted(t, w, mutating)
	admitted(t, w, describe)
	reads.Burst = 2
	if err := w.SetRateLimits(writes, reads); err != nil {
		t.Fatal(err)
	}
	if admitted(t, w, mutating) {
		t.Error("declaring an unchanged rule again refilled its bucket")
	}
	if !admitted(t, w, describe) || !admitted(t, w, describe) {
		t.Error("a changed rule's bucket did not start full")
	}
	if err := w.SetRateLimits(); err != nil {
		t.Fatal(err)
	}
	if out := w.Intercept(mutating); out.Err != nil || out.Metered {
		t.Errorf("with no rules: %+v, want unmetered", out)
	}
}

func TestReadRateLimits(t *testing.T) {
	got, err := ReadRateLimits(strings.NewReader(`{"rateLimits":[{"cloud":"aws","class":"mutating","rate":5,"burst":50},{"cloud":"gcp","class":"read","rate":25,"burst":1500}]}`))
	want := []RateLimit{{Cloud: "aws", Class: ClassMutating, Rate: 5, Burst: 50}, {Cloud: "gcp", Class: ClassRead, Rate: 25, Burst: 1500}}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("ReadRateLimits = %+v, %v, want %+v", got, err, want)
	}
	for _, bad := range []struct{ file, want string }{
		{`{"rateLimits":[{"cloud":"aws","class":"mutating","rate":5,"burst":50,"per":"minute"}]}`, `unknown field "per"`},
		{`{"limits":[]}`, `unknown field "limits"`},
		{`{"rateLimits":[{"cloud":"aws","class":"writes","rate":5,"burst":50}]}`, `aws has no request class "writes"`},
		{`{"rateLimits":[{"cloud":"aws","class":"mutating","rate":5,"burst":"50"}]}`, "reading rate limits"},
		{`{"rateLimits":`, "reading rate limits"},
	} {
		if _, err := ReadRateLimits(strings.NewReader(bad.file)); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("ReadRateLimits(%s) = %v, want an error saying %q", bad.file, err, bad.want)
		}
	}
}

func TestRateLimitsSurviveARestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	w, _ := newWorld(t, Config{StatePath: path})
	rules := []RateLimit{{Cloud: "azure", Class: ClassRead, Rate: 25, Burst: 250}, {Cloud: "aws", Class: ClassMutating, Rate: 1, Burst: 1}}
	if err := w.SetRateLimits(rules...); err != nil {
		t.Fatal(err)
	}
	admitted(t, w, mutating)
	admitted(t, w, mutating)
	if err := w.Save(); err != nil {
		t.Fatal(err)
	}
	again, _ := newWorld(t, Config{StatePath: path})
	if got := again.RateLimits(); !slices.Equal(got, rules) {
		t.Errorf("after a restart the rate limits are %+v, want %+v", got, rules)
	}
	if got := again.Throttled(); !maps.Equal(got, map[string]int{"aws RunInstances": 1}) {
		t.Errorf("after a restart Throttled() = %v, want the one refusal", got)
	}
}
