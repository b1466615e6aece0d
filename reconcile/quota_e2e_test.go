package reconcile

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// fiveHundredL4 is a 500-node L4 fleet that may run in two clouds and five
// regions, on demand.
var fiveHundredL4 = fstest.MapFS{
	"gpufleet.cue": {Data: []byte(`package gpufleet

gpufleet: clouds: {
	aws: regions: ["us-east-1", "us-west-2"]
	gcp: {project: "acme-gpu-fleet", regions: ["us-central1", "us-east4", "europe-west4"]}
}
gpufleet: defaults: maxDeletions: 1000
`)},
	"fleets/infer.cue": {Data: []byte(`package gpufleet

fleets: infer: {
	owner: "platform"
	workloads: serve: {gpu: {model: "L4", perNode: 1}, nodes: 500, capacity: "on-demand", placement: clouds: ["aws", "gcp"]}
}
`)},
}

// The 500-node L4 fleet, with a quota that holds 300 of its GPUs in the
// cheapest region (us-central1): the first run places what the quota allows
// with no quota error, few failed calls per created node, and converges. It
// runs on the emulator's default zones (64 nodes of a type each, so
// us-central1 runs dry before its quota is full), and on zones of 100 with
// random stock-outs on 1% of creates besides.
func TestFiveHundredNodesWithinTheQuota(t *testing.T) {
	for _, tt := range []struct {
		name     string
		cfg      sim.Config
		stockOut float64
		central  int // at least this many nodes land in us-central1
	}{
		{name: "default zones", cfg: sim.Config{Seed: 7}, central: 4 * 64},
		{name: "zones of 100 and random stock-outs", cfg: sim.Config{Seed: 7, Capacity: 100}, stockOut: 0.01, central: 250},
	} {
		t.Run(tt.name, func(t *testing.T) { fiveHundredWithinTheQuota(t, tt.cfg, tt.stockOut, tt.central) })
	}
}

func fiveHundredWithinTheQuota(t *testing.T, cfg sim.Config, stockOut float64, central int) {
	e := newEnvFrom(t, cfg, fiveHundredL4)
	e.World.SetQuota(catalog.GCP, "us-central1", "NVIDIA_L4_GPUS", 300)
	if stockOut > 0 {
		if err := e.World.AddFaults(&sim.Fault{Op: "instances.insert", Kind: sim.FaultCapacity, Rate: stockOut}, &sim.Fault{Op: "instances.bulkInsert", Kind: sim.FaultCapacity, Rate: stockOut}, &sim.Fault{Op: "RunInstances", Kind: sim.FaultCapacity, Rate: stockOut}); err != nil {
			t.Fatal(err)
		}
	}
	calls := newCallCounter()
	res := e.mustRun(func(o *Options) { calls.wrap(o) })
	live := e.Live()["infer/serve"]
	_, failed := calls.totals()
	quotaErrors := 0
	for _, a := range res.Applied {
		if strings.Contains(a.Error, "QUOTA_EXCEEDED") || strings.Contains(a.Error, "quotaExceeded") || strings.Contains(a.Error, "VcpuLimitExceeded") {
			quotaErrors++
		}
	}
	inCentral := 0
	for _, inst := range e.World.Instances() {
		if inst.Region == "us-central1" && (inst.State == sim.StatePending || inst.State == sim.StateRunning) {
			inCentral++
		}
	}
	perNode := float64(failed) / float64(max(1, live))
	t.Logf("first run: %d live, %d in us-central1, %d rounds, %d create calls, %d failed (%.3f per created node), %d quota errors",
		live, inCentral, res.Rounds, e.Creates(), failed, perNode, quotaErrors)
	switch {
	case live != 500:
		t.Errorf("%d nodes live after the first run, want all 500", live)
	case quotaErrors != 0:
		t.Errorf("%d creates ran into the quota", quotaErrors)
	case inCentral > 300:
		t.Errorf("%d nodes in us-central1, over the quota's 300", inCentral)
	case inCentral < central:
		t.Errorf("only %d nodes in us-central1, the cheapest region, whose quota holds 300", inCentral)
	case perNode > 0.05:
		t.Errorf("%.3f failed create calls per created node, want at most 0.05", perNode)
	}
	// The plan names the quota that holds it back.
	full := false
	for _, q := range res.Report.Plan.Quotas {
		if q.Name == "NVIDIA_L4_GPUS" && q.Region == "us-central1" {
			full = q.Full || q.Planned == 300
		}
	}
	if !full && inCentral == 300 {
		t.Errorf("the plan does not say the us-central1 L4 quota is full: %+v", res.Report.Plan.Quotas)
	}
	// Converged: the next run has nothing to do.
	before := e.Creates()
	e.mustRun(nil)
	if e.Creates() != before {
		t.Errorf("the second run created %d more", e.Creates()-before)
	}
}
