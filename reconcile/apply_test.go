// SPDX-License-Identifier: Apache-2.0

package reconcile_test

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/providers/fake"
	"github.com/gpufleet/gpufleet/reconcile"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// Apply's decisions, on fake clouds: what it creates and deletes, in which
// order, and what it learns from each kind of failure. The emulator tests
// (e2e_test.go, chaos_test.go) check the same run against the clouds' APIs.
func TestApply(t *testing.T) {
	// The train workload's two nodes land on aws in every case; what
	// varies is where infer's node goes.
	const (
		train = "create aws/us-east-1/us-east-1a/g4dn.xlarge/on-demand ml/train"
		infer = " ml/infer"
	)
	oldNode := planner.Instance{ID: "i-old", OfferKey: awsL4, Fleet: "ml", Workload: "infer", Token: "tok-old", State: planner.StateRunning}

	tests := []struct {
		name    string
		arrange func(t *testing.T, e *fakeEnv)
		// calls are the creates and deletes in the order the fakes saw
		// them.
		calls   []string
		outcome reconcile.Outcome
		rounds  int
		check   func(t *testing.T, e *fakeEnv, res *reconcile.Result)
	}{
		{
			name:    "every create succeeds: converged in one round",
			calls:   []string{"create " + gcpCentralA.String() + infer, train, train},
			outcome: reconcile.Converged,
			rounds:  1,
			check: func(t *testing.T, e *fakeEnv, res *reconcile.Result) {
				if req := e.gcp.Requests()[0]; req.Labels["team"] != "ml" {
					t.Errorf("the create carried labels %v, want the workload's team=ml", req.Labels)
				}
				if reqs := e.aws.Requests(); reqs[0].Token == reqs[1].Token {
					t.Errorf("two nodes of one workload were asked for with one token %s", reqs[0].Token)
				}
				if len(res.Blocklist) != 0 {
					t.Errorf("blocklist %v, want none", blocked(res))
				}
			},
		},
		{
			name:    "a capacity error blocklists the offer and the node lands on the next zone",
			arrange: func(t *testing.T, e *fakeEnv) { e.gcp.FailCreates(gcpCentralA, 1, fake.Err(providers.KindCapacity)) },
			calls:   []string{"create " + gcpCentralA.String() + infer + ": capacity", train, train, "create " + gcpCentralB.String() + infer},
			outcome: reconcile.Converged,
			rounds:  2,
			check: func(t *testing.T, e *fakeEnv, res *reconcile.Result) {
				if got := blocked(res); !slices.Equal(got, []string{gcpCentralA.String()}) {
					t.Errorf("blocklist %v, want only %s", got, gcpCentralA)
				}
				recorded := false
				for _, a := range res.Applied {
					if a.Kind == planner.Create && a.Offer == gcpCentralA.String() && strings.Contains(a.Error, "capacity") {
						recorded = true
					}
				}
				if !recorded {
					t.Errorf("the failed create is not recorded with its error: %+v", res.Applied)
				}
			},
		},
		{
			name: "capacity in two zones of a region: stock-outs are zonal, so the region's next zone is tried before a dearer region",
			arrange: func(t *testing.T, e *fakeEnv) {
				e.gcp.FailCreates(gcpCentralA, 1, fake.Err(providers.KindCapacity))
				e.gcp.FailCreates(gcpCentralB, 1, fake.Err(providers.KindCapacity))
			},
			calls: []string{
				"create " + gcpCentralA.String() + infer + ": capacity", train, train,
				"create " + gcpCentralB.String() + infer + ": capacity",
				"create " + gcpCentralC.String() + infer,
			},
			outcome: reconcile.Converged,
			rounds:  3,
			check: func(t *testing.T, e *fakeEnv, res *reconcile.Result) {
				if got := blocked(res); !slices.Equal(got, []string{gcpCentralA.String(), gcpCentralB.String()}) {
					t.Errorf("blocklist %v, want the two zones that ran dry and no other", got)
				}
			},
		},
		{
			name: "capacity everywhere: it gives up after Options.Rounds, trying no offer twice",
			arrange: func(t *testing.T, e *fakeEnv) {
				for _, p := range []*fake.Provider{e.aws, e.gcp} {
					offers, _ := p.Offers(context.Background())
					for _, o := range offers {
						if o.GPUModel == "L4" {
							p.FailCreates(o.OfferKey, fake.Always, fake.Err(providers.KindCapacity))
						}
					}
				}
			},
			// One offer a round, the cheapest not yet tried, for the
			// fake environment's four rounds.
			calls:   triedOnce(cheapestL4(t, 4), infer, train),
			outcome: reconcile.NotConverged,
			rounds:  4,
		},
		{
			name:    "a quota error blocklists every offer of the GPU model in the region",
			arrange: func(t *testing.T, e *fakeEnv) { e.gcp.FailCreates(gcpCentralA, 1, fake.Err(providers.KindQuota)) },
			calls:   []string{"create " + gcpCentralA.String() + infer + ": quota", train, train, "create " + gcpEuropeA.String() + infer},
			// The node runs elsewhere, as after a stock-out: the clouds
			// match the plan. The blocklist says which quota ran out.
			outcome: reconcile.Converged,
			rounds:  2,
			check: func(t *testing.T, e *fakeEnv, res *reconcile.Result) {
				offers, _ := e.gcp.Offers(context.Background())
				var want []string
				for _, o := range offers {
					if o.Region == "us-central1" && o.GPUModel == "L4" {
						want = append(want, o.String())
					}
				}
				if got := blocked(res); len(want) < 8 || !slices.Equal(got, want) {
					t.Errorf("blocklist %v, want every L4 offer of us-central1: %v", got, want)
				}
				for _, b := range res.Blocklist {
					if !strings.Contains(b.Reason, "quota exceeded") {
						t.Errorf("blocklist entry %s says %q, not that the quota ran out", b.Offer, b.Reason)
					}
				}
			},
		},
		{
			name: "a spent token is retired and the retry asks with a fresh one",
			arrange: func(t *testing.T, e *fakeEnv) {
				// A first run launches the node; someone then deletes it by
				// hand, so the next run's plan asks for it with the same
				// token, which the cloud remembers as spent.
				if _, err := e.run(context.Background(), nil); err != nil {
					t.Fatal(err)
				}
				inst := e.gcp.Instances()[0]
				e.gcp.Remove(inst.ID)
				e.aws.ResetCalls()
				e.gcp.ResetCalls()
			},
			calls:   []string{"create " + gcpCentralA.String() + infer + ": token-spent", "create " + gcpCentralA.String() + infer},
			outcome: reconcile.Converged,
			rounds:  2,
			check: func(t *testing.T, e *fakeEnv, res *reconcile.Result) {
				reqs := e.gcp.Requests()
				if reqs[0].Token == reqs[1].Token {
					t.Errorf("the retry reused the spent token %s", reqs[0].Token)
				}
				if len(res.Blocklist) != 0 {
					t.Errorf("a spent token blocklisted %v", blocked(res))
				}
			},
		},
		{
			name:    "an invalid request is not failed over",
			arrange: func(t *testing.T, e *fakeEnv) { e.gcp.NextCreateErr(fake.Err(providers.KindInvalid)) },
			calls:   []string{"create " + gcpCentralA.String() + infer + ": invalid", train, train},
			outcome: reconcile.NotConverged,
			rounds:  1,
			check:   notFailedOver("creating on " + gcpCentralA.String()),
		},
		{
			name:    "an auth error is not failed over",
			arrange: func(t *testing.T, e *fakeEnv) { e.gcp.NextCreateErr(fake.Err(providers.KindAuth)) },
			calls:   []string{"create " + gcpCentralA.String() + infer + ": auth", train, train},
			outcome: reconcile.NotConverged,
			rounds:  1,
			check:   notFailedOver("auth: injected by the test"),
		},
		{
			name:    "a cloud outage is left for the next run, not failed over",
			arrange: func(t *testing.T, e *fakeEnv) { e.gcp.NextCreateErr(fake.Err(providers.KindUnavailable)) },
			calls:   []string{"create " + gcpCentralA.String() + infer + ": unavailable", train, train},
			outcome: reconcile.NotConverged,
			rounds:  1,
			check:   notFailedOver("unavailable: injected by the test"),
		},
		{
			name: "a failed create keeps the node it was to replace",
			arrange: func(t *testing.T, e *fakeEnv) {
				e.aws.Add(oldNode)
				e.gcp.NextCreateErr(fake.Err(providers.KindInvalid))
			},
			calls:   []string{"create " + gcpCentralA.String() + infer + ": invalid", train, train},
			outcome: reconcile.NotConverged,
			rounds:  1,
			check: func(t *testing.T, e *fakeEnv, res *reconcile.Result) {
				if inst, ok := e.aws.Get(oldNode.ID); !ok || !inst.State.Live() {
					t.Errorf("the old node is gone (%v) or not running (%s)", ok, inst.State)
				}
			},
		},
		{
			name: "a replacement that fails over deletes the old node only once it lands",
			arrange: func(t *testing.T, e *fakeEnv) {
				e.aws.Add(oldNode)
				e.gcp.FailCreates(gcpCentralA, 1, fake.Err(providers.KindCapacity))
			},
			calls: []string{
				"create " + gcpCentralA.String() + infer + ": capacity", train, train,
				"create " + gcpCentralB.String() + infer, "delete i-old",
			},
			outcome: reconcile.Converged,
			rounds:  2,
		},
		{
			name: "leftovers are deleted even when their workload's create fails",
			arrange: func(t *testing.T, e *fakeEnv) {
				e.aws.Add(planner.Instance{ID: "i-preempted", OfferKey: awsL4Spot, Fleet: "ml", Workload: "infer", Token: "tok-p", State: planner.StatePreempted})
				e.aws.Add(planner.Instance{ID: "i-failed", OfferKey: awsL4, Fleet: "ml", Workload: "infer", Token: "tok-f", State: planner.StateFailed})
				e.aws.Add(planner.Instance{ID: "i-stopped", OfferKey: awsT4, Fleet: "ml", Workload: "infer", Token: "tok-s", State: planner.StateStopping})
				e.gcp.NextCreateErr(fake.Err(providers.KindInvalid))
			},
			calls: []string{
				"create " + gcpCentralA.String() + infer + ": invalid", train, train,
				"delete i-failed", "delete i-preempted", "delete i-stopped",
			},
			outcome: reconcile.NotConverged,
			rounds:  1,
			check: func(t *testing.T, e *fakeEnv, res *reconcile.Result) {
				for _, id := range []string{"i-preempted", "i-failed", "i-stopped"} {
					if _, ok := e.aws.Get(id); ok {
						t.Errorf("leftover %s is still there", id)
					}
				}
			},
		},
		{
			name: "a delete that fails is recorded and the run does not converge",
			arrange: func(t *testing.T, e *fakeEnv) {
				e.aws.Add(planner.Instance{ID: "i-failed", OfferKey: awsL4, Fleet: "ml", Workload: "infer", Token: "tok-f", State: planner.StateFailed})
				e.aws.NextDeleteErr(fake.Err(providers.KindUnavailable))
			},
			calls:   []string{"create " + gcpCentralA.String() + infer, train, train, "delete i-failed: unavailable"},
			outcome: reconcile.NotConverged,
			rounds:  1,
			check: func(t *testing.T, e *fakeEnv, res *reconcile.Result) {
				if !contains(res.NotConverged, "deleting i-failed") {
					t.Errorf("NotConverged %q does not name the failed delete", res.NotConverged)
				}
			},
		},
		{
			name: "a cloud that cannot be listed again after applying leaves the run converged on what the calls returned",
			arrange: func(t *testing.T, e *fakeEnv) {
				e.gcp.NextListErr(nil, fake.Err(providers.KindUnavailable))
			},
			calls:   []string{"create " + gcpCentralA.String() + infer, train, train},
			outcome: reconcile.Converged,
			rounds:  1,
			check: func(t *testing.T, e *fakeEnv, res *reconcile.Result) {
				if got := e.gcp.Count(fake.MethodList); got != 2 {
					t.Errorf("gcp was listed %d times, want 2: to observe, and again after applying", got)
				}
			},
		},
		{
			name: "a cloud that cannot be listed stops the run before any change",
			arrange: func(t *testing.T, e *fakeEnv) {
				e.aws.Add(planner.Instance{ID: "i-failed", OfferKey: awsL4, Fleet: "ml", Workload: "infer", Token: "tok-f", State: planner.StateFailed})
				e.gcp.NextListErr(fake.Err(providers.KindUnavailable))
			},
			calls:   nil,
			outcome: reconcile.Failed,
			rounds:  0,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newFakeEnv(t, mlFleet)
			if tt.arrange != nil {
				tt.arrange(t, e)
			}
			res, err := e.run(context.Background(), nil)
			if res == nil {
				t.Fatalf("Run returned no result: %v", err)
			}
			if got := reconcile.OutcomeOf(res, err); got != tt.outcome {
				t.Errorf("outcome %s (err %v, not converged %q), want %s", got, err, res.NotConverged, tt.outcome)
			}
			if got := e.mutations(); !slices.Equal(got, tt.calls) {
				t.Errorf("calls:\n\t%s\nwant:\n\t%s", strings.Join(got, "\n\t"), strings.Join(tt.calls, "\n\t"))
			}
			if res.Rounds != tt.rounds {
				t.Errorf("%d rounds, want %d", res.Rounds, tt.rounds)
			}
			if failed := countFailed(res); failed != countFailedCalls(tt.calls) {
				t.Errorf("the result records %d failed calls, the fakes saw %d: %+v", failed, countFailedCalls(tt.calls), res.Applied)
			}
			if tt.check != nil {
				tt.check(t, e, res)
			}
		})
	}
}

// notFailedOver checks that a create error nothing can route around is
// reported and blocklists nothing.
func notFailedOver(message string) func(*testing.T, *fakeEnv, *reconcile.Result) {
	return func(t *testing.T, e *fakeEnv, res *reconcile.Result) {
		if len(res.Blocklist) != 0 {
			t.Errorf("blocklist %v, want none", blocked(res))
		}
		if !contains(res.NotConverged, message) {
			t.Errorf("NotConverged %q does not say %q", res.NotConverged, message)
		}
	}
}

func countFailed(res *reconcile.Result) int {
	n := 0
	for _, a := range res.Applied {
		if a.Error != "" {
			n++
		}
	}
	return n
}

func countFailedCalls(calls []string) int {
	n := 0
	for _, c := range calls {
		if strings.Contains(c, ": ") {
			n++
		}
	}
	return n
}

// Cancelling a run while a create is in flight stops the run: the create
// returns, Run returns the context's error, and nothing is launched or
// deleted after the cancel.
func TestApplyStopsWhenCancelled(t *testing.T) {
	e := newFakeEnv(t, mlFleet)
	e.aws.Add(planner.Instance{ID: "i-failed", OfferKey: awsL4, Fleet: "ml", Workload: "infer", Token: "tok-f", State: planner.StateFailed})
	hold := e.gcp.HoldCreates()
	defer hold.Release()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type ran struct {
		res *reconcile.Result
		err error
	}
	done := make(chan ran, 1)
	go func() {
		res, err := e.run(ctx, nil)
		done <- ran{res, err}
	}()
	select {
	case <-hold.Arrived():
	case <-time.After(10 * time.Second):
		t.Fatal("no create reached the cloud")
	}
	cancel()
	var got ran
	select {
	case got = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the run did not stop after its context was cancelled")
	}
	if !errors.Is(got.err, context.Canceled) || reconcile.OutcomeOf(got.res, got.err) != reconcile.Failed {
		t.Errorf("Run returned %v (outcome %s), want a failed run for context.Canceled", got.err, reconcile.OutcomeOf(got.res, got.err))
	}
	// Nothing may change after the cancel: every call made after it must
	// have failed on the context.
	var after []string
	for _, p := range []*fake.Provider{e.aws, e.gcp} {
		for _, c := range p.Calls() {
			if (c.Method == fake.MethodCreate || c.Method == fake.MethodDelete) && !errors.Is(c.Err, context.Canceled) {
				after = append(after, string(c.Method)+" "+c.Offer.String()+" "+c.Instance)
			}
		}
		for _, inst := range p.Instances() {
			if inst.State.Live() {
				t.Errorf("%s launched after the cancel", inst.ID)
			}
		}
	}
	if len(after) > 0 {
		t.Errorf("calls went through after the cancel: %v", after)
	}
	if _, ok := e.aws.Get("i-failed"); !ok {
		t.Error("the leftover was deleted after the cancel")
	}

	// Nothing but the held create reached a cloud: the creates queued
	// behind it and the round's deletes were never asked for.
	want := []string{"create " + gcpCentralA.String() + " ml/infer: context canceled"}
	if calls := e.mutations(); !slices.Equal(calls, want) {
		t.Errorf("calls after the cancel:\n\t%s\nwant only the held create", strings.Join(calls, "\n\t"))
	}
}

// cheapestL4 is the n cheapest offers the fake clouds sell a one-GPU
// on-demand L4 node on, cheapest first and ties in key order, as the
// planner ranks them.
func cheapestL4(t *testing.T, n int) []planner.OfferKey {
	t.Helper()
	var l4 []planner.Offer
	for _, p := range []*fake.Provider{fake.New("aws", "us-east-1"), fake.New("gcp", "us-central1", "europe-west4")} {
		offers, err := p.Offers(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range offers {
			if o.GPUModel == "L4" && o.GPUs == 1 && o.Market == catalog.OnDemand && o.PriceMicros > 0 {
				l4 = append(l4, o)
			}
		}
	}
	slices.SortFunc(l4, func(a, b planner.Offer) int {
		return cmp.Or(cmp.Compare(a.PriceMicros, b.PriceMicros), a.Compare(b.OfferKey))
	})
	if len(l4) < n {
		t.Fatalf("the fake clouds sell %d one-GPU on-demand L4 offers, want at least %d", len(l4), n)
	}
	keys := make([]planner.OfferKey, n)
	for i := range keys {
		keys[i] = l4[i].OfferKey
	}
	return keys
}

// triedOnce is the calls of a run whose creates of a workload all fail for
// capacity, on offers in turn, with train's two creates after the first.
func triedOnce(offers []planner.OfferKey, workload, train string) []string {
	var calls []string
	for i, o := range offers {
		calls = append(calls, "create "+o.String()+workload+": capacity")
		if i == 0 {
			calls = append(calls, train, train)
		}
	}
	return calls
}
