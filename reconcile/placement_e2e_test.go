// SPDX-License-Identifier: Apache-2.0

package reconcile

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema"
)

func gangFleet(nodes int) string {
	return fmt.Sprintf(`package gpufleet

fleets: train: {
	owner: "research"
	workloads: {
		onaws: {gpu: {model: "H100", perNode: 8}, nodes: %[1]d, placement: {clouds: ["aws"], gang: "zone"}}
		ongcp: {gpu: {model: "H100", perNode: 8}, nodes: %[1]d, placement: {clouds: ["gcp"], gang: "zone"}}
		onazure: {gpu: {model: "H100", perNode: 8}, nodes: %[1]d, placement: {clouds: ["azure"], gang: "zone"}}
	}
}
`, nodes)
}

// A zone gang's nodes are launched into a placement group of gpufleet's
// in their zone, one per cloud here; once the gang is gone, so are its
// groups.
func TestAZoneGangGetsAPlacementGroupAndLosesItWhenEmpty(t *testing.T) {
	t.Parallel()
	src := fstest.MapFS{
		"gpufleet.cue": {Data: []byte(`package gpufleet

gpufleet: clouds: {
	aws: regions: ["us-east-1"]
	azure: {subscription: "00000000-0000-0000-0000-000000000000", resourceGroup: "gpufleet", regions: ["eastus"], launch: {sshPublicKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHq3bWl2Zm9vYmFyYmF6cXV4cXV1eHF1dXpxdXV6 ops@example.com", subnetByRegion: eastus: "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/gpufleet/providers/Microsoft.Network/virtualNetworks/gpu/subnets/nodes"}}
	gcp: {project: "acme-gpu-fleet", regions: ["us-central1"]}
}
gpufleet: defaults: maxDeletions: 100
`)},
		"fleets/train.cue": {Data: []byte(gangFleet(3))},
	}
	e := newEnvFrom(t, sim.Config{Seed: 4}, src)
	res := e.mustRun(nil)
	if OutcomeOf(res, nil) != Converged {
		t.Fatalf("first run: %v", res.NotConverged)
	}
	groups := func() map[string][]string {
		c := e.checkout()
		opts := e.options(c)
		repo, err := schema.Load(c.Dir)
		if err != nil {
			t.Fatal(err)
		}
		ps, closer, err := opts.Connect(context.Background(), repo.Config)
		if err != nil {
			t.Fatal(err)
		}
		defer closer()
		out := map[string][]string{}
		for cloud, p := range ps {
			pg, ok := p.(providers.PlacementGrouper)
			if !ok {
				t.Fatalf("%s keeps no placement groups", cloud)
			}
			list, err := pg.PlacementGroups(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			for _, g := range list {
				out[cloud] = append(out[cloud], g.Name+"@"+g.Zone)
			}
		}
		return out
	}
	got := groups()
	zones := map[string]string{}
	for _, inst := range e.World.Instances() {
		if inst.State == sim.StatePending || inst.State == sim.StateRunning {
			if z, ok := zones[inst.Cloud]; ok && z != inst.Zone {
				t.Errorf("%s's gang is in %s and %s", inst.Cloud, z, inst.Zone)
			}
			zones[inst.Cloud] = inst.Zone
		}
	}
	for _, cloud := range []string{"aws", "azure", "gcp"} {
		if len(got[cloud]) != 1 || !strings.HasSuffix(got[cloud][0], "@"+zones[cloud]) {
			t.Errorf("%s: placement groups %v, want one in %s", cloud, got[cloud], zones[cloud])
		}
	}

	e.Push("fleets/train.cue", gangFleet(0), "the job is done")
	e.mustRun(nil)
	if got := groups(); len(got) != 0 {
		t.Errorf("placement groups left after the gangs ended: %v", got)
	}
}
