// SPDX-License-Identifier: Apache-2.0

package reconcile

import (
	"testing"
	"testing/fstest"

	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/providers/sim"
)

// ociFleet may run its V100 nodes on AWS or OCI, on demand. A VM.GPU3.1
// lists at $2.95 an hour in us-ashburn-1 and a p3.2xlarge at $3.06 in
// us-east-1: the nodes go to OCI.
var ociFleet = fstest.MapFS{
	"gpufleet.cue": {Data: []byte(`package gpufleet

gpufleet: clouds: {
	aws: regions: ["us-east-1"]
	oci: {
		compartment: "ocid1.compartment.oc1..aaaaaaaagpufleetexample"
		regions: ["us-ashburn-1"]
		launch: {
			imageByRegion: "us-ashburn-1":  "ocid1.image.oc1.iad.aaaaaaaagpufleetexample"
			subnetByRegion: "us-ashburn-1": "ocid1.subnet.oc1.iad.aaaaaaaagpufleetexample"
		}
	}
}
`)},
	"fleets/research.cue": {Data: []byte(`package gpufleet

fleets: research: {
	owner: "ml"
	workloads: eval: {
		gpu: {model: "V100", perNode: 1}
		nodes: 3
		capacity: "on-demand"
	}
}
`)},
}

// A fleet placed on OCI through the official SDK and the emulator's OCI
// front converges, and the next run finds nothing to do: the nodes are
// listed back by their ownership tags, in the zones they were placed in.
func TestAFleetOnOCIConvergesThenNothingToDo(t *testing.T) {
	t.Parallel()
	e := newEnvFrom(t, sim.Config{Seed: 5}, ociFleet)
	first := e.mustRun(nil)
	if first.Counts.Created != 3 || first.Counts.FailedNodes != 0 {
		t.Fatalf("the first run counted %+v, want 3 created", first.Counts)
	}
	var onOCI int
	for _, inst := range e.World.Instances() {
		if inst.Cloud != "oci" {
			t.Errorf("%s %s runs on %s, want oci, which is cheaper", inst.ID, inst.InstanceType, inst.Cloud)
			continue
		}
		onOCI++
		if inst.InstanceType != "VM.GPU3.1" || inst.Region != "us-ashburn-1" || inst.Tags[providers.TagFleet] != "research" || inst.Tags[providers.TagWorkload] != "eval" {
			t.Errorf("%s: %s in %s/%s tagged %v", inst.ID, inst.InstanceType, inst.Region, inst.Zone, inst.Tags)
		}
	}
	if onOCI != 3 {
		t.Errorf("%d nodes on OCI, want 3", onOCI)
	}
	st := e.StatusAtHead("research")
	if w := st.Workloads[0]; w.Running != 3 || w.Placed[0].Offer.Cloud != "oci" {
		t.Errorf("status: %+v", w)
	}

	mutations := e.Mutations()
	second := e.mustRun(nil)
	if got := e.Mutations(); got != mutations {
		t.Errorf("the second run made %d cloud mutations", got-mutations)
	}
	if len(second.Applied) != 0 || !second.Commit.IsZero() {
		t.Errorf("the second run applied %v and committed %s", second.Applied, second.Commit)
	}
}
