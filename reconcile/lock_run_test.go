// SPDX-License-Identifier: Apache-2.0

package reconcile

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/providers/fake"
	"github.com/gpufleet/gpufleet/providers/sim"
)

// A run whose renewals stop getting through — the fleet repository went
// away while it launched — gives the lock up before it expires and asks the
// clouds for nothing more: the create in flight is cancelled, the creates
// queued behind it are never made, and no status is pushed. The run says
// it lost the lock.
func TestARunThatCannotRenewItsLockMakesNoMoreCloudCalls(t *testing.T) {
	t.Parallel()
	e := newEnvFrom(t, sim.Config{Seed: 44}, fstest.MapFS{
		"gpufleet.cue":  {Data: []byte("package gpufleet\n\ngpufleet: clouds: gcp: {project: \"gpufleet-test\", regions: [\"us-central1\"]}\n")},
		"fleets/ml.cue": {Data: []byte("package gpufleet\n\nfleets: ml: {\n\towner: \"ml-team\"\n\tworkloads: infer: {gpu: {model: \"L4\", perNode: 1}, nodes: 3}\n}\n")},
	})
	gcp := fake.New("gcp", "us-central1")
	hold := gcp.HoldCreates()
	c := e.checkout()
	opts := e.options(c)
	opts.Providers = map[string]providers.Provider{"gcp": gcp}
	opts.Parallelism = 1
	// Renewed every half second on the wall clock: the test waits for the
	// give-up, it does not time it.
	opts.Lock.TTL = 2 * time.Second
	head := e.Head().Hash

	ran := make(chan error, 1)
	go func() {
		_, err := Run(context.Background(), c, opts)
		ran <- err
	}()
	select {
	case <-hold.Arrived():
	case <-time.After(time.Minute):
		t.Fatal("no create arrived")
	}
	if err := os.Rename(e.Origin, e.Origin+".gone"); err != nil {
		t.Fatal(err)
	}
	var err error
	select {
	case err = <-ran:
	case <-time.After(time.Minute):
		t.Fatal("the run that could not renew its lock did not stop")
	}
	if err == nil || !strings.Contains(err.Error(), "could not be renewed before it expires") {
		t.Errorf("the run ended with %v, want it to say it could not renew the lock", err)
	}
	creates := gcp.CallsTo(fake.MethodCreate)
	if len(creates) != 1 {
		t.Errorf("%d creates, want the 1 in flight when the renewals stopped: the run called the clouds after it lost the lock", len(creates))
	}
	for _, call := range creates {
		if !errors.Is(call.Err, context.Canceled) {
			t.Errorf("the create in flight ended with %v, want it cancelled", call.Err)
		}
	}
	if err := os.Rename(e.Origin+".gone", e.Origin); err != nil {
		t.Fatal(err)
	}
	if e.Head().Hash != head {
		t.Error("the run that lost its lock pushed a status")
	}
}
