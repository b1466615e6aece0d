// SPDX-License-Identifier: Apache-2.0

package armsim

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	azfake "github.com/Azure/azure-sdk-for-go/sdk/azcore/fake"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7"

	"github.com/gpufleet/gpufleet/providers/sim"
)

// ARM reports what is left of the subscription's reads and writes on
// every metered response, and answers an empty bucket with 429
// TooManyRequests and the wait until its next token: whole seconds in
// Retry-After, milliseconds in retry-after-ms.
func TestRateLimitAnswersTooManyRequests(t *testing.T) {
	f := newFront(t, frontConfig{manual: true, retry: &noRetry})
	err := f.world.SetRateLimits(
		sim.RateLimit{Cloud: "azure", Class: sim.ClassWrite, Rate: 4, Burst: 2},
		sim.RateLimit{Cloud: "azure", Class: sim.ClassRead, Rate: 100, Burst: 10},
	)
	if err != nil {
		t.Fatal(err)
	}
	var resp *http.Response
	ctx := runtime.WithCaptureResponse(context.Background(), &resp)
	if _, err := f.vms.BeginCreateOrUpdate(ctx, testRG, "first", vmRequest("eastus", t4, inZone("1")), nil); err != nil {
		t.Fatal(err)
	}
	if got := resp.Header.Get("x-ms-ratelimit-remaining-subscription-writes"); got != "1" {
		t.Errorf("after the first write of a burst of 2, remaining writes %q, want 1", got)
	}
	if _, err := f.vms.Get(ctx, testRG, "first", nil); err != nil {
		t.Fatal(err)
	}
	if got, none := resp.Header.Get("x-ms-ratelimit-remaining-subscription-reads"), resp.Header.Get("x-ms-ratelimit-remaining-subscription-writes"); got != "9" || none != "" {
		t.Errorf("a read reports remaining reads %q and writes %q, want 9 and nothing", got, none)
	}
	if _, err := f.vms.BeginCreateOrUpdate(ctx, testRG, "second", vmRequest("eastus", t4, inZone("1")), nil); err != nil {
		t.Fatal(err)
	}

	_, err = f.vms.BeginDelete(ctx, testRG, "first", nil)
	re := responseError(t, err, "TooManyRequests", http.StatusTooManyRequests)
	h := re.RawResponse.Header
	if h.Get("Retry-After") != "1" || h.Get("retry-after-ms") != "250" || h.Get("x-ms-ratelimit-remaining-subscription-writes") != "0" {
		t.Errorf("throttled DELETE: Retry-After %q, retry-after-ms %q, remaining writes %q; want 1, 250 and 0",
			h.Get("Retry-After"), h.Get("retry-after-ms"), h.Get("x-ms-ratelimit-remaining-subscription-writes"))
	}
	if want := fmt.Sprintf("Number of 'write' requests for subscription '%s'", testSub); !strings.Contains(re.Error(), want) {
		t.Errorf("message %v does not say %q", re, want)
	}

	if _, err := f.vms.Get(ctx, testRG, "first", nil); err != nil {
		t.Fatalf("reads were throttled with the writes: %v", err)
	}
	// Another subscription has buckets of its own.
	other, err := armcompute.NewVirtualMachinesClient("99999999-1111-2222-3333-444444444444", &azfake.TokenCredential{}, clientOptions(f.url, noRetry))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.BeginCreateOrUpdate(ctx, testRG, "elsewhere", vmRequest("eastus", t4, inZone("1")), nil); err != nil {
		t.Fatalf("another subscription's write was throttled: %v", err)
	}

	f.clock.Advance(250 * time.Millisecond)
	if _, err := f.vms.BeginDelete(ctx, testRG, "first", nil); err != nil {
		t.Fatalf("the refilled token did not serve the delete: %v", err)
	}
	if got := f.world.Throttled(); len(got) != 1 || got["azure delete"] != 1 {
		t.Errorf("Throttled() = %v, want the one refused delete", got)
	}
}

// Clients creating VMs at once through a small write bucket are throttled,
// wait as retry-after-ms tells azcore's retry policy, at its defaults,
// and all get their VMs, each within the policy's three retries.
func TestRateLimitedSDKRetriesSucceed(t *testing.T) {
	defaults := policy.RetryOptions{}
	f := newFront(t, frontConfig{retry: &defaults})
	// A token a second: the five first attempts, made at once, meet a
	// bucket of two however slowly the machine serves them (at 100 a
	// second, a machine slowed down, by the race detector say, refilled
	// it between them and throttled none).
	if err := f.world.SetRateLimits(sim.RateLimit{Cloud: "azure", Class: sim.ClassWrite, Rate: 1, Burst: 2}); err != nil {
		t.Fatal(err)
	}
	// Callers throttled together are told the same wait and come back
	// together, and each time one of them gets the token: with three
	// retries, three callers beyond the burst are as many as are sure to
	// get through.
	const creates, retries = 5, 3
	var wg sync.WaitGroup
	errs := make(chan error, creates)
	for i := range creates {
		wg.Go(func() {
			_, err := f.create(t, fmt.Sprintf("vm-%d", i), vmRequest("eastus", t4, inZone("1")))
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("a create failed: %v", err)
		}
	}
	throttled := f.world.Throttled()["azure put"]
	calls := f.world.Calls()["azure put"]
	t.Logf("%d creates took %d PUTs, %d of them throttled", creates, calls, throttled)
	if throttled == 0 {
		t.Error("no create was throttled by a bucket of 2")
	}
	if calls != creates+throttled {
		t.Errorf("%d PUTs for %d creates and %d throttled: a PUT that was not throttled was repeated", calls, creates, throttled)
	}
	if limit := creates * retries; throttled > limit {
		t.Errorf("%d throttled PUTs, more than the %d the retry policy allows", throttled, limit)
	}
}
