// SPDX-License-Identifier: Apache-2.0

package gcesim

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	"github.com/googleapis/gax-go/v2"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/option"

	"github.com/gpufleet/gpufleet/providers/sim"
)

// An empty bucket answers Compute Engine's 403 rateLimitExceeded, to the
// class it meters only, and only in its project.
func TestRateLimitAnswersRateLimitExceeded(t *testing.T) {
	f := newFixture(t, sim.Config{}, Options{})
	err := f.world.SetRateLimits(
		sim.RateLimit{Cloud: "gcp", Class: sim.ClassWrite, Rate: 1, Burst: 1},
		sim.RateLimit{Cloud: "gcp", Class: sim.ClassRead, Rate: 1, Burst: 2},
	)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := f.instances.Insert(ctx, vm{name: "first"}.request()); err != nil {
		t.Fatal(err)
	}
	_, err = f.instances.Insert(ctx, vm{name: "second"}.request())
	wantAPIError(t, err, 403, "rateLimitExceeded", "Rate Limit Exceeded")
	_, err = f.instances.Delete(ctx, &computepb.DeleteInstanceRequest{Project: project, Zone: zone, Instance: "first"})
	wantAPIError(t, err, 403, "rateLimitExceeded", "Rate Limit Exceeded")

	// Reads have a bucket of their own; operations.wait, a POST, is one.
	f.get(t, zone, "first")
	if _, err := f.operations.Wait(ctx, &computepb.WaitZoneOperationRequest{Project: project, Zone: zone, Operation: "none"}); !isNotFound(err) {
		t.Fatalf("operations.wait: %v, want it served (and the operation not found)", err)
	}
	_, err = f.instances.Get(ctx, &computepb.GetInstanceRequest{Project: project, Zone: zone, Instance: "first"})
	wantAPIError(t, err, 403, "rateLimitExceeded", "Rate Limit Exceeded")

	// Another project's buckets are full.
	other := vm{name: "first"}.request()
	other.Project = "another-project"
	if _, err := f.instances.Insert(ctx, other); err != nil {
		t.Fatalf("another project's insert was throttled: %v", err)
	}

	f.clock.Advance(time.Second)
	if _, err := f.instances.Insert(ctx, vm{name: "second"}.request()); err != nil {
		t.Fatalf("the refilled token did not serve the insert: %v", err)
	}
	want := map[string]int{"gcp " + OpInsert: 1, "gcp " + OpDelete: 1, "gcp " + OpGet: 1}
	if got := f.world.Throttled(); !maps.Equal(got, want) {
		t.Errorf("Throttled() = %v, want %v", got, want)
	}
}

func isNotFound(err error) bool {
	var gerr *googleapi.Error
	return errors.As(err, &gerr) && gerr.Code == 404
}

// throttleRetryer retries calls Compute Engine throttled with gax's
// jittered exponential backoff, up to attempts in all. The REST client's
// own defaults retry only 503 and 504, so a caller that means to ride out
// throttling brings a retryer like it.
type throttleRetryer struct {
	backoff  gax.Backoff
	attempts int
	failures int
}

func (r *throttleRetryer) Retry(err error) (time.Duration, bool) {
	r.failures++
	var gerr *googleapi.Error
	if r.failures >= r.attempts || !errors.As(err, &gerr) || len(gerr.Errors) == 0 || gerr.Errors[0].Reason != "rateLimitExceeded" {
		return 0, false
	}
	return r.backoff.Pause(), true
}

// Many clients inserting at once through a small write bucket are
// throttled, back off and all get their instances, at a bounded cost in
// throttled attempts. The world runs on the real clock, so the bucket
// refills while the retryer waits; the refill rate is high and the backoff
// capped low to keep the test quick.
func TestRateLimitedSDKRetriesSucceed(t *testing.T) {
	world, err := sim.New(sim.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := world.SetRateLimits(sim.RateLimit{Cloud: "gcp", Class: sim.ClassWrite, Rate: 500, Burst: 2}); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(New(world, Options{}))
	t.Cleanup(ts.Close)
	ctx := context.Background()
	instances, err := compute.NewInstancesRESTClient(ctx, option.WithEndpoint(ts.URL), option.WithHTTPClient(ts.Client()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { instances.Close() })
	const inserts, attempts = 16, 8
	retry := gax.WithRetry(func() gax.Retryer {
		return &throttleRetryer{backoff: gax.Backoff{Initial: 20 * time.Millisecond, Max: 100 * time.Millisecond, Multiplier: 2}, attempts: attempts}
	})

	var wg sync.WaitGroup
	errs := make(chan error, inserts)
	for i := range inserts {
		wg.Go(func() {
			_, err := instances.Insert(ctx, vm{name: fmt.Sprintf("vm-%d", i)}.request(), retry)
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("an insert failed: %v", err)
		}
	}

	throttled := world.Throttled()["gcp "+OpInsert]
	calls := world.Calls()["gcp "+OpInsert]
	t.Logf("%d inserts took %d attempts, %d of them throttled", inserts, calls, throttled)
	if throttled == 0 {
		t.Error("no insert was throttled by a bucket of 2")
	}
	if calls != inserts+throttled {
		t.Errorf("%d attempts for %d inserts and %d throttled: an attempt that was not throttled was repeated", calls, inserts, throttled)
	}
	if limit := inserts * (attempts - 1); throttled > limit {
		t.Errorf("%d throttled attempts, more than the %d the retryer allows", throttled, limit)
	}
	if got := len(world.List("gcp", nil)); got != inserts {
		t.Errorf("%d instances inserted, want %d", got, inserts)
	}
}
