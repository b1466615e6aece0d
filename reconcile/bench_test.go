package reconcile

import (
	"testing"
	"testing/fstest"

	"github.com/gpufleet/gpufleet/providers/sim"
)

// bigFleet is a fleet of 1,000 single-GPU nodes spread over the three
// clouds.
var bigFleet = fstest.MapFS{
	"gpufleet.cue": {Data: []byte(`package gpufleet

gpufleet: clouds: {
	aws: regions: ["us-east-1", "us-west-2"]
	azure: {subscription: "00000000-0000-0000-0000-000000000000", resourceGroup: "gpufleet", regions: ["eastus", "westus3"]}
	gcp: {project: "acme-gpu-fleet", regions: ["us-central1", "us-east4"]}
}
gpufleet: defaults: maxDeletions: 1000
`)},
	"fleets/big.cue": {Data: []byte(`package gpufleet

fleets: big: {
	owner: "platform"
	workloads: {
		serve: {gpu: {model: "L4", perNode: 1}, nodes: 334, placement: clouds: ["aws"]}
		embed: {gpu: {model: "T4", perNode: 1}, nodes: 333, placement: clouds: ["azure"]}
		batch: {gpu: {model: "L4", perNode: 1}, nodes: 333, placement: clouds: ["gcp"], capacity: "spot"}
	}
}
`)},
}

// BenchmarkConverge1000Nodes converges a 1,000-node fleet across three
// clouds on the emulator from nothing: clone, observe, plan, 1,000 creates,
// observe again, status commit and push. It reports the cloud API calls a
// run makes.
func BenchmarkConverge1000Nodes(b *testing.B) {
	for b.Loop() {
		b.StopTimer()
		e := newEnvFrom(b, sim.Config{Seed: 1, Capacity: 5000, Quota: 100000}, bigFleet)
		b.StartTimer()
		res := e.mustRun(nil)
		b.StopTimer()
		if len(res.Applied) != 1000 {
			b.Fatalf("applied %d actions, want 1,000", len(res.Applied))
		}
		total, mutating := 0, e.Mutations()
		for _, n := range e.World.Calls() {
			total += n
		}
		b.ReportMetric(float64(total), "api-calls")
		b.ReportMetric(float64(mutating), "mutating-calls")
		b.StartTimer()
	}
}
