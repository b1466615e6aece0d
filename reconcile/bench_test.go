// SPDX-License-Identifier: Apache-2.0

package reconcile

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/fstest"

	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema"
)

// threeClouds is a fleet of n nodes from nothing: two fifths L4 spot on
// AWS, two fifths L4 spot on GCP, one fifth A100 on Azure.
func threeClouds(n int) fstest.MapFS {
	return fstest.MapFS{
		"gpufleet.cue": {Data: []byte(`package gpufleet

gpufleet: clouds: {
	aws: regions: ["us-east-1", "us-west-2"]
	azure: {subscription: "00000000-0000-0000-0000-000000000000", resourceGroup: "gpufleet", regions: ["eastus"], launch: {adminUsername: "mlops", sshPublicKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHq3bWl2Zm9vYmFyYmF6cXV4cXV1eHF1dXpxdXV6 mlops@example.com", subnetByRegion: eastus: "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/gpufleet/providers/Microsoft.Network/virtualNetworks/gpu-eastus/subnets/nodes"}}
	gcp: {project: "acme-gpu-fleet", regions: ["us-central1", "europe-west4"]}
}
gpufleet: defaults: maxDeletions: 100000
`)},
		"fleets/big.cue": {Data: []byte(fmt.Sprintf(`package gpufleet

fleets: big: {
	owner: "platform"
	workloads: {
		onaws: {gpu: {model: "L4", perNode: 1}, nodes: %d, capacity: "spot", placement: clouds: ["aws"]}
		ongcp: {gpu: {model: "L4", perNode: 1}, nodes: %d, capacity: "spot", placement: clouds: ["gcp"]}
		onazure: {gpu: {model: "A100-80GB", perNode: 1}, nodes: %d, capacity: "on-demand", placement: clouds: ["azure"]}
	}
}
`, n*2/5, n*2/5, n-2*(n*2/5)))},
	}
}

// callCounter counts, per cloud, the mutating calls a run makes through
// its providers and those that failed outright (a batch that launched
// part of what it asked for did not fail).
type callCounter struct {
	mutating, failed map[string]*atomic.Int64
	// errored counts the calls that returned an error, whatever they
	// launched.
	errored atomic.Int64
}

func newCallCounter() *callCounter {
	c := &callCounter{mutating: map[string]*atomic.Int64{}, failed: map[string]*atomic.Int64{}}
	for _, cloud := range []string{"aws", "azure", "gcp"} {
		c.mutating[cloud], c.failed[cloud] = new(atomic.Int64), new(atomic.Int64)
	}
	return c
}

func (c *callCounter) count(cloud string, err error, launched int) {
	c.mutating[cloud].Add(1)
	if err != nil {
		c.errored.Add(1)
	}
	if err != nil && launched == 0 {
		c.failed[cloud].Add(1)
	}
}

// totals are the mutating calls and the failed ones, over every cloud.
func (c *callCounter) totals() (mutating, failed int64) {
	for cloud := range c.mutating {
		mutating += c.mutating[cloud].Load()
		failed += c.failed[cloud].Load()
	}
	return mutating, failed
}

// wrap counts what the providers of a run do.
func (c *callCounter) wrap(opts *Options) {
	connect := opts.Connect
	opts.Connect = func(ctx context.Context, cfg schema.Config) (map[string]providers.Provider, func() error, error) {
		ps, closer, err := connect(ctx, cfg)
		for name, p := range ps {
			if b, ok := p.(providers.BatchCreator); ok {
				ps[name] = countingBatcher{countingProvider{p, c}, b}
			} else {
				ps[name] = countingProvider{p, c}
			}
		}
		return ps, closer, err
	}
}

type countingProvider struct {
	providers.Provider
	c *callCounter
}

func (p countingProvider) Create(ctx context.Context, req providers.CreateRequest) (providers.Instance, error) {
	inst, err := p.Provider.Create(ctx, req)
	n := 1
	if err != nil {
		n = 0
	}
	p.c.count(p.Name(), err, n)
	return inst, err
}

func (p countingProvider) Delete(ctx context.Context, inst providers.Instance) error {
	err := p.Provider.Delete(ctx, inst)
	p.c.count(p.Name(), err, 1)
	return err
}

type countingBatcher struct {
	countingProvider
	b providers.BatchCreator
}

func (p countingBatcher) CreateBatch(ctx context.Context, req providers.BatchRequest) ([]providers.Instance, error) {
	insts, err := p.b.CreateBatch(ctx, req)
	p.c.count(p.Name(), err, len(insts))
	return insts, err
}

// converged checks a first run: every node of the fleet live, once.
func converged(tb testing.TB, e *env, res *Result, n int) {
	tb.Helper()
	if got := OutcomeOf(res, nil); got != Converged {
		tb.Fatalf("the first run ended %s: %v", got, res.NotConverged)
	}
	live := 0
	tokens := map[string]bool{}
	for _, inst := range e.World.Instances() {
		if inst.State != sim.StatePending && inst.State != sim.StateRunning {
			continue
		}
		live++
		key := inst.Tags["gpufleet-workload"] + " " + inst.Name + " " + inst.ID
		if tokens[key] {
			tb.Errorf("instance %s twice", key)
		}
		tokens[key] = true
	}
	if live != n {
		tb.Fatalf("%d nodes live, want %d: duplicates or shortfall", live, n)
	}
}

// BenchmarkConverge reconciles a three-cloud fleet from nothing on the
// emulator, where every pool has room, and reports the calls it took per
// node: mutating calls (creates and deletes as the providers make them),
// those that failed, and every API call the clouds received, retries
// included.
func BenchmarkConverge(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			var calls *callCounter
			var apiCalls int
			for b.Loop() {
				b.StopTimer()
				e := newEnvFrom(b, sim.Config{Seed: 1, Capacity: 1 << 20, Quota: 1 << 20}, threeClouds(n))
				calls = newCallCounter()
				b.StartTimer()
				res := e.mustRun(func(o *Options) { calls.wrap(o) })
				b.StopTimer()
				converged(b, e, res, n)
				apiCalls = 0
				for _, c := range e.World.Calls() {
					apiCalls += c
				}
				b.StartTimer()
			}
			share := map[string]int{"aws": n * 2 / 5, "gcp": n * 2 / 5, "azure": n - 2*(n*2/5)}
			for cloud, m := range calls.mutating {
				b.ReportMetric(float64(m.Load())/float64(share[cloud]), cloud+"-mutating-calls/node")
			}
			mutating, failed := calls.totals()
			b.ReportMetric(float64(mutating)/float64(n), "mutating-calls/node")
			b.ReportMetric(float64(failed)/float64(n), "failed-calls/node")
			b.ReportMetric(float64(apiCalls)/float64(n), "api-calls/node")
		})
	}
}
