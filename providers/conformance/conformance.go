// SPDX-License-Identifier: Apache-2.0

package conformance

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/providers/sim"
)

// Harness is what the suite needs from one provider's test.
type Harness struct {
	Provider providers.Provider
	// Offer and Spot are an on-demand and a spot offer the backend can
	// launch, in one of the provider's regions.
	Offer, Spot planner.OfferKey
	// World is the emulator behind the provider, for faults, preemptions
	// and call counts; nil for a backend the suite cannot steer, whose
	// cases that need it are skipped.
	World *sim.World
	// Seed launches n instances owned by fleet straight through the
	// backend, quicker than n creates, for the paging case.
	Seed func(ctx context.Context, fleet string, n int) error
	// Foreign launches an instance without gpufleet's tags and returns its
	// id as the provider would report it; Alive reports whether it exists.
	Foreign func(ctx context.Context) (string, error)
	Alive   func(ctx context.Context, id string) (bool, error)
	// CreateCalls and DeleteCalls are the World's names ("aws
	// RunInstances") of the mutating calls a create and a delete make.
	CreateCalls, DeleteCalls []string
	// Gaps are cases the backend is known to get wrong, with why: the case
	// runs, and is reported as a known gap, not a pass.
	Gaps map[string]string
	// NoSpot says the cloud has no spot market (Lambda Cloud): Spot is
	// unused, and the preemption case, which needs a spot instance to take
	// back, is skipped as not applying rather than passed.
	NoSpot bool
	// TokenOf reads the create token a World instance was launched with,
	// and whether it has one: how the cloud marks what gpufleet owns. nil
	// reads the gpufleet-token tag. A cloud without tags (Lambda Cloud)
	// marks its nodes by name, and reads the token from that; the cases
	// that check a failed create left nothing behind, and that Foreign's
	// instance is not gpufleet's, use it.
	TokenOf func(*sim.Instance) (string, bool)
}

// Run runs the suite.
func Run(t *testing.T, h Harness) {
	cases := []struct {
		name  string
		world bool
		// spot says the case needs a spot offer.
		spot bool
		run  func(*suite)
	}{
		{"create list delete", false, false, (*suite).createListDelete},
		{"repeated create returns the same instance", false, false, (*suite).repeatedCreate},
		{"stock-out is a capacity error", true, false, (*suite).stockOut},
		{"exceeded quota is a quota error", true, false, (*suite).quota},
		{"throttling is survived", true, false, (*suite).throttling},
		{"preempted instance is listed as preempted", true, true, (*suite).preempted},
		{"paging over 1,000 instances", false, false, (*suite).paging},
		{"instance without our tags is never listed or deleted", false, false, (*suite).foreign},
		{"unowned instance is adopted, then listed as owned", false, false, (*suite).adopted},
		{"delete is idempotent", false, false, (*suite).deleteTwice},
		{"one mutating call per create and per delete", true, false, (*suite).callCounts},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.world && h.World == nil {
				t.Skip("this backend cannot inject faults or count calls")
			}
			if c.spot && h.NoSpot {
				t.Skip("the cloud has no spot market, so no spot instance to preempt")
			}
			s := &suite{h: h, t: t}
			why, gap := h.Gaps[c.name]
			if !gap {
				c.run(s)
				return
			}
			// A known gap runs too: its failure is reported as the gap, and
			// a pass means the gap has closed and the harness must say so.
			s.gap = true
			defer func() {
				if r := recover(); r != nil {
					if _, shown := r.(gapShown); !shown {
						panic(r)
					}
					t.Skipf("known gap: %s", why)
				}
			}()
			c.run(s)
			t.Errorf("known gap %q no longer shows: remove it from the harness", why)
		})
	}
}

type gapShown struct{}

type suite struct {
	h   Harness
	t   *testing.T
	gap bool
	seq int
}

// check fails the case; under a known gap it only records the failure.
func (s *suite) check(ok bool, format string, args ...any) bool {
	s.t.Helper()
	if ok {
		return true
	}
	if s.gap {
		s.t.Logf("gap shows: "+format, args...)
		panic(gapShown{})
	}
	s.t.Fatalf(format, args...)
	return false
}

func (s *suite) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	s.t.Cleanup(cancel)
	return ctx
}

// request builds a create request with a fresh token.
func (s *suite) request(offer planner.OfferKey, fleet string) providers.CreateRequest {
	s.seq++
	token := planner.Token(fleet, "w", offer, strings.ReplaceAll(s.t.Name(), "/", "-"), s.seq)
	return providers.CreateRequest{Token: token, Offer: offer, Fleet: fleet, Workload: "w", Labels: map[string]string{"team": "conformance"}}
}

func (s *suite) list(fleet string) []providers.Instance {
	s.t.Helper()
	got, err := s.h.Provider.List(s.ctx(), providers.Selector{Fleet: fleet})
	s.check(err == nil, "List: %v", err)
	return got
}

func find(instances []providers.Instance, id string) (providers.Instance, bool) {
	for _, inst := range instances {
		if inst.ID == id {
			return inst, true
		}
	}
	return providers.Instance{}, false
}

func (s *suite) createListDelete() {
	req := s.request(s.h.Offer, "conf-basic")
	inst, err := s.h.Provider.Create(s.ctx(), req)
	s.check(err == nil, "Create: %v", err)
	s.check(inst.ID != "" && inst.Fleet == req.Fleet && inst.Workload == req.Workload && inst.Token == req.Token,
		"Create returned %+v for %+v", inst, req)
	s.check(inst.OfferKey == req.Offer, "created on %s, asked for %s", inst.OfferKey, req.Offer)
	s.check(inst.State == planner.StatePending || inst.State == planner.StateRunning, "a new instance is %s", inst.State)

	listed, ok := find(s.list(req.Fleet), inst.ID)
	s.check(ok, "List does not show %s", inst.ID)
	s.check(listed.OfferKey == req.Offer && listed.Token == req.Token && listed.Workload == "w", "List shows %+v", listed)

	s.check(s.h.Provider.Delete(s.ctx(), listed) == nil, "Delete failed")
	if after, ok := find(s.list(req.Fleet), inst.ID); ok {
		s.check(!after.State.Live(), "after Delete the instance is still %s", after.State)
	}
}

func (s *suite) repeatedCreate() {
	req := s.request(s.h.Offer, "conf-repeat")
	first, err := s.h.Provider.Create(s.ctx(), req)
	s.check(err == nil, "Create: %v", err)
	second, err := s.h.Provider.Create(s.ctx(), req)
	s.check(err == nil, "repeated Create: %v", err)
	s.check(second.ID == first.ID, "repeated Create launched %s beside %s", second.ID, first.ID)
	n := 0
	for _, inst := range s.list(req.Fleet) {
		if inst.Token == req.Token && inst.State.Live() {
			n++
		}
	}
	s.check(n == 1, "%d live instances carry one token", n)
}

// classified checks an error's kind, that it keeps the cloud's code, and
// that nothing was left behind for its token.
func (s *suite) classified(err error, want error, req providers.CreateRequest) {
	s.t.Helper()
	s.check(errors.Is(err, want), "got %v, want %v", err, want)
	var pe *providers.Error
	s.check(errors.As(err, &pe) && pe.Code != "" && pe.Cloud == s.h.Provider.Name(), "error %v keeps no cloud code", err)
	s.check(pe.Offer == req.Offer, "error names offer %s, want %s", pe.Offer, req.Offer)
	s.t.Logf("%s: %s", pe.Code, pe.Message)
	for _, inst := range s.worldInstances(req.Token) {
		s.check(inst.State != sim.StatePending && inst.State != sim.StateRunning && inst.State != sim.StateFailed,
			"a failed create left %s %s behind", inst.ID, inst.State)
	}
}

func (s *suite) worldInstances(token string) []*sim.Instance {
	if s.h.World == nil {
		return nil
	}
	return s.h.World.List(s.h.Provider.Name(), func(i *sim.Instance) bool {
		t, ok := s.tokenOf(i)
		return ok && t == token
	})
}

// tokenOf is the token a World instance carries, by the cloud's way of
// marking what gpufleet owns.
func (s *suite) tokenOf(i *sim.Instance) (string, bool) {
	if s.h.TokenOf != nil {
		return s.h.TokenOf(i)
	}
	t := i.Tags[providers.TagToken]
	return t, t != ""
}

// owned counts the World's instances of the cloud that carry a token, and
// all of them; -1 and -1 without a World.
func (s *suite) owned() (owned, all int) {
	if s.h.World == nil {
		return -1, -1
	}
	for _, i := range s.h.World.List(s.h.Provider.Name(), nil) {
		if _, ok := s.tokenOf(i); ok {
			owned++
		}
		all++
	}
	return owned, all
}

func (s *suite) stockOut() {
	o := s.h.Offer
	s.h.World.SetCapacity(o.Cloud, o.Zone, o.InstanceType, o.Market, 0)
	defer s.h.World.SetCapacity(o.Cloud, o.Zone, o.InstanceType, o.Market, 1000)
	req := s.request(o, "conf-stockout")
	_, err := s.h.Provider.Create(s.ctx(), req)
	s.classified(err, providers.ErrCapacity, req)
}

func (s *suite) quota() {
	o := s.h.Offer
	q, ok := s.h.World.QuotaFor(o.Cloud, o.Region, o.InstanceType, o.Market)
	s.check(ok, "the emulator knows no quota %s counts against", o)
	s.h.World.SetQuota(o.Cloud, q.Region, q.Name, 0)
	defer s.h.World.SetQuota(o.Cloud, q.Region, q.Name, q.Limit)
	req := s.request(o, "conf-quota")
	_, err := s.h.Provider.Create(s.ctx(), req)
	s.classified(err, providers.ErrQuota, req)
}

func (s *suite) throttling() {
	before := s.h.World.Calls()
	s.check(s.h.World.AddFaults(&sim.Fault{Cloud: s.h.Provider.Name(), Kind: sim.FaultThrottle, Times: 2}) == nil, "adding faults")
	defer s.h.World.ClearFaults()
	req := s.request(s.h.Offer, "conf-throttle")
	inst, err := s.h.Provider.Create(s.ctx(), req)
	s.check(err == nil, "Create under throttling: %v", err)
	s.check(inst.ID != "", "no instance")
	extra := total(s.h.World.Calls()) - total(before)
	s.check(extra >= 3, "only %d calls: the throttled ones were not retried", extra)
	_, err = s.h.Provider.List(s.ctx(), providers.Selector{Fleet: req.Fleet})
	s.check(err == nil, "List after throttling: %v", err)
}

func (s *suite) preempted() {
	req := s.request(s.h.Spot, "conf-preempt")
	inst, err := s.h.Provider.Create(s.ctx(), req)
	s.check(err == nil, "Create spot: %v", err)
	in := s.worldInstances(req.Token)
	s.check(len(in) == 1, "the emulator holds %d instances for the token", len(in))
	s.check(s.h.World.Preempt(in[0].ID) == nil, "preempting")
	listed, ok := find(s.list(req.Fleet), inst.ID)
	s.check(ok, "a preempted instance is not listed at all")
	s.check(listed.State == planner.StatePreempted, "a preempted instance is listed as %s", listed.State)
}

func (s *suite) paging() {
	const n = 1001
	s.check(s.h.Seed(s.ctx(), "conf-paging", n) == nil, "seeding")
	got := s.list("conf-paging")
	ids := map[string]bool{}
	for _, inst := range got {
		ids[inst.ID] = true
	}
	s.check(len(got) == n && len(ids) == n, "listed %d instances (%d distinct), want %d", len(got), len(ids), n)
}

func (s *suite) foreign() {
	ownedBefore, allBefore := s.owned()
	id, err := s.h.Foreign(s.ctx())
	s.check(err == nil, "launching a foreign instance: %v", err)
	if ownedAfter, allAfter := s.owned(); allAfter >= 0 {
		// Foreign's instance must be foreign by the cloud's own mark, or
		// the case proves nothing.
		s.check(allAfter == allBefore+1 && ownedAfter == ownedBefore, "Foreign launched %d instances, %d of them marked as gpufleet's; want one, unmarked",
			allAfter-allBefore, ownedAfter-ownedBefore)
	}
	all, err := s.h.Provider.List(s.ctx(), providers.Selector{})
	s.check(err == nil, "List: %v", err)
	_, listed := find(all, id)
	s.check(!listed, "List shows %s, which carries no gpufleet tags", id)
	// Even asked to, the provider refuses to delete what it does not own.
	err = s.h.Provider.Delete(s.ctx(), providers.Instance{ID: id, OfferKey: s.h.Offer, Fleet: "conf-foreign", Workload: "w", State: planner.StateRunning})
	s.check(err != nil, "Delete of a foreign instance succeeded")
	alive, aerr := s.h.Alive(s.ctx(), id)
	s.check(aerr == nil && alive, "the foreign instance is gone (%v)", aerr)
}

// adopted takes a foreign instance through Unowned and Adopt: it is
// listed unowned with its offer and account, tagged, then listed as the
// fleet's with its token and no longer unowned; adopting it again is a
// no-op, and into another fleet a refusal.
func (s *suite) adopted() {
	adopter, ok := s.h.Provider.(providers.Adopter)
	if !ok {
		// Adoption is optional; the three clouds' providers have it.
		s.t.Skip("the provider is no providers.Adopter")
	}
	id, err := s.h.Foreign(s.ctx())
	s.check(err == nil, "launching a foreign instance: %v", err)
	found, err := adopter.Unowned(s.ctx(), providers.UnownedSelector{IDs: []string{id}})
	s.check(err == nil, "Unowned: %v", err)
	s.check(len(found) == 1 && found[0].ID == id, "Unowned by id %s lists %v", id, found)
	u := found[0]
	s.check(u.Offer == s.h.Offer, "Unowned lists %s on %s, launched on %s", id, u.Offer, s.h.Offer)
	s.check(u.Account != "" && u.State.Live(), "Unowned lists %s with account %q in state %s", id, u.Account, u.State)
	limited, err := adopter.Unowned(s.ctx(), providers.UnownedSelector{Limit: 1})
	s.check(err == nil && len(limited) >= 1 && len(limited) <= 2, "Unowned with Limit 1 lists %d instances (%v)", len(limited), err)
	ns, err := adopter.Unowned(s.ctx(), providers.UnownedSelector{IDs: []string{id}, Namespace: true})
	s.check(err == nil && len(ns) == 0, "Unowned in gpufleet's name space lists %v (%v), an instance with no gpufleet- tag or gf- name", ns, err)

	req := s.request(s.h.Offer, "conf-adopt")
	req.Token = providers.AdoptedToken(req.Fleet, req.Workload, s.h.Offer.Cloud, id)
	inst, err := adopter.Adopt(s.ctx(), u, req)
	s.check(err == nil, "Adopt: %v", err)
	s.check(inst.ID == id && inst.Fleet == req.Fleet && inst.Workload == req.Workload && inst.Token == req.Token,
		"Adopt returns %+v, want %s of %s/%s with token %s", inst, id, req.Fleet, req.Workload, req.Token)
	listed, ok := find(s.list(req.Fleet), id)
	s.check(ok && listed.Token == req.Token && listed.OfferKey == s.h.Offer, "List after Adopt shows %+v (listed %v)", listed, ok)
	after, err := adopter.Unowned(s.ctx(), providers.UnownedSelector{IDs: []string{id}})
	s.check(err == nil && len(after) == 0, "Unowned still lists the adopted %s: %v (%v)", id, after, err)
	again, err := adopter.Adopt(s.ctx(), u, req)
	s.check(err == nil && again.ID == id && again.Token == req.Token, "adopting again: %+v, %v", again, err)
	other := req
	other.Fleet = "conf-other"
	_, err = adopter.Adopt(s.ctx(), u, other)
	s.check(errors.Is(err, providers.ErrInvalid), "adopting an owned instance into another fleet: %v, want an invalid error", err)
	s.check(s.h.Provider.Delete(s.ctx(), listed) == nil, "deleting the adopted instance")
}

func (s *suite) deleteTwice() {
	req := s.request(s.h.Offer, "conf-delete")
	inst, err := s.h.Provider.Create(s.ctx(), req)
	s.check(err == nil, "Create: %v", err)
	s.check(s.h.Provider.Delete(s.ctx(), inst) == nil, "first Delete failed")
	s.check(s.h.Provider.Delete(s.ctx(), inst) == nil, "second Delete failed")
}

func (s *suite) callCounts() {
	before := s.h.World.Calls()
	req := s.request(s.h.Offer, "conf-calls")
	inst, err := s.h.Provider.Create(s.ctx(), req)
	s.check(err == nil, "Create: %v", err)
	afterCreate := s.h.World.Calls()
	s.check(s.h.Provider.Delete(s.ctx(), inst) == nil, "Delete failed")
	afterDelete := s.h.World.Calls()
	creates := diff(before, afterCreate)
	deletes := diff(afterCreate, afterDelete)
	s.check(sum(creates, s.h.CreateCalls) == 1, "a create made %v: want exactly one of %v", creates, s.h.CreateCalls)
	s.check(sum(deletes, s.h.DeleteCalls) == 1, "a delete made %v: want exactly one of %v", deletes, s.h.DeleteCalls)
	s.t.Logf("API calls per create: %s; per delete: %s", describe(creates), describe(deletes))
}

func diff(before, after map[string]int) map[string]int {
	out := map[string]int{}
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

func sum(calls map[string]int, names []string) int {
	n := 0
	for _, name := range names {
		n += calls[name]
	}
	return n
}

func total(calls map[string]int) int {
	n := 0
	for _, v := range calls {
		n += v
	}
	return n
}

func describe(calls map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(calls)) {
		parts = append(parts, fmt.Sprintf("%d %s", calls[k], k))
	}
	return strings.Join(parts, ", ")
}
