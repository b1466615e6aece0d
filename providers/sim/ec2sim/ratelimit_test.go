// SPDX-License-Identifier: Apache-2.0

package ec2sim_test

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"

	gfaws "github.com/gpufleet/gpufleet/providers/aws"
	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/providers/sim/ec2sim"
)

// An empty bucket answers EC2's RequestLimitExceeded, a 503, to the class
// it meters only, and only in its region.
func TestRateLimitAnswersRequestLimitExceeded(t *testing.T) {
	f := newFixture(t, sim.Config{})
	if err := f.world.SetRateLimits(sim.RateLimit{Cloud: "aws", Class: sim.ClassMutating, Rate: 1, Burst: 2}); err != nil {
		t.Fatal(err)
	}
	east := f.client("us-east-1", 1)
	mustRun(t, east, runInput("g4dn.xlarge", "us-east-1a", "a"))
	mustRun(t, east, runInput("g4dn.xlarge", "us-east-1a", "b"))
	_, err := east.RunInstances(context.Background(), runInput("g4dn.xlarge", "us-east-1a", "c"))
	if msg := wantAPIError(t, err, "RequestLimitExceeded", http.StatusServiceUnavailable); msg != "Request limit exceeded." {
		t.Errorf("message %q", msg)
	}
	if _, err := east.TerminateInstances(context.Background(), &ec2.TerminateInstancesInput{InstanceIds: []string{"i-0123456789abcdef0"}}); err == nil {
		t.Fatal("TerminateInstances got past the empty mutating bucket")
	} else {
		wantAPIError(t, err, "RequestLimitExceeded", http.StatusServiceUnavailable)
	}
	// Describe* calls are non-mutating, which no rule meters here.
	if got := describe(t, east, &ec2.DescribeInstancesInput{}); len(got) != 2 {
		t.Errorf("DescribeInstances shows %d instances, want the 2 launched", len(got))
	}
	mustRun(t, f.client("us-west-2", 1), runInput("g4dn.xlarge", "us-west-2a", "d"))

	f.clock.Advance(time.Second)
	mustRun(t, east, runInput("g4dn.xlarge", "us-east-1a", "c"))
	want := map[string]int{"aws RunInstances": 1, "aws TerminateInstances": 1}
	if got := f.world.Throttled(); !maps.Equal(got, want) {
		t.Errorf("Throttled() = %v, want %v", got, want)
	}
}

// Many clients launching at once through a small bucket are throttled,
// back off with the SDK's standard retryer and all get their instances,
// at a bounded cost in throttled attempts: no retry storm. The world runs
// on the real clock, so the bucket refills while the retryer waits; the
// refill rate is high and the backoff capped low to keep the test quick.
func TestRateLimitedSDKRetriesSucceed(t *testing.T) {
	world, err := sim.New(sim.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := world.SetRateLimits(sim.RateLimit{Cloud: "aws", Class: sim.ClassMutating, Rate: 500, Burst: 2}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(ec2sim.New(world, ec2sim.Options{}))
	t.Cleanup(srv.Close)
	const launches, attempts = 16, 8
	// The standard retryer as the SDK builds it, retry quota included,
	// with more attempts than its default 3 and its 20s backoff cap cut
	// to 100ms.
	client := ec2.New(ec2.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(srv.URL),
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDSIM", "secret", ""),
		HTTPClient:   gfaws.LoopbackHTTPClient(),
		Retryer: retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxAttempts = attempts
			o.MaxBackoff = 100 * time.Millisecond
		}),
	})

	var wg sync.WaitGroup
	errs := make(chan error, launches)
	for i := range launches {
		wg.Go(func() {
			_, err := client.RunInstances(context.Background(), runInput("g4dn.xlarge", "us-east-1a", fmt.Sprintf("launch-%d", i)))
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("a launch failed: %v", err)
		}
	}

	throttled := world.Throttled()["aws RunInstances"]
	calls := world.Calls()["aws RunInstances"]
	t.Logf("%d launches took %d attempts, %d of them throttled", launches, calls, throttled)
	if throttled == 0 {
		t.Error("no launch was throttled by a bucket of 2")
	}
	if calls != launches+throttled {
		t.Errorf("%d attempts for %d launches and %d throttled: an attempt that was not throttled was repeated", calls, launches, throttled)
	}
	if limit := launches * (attempts - 1); throttled > limit {
		t.Errorf("%d throttled attempts, more than the %d the retryer allows", throttled, limit)
	}
	if got := len(world.List("aws", nil)); got != launches {
		t.Errorf("%d instances launched, want %d", got, launches)
	}
}
