// SPDX-License-Identifier: Apache-2.0

package reconcile

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// gangClouds is one region per cloud, for the placement group tests.
const gangClouds = `package gpufleet

gpufleet: clouds: {
	aws: regions: ["us-east-1"]
	azure: {subscription: "00000000-0000-0000-0000-000000000000", resourceGroup: "gpufleet", regions: ["eastus"], launch: {sshPublicKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHq3bWl2Zm9vYmFyYmF6cXV4cXV1eHF1dXpxdXV6 ops@example.com", subnetByRegion: eastus: "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/gpufleet/providers/Microsoft.Network/virtualNetworks/gpu/subnets/nodes"}}
	gcp: {project: "acme-gpu-fleet", regions: ["us-central1"]}
}
gpufleet: defaults: maxDeletions: 100
`

var gangRegion = map[string]string{"aws": "us-east-1", "azure": "eastus", "gcp": "us-central1"}

// placementGroups lists each cloud's placement groups as gpufleet sees them.
func (e *env) placementGroups(t *testing.T) map[string][]providers.PlacementGroup {
	t.Helper()
	c := e.checkout()
	repo, err := schema.Load(c.Dir)
	if err != nil {
		t.Fatal(err)
	}
	ps, closer, err := e.options(c).Connect(context.Background(), repo.Config)
	if err != nil {
		t.Fatal(err)
	}
	defer closer()
	out := map[string][]providers.PlacementGroup{}
	for cloud, p := range ps {
		list, err := p.(providers.PlacementGrouper).PlacementGroups(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		out[cloud] = list
	}
	return out
}

// liveGangNodes are the pending and running instances of the emulator.
func liveGangNodes(e *env) []*sim.Instance {
	var out []*sim.Instance
	for _, inst := range e.World.Instances() {
		if inst.State == sim.StatePending || inst.State == sim.StateRunning {
			out = append(out, inst)
		}
	}
	return out
}

// inGroup reports whether an emulated instance was launched into the named
// group: EC2 records its name, GCE the resource policy's URL, ARM the
// group's resource id.
func inGroup(inst *sim.Instance, name string) bool {
	for _, v := range inst.Properties {
		for _, f := range strings.FieldsFunc(strings.ToLower(v), func(r rune) bool { return r == '/' || r == ' ' || r == ',' }) {
			if f == name {
				return true
			}
		}
	}
	return false
}

// Two gangs whose fleet and workload names join alike ("p-aws"/"g" and
// "p"/"aws-g"), in the same zone of each cloud, get a placement group each,
// and each gang's nodes are in its own.
func TestGangsWhoseNamesJoinAlikeGetGroupsOfTheirOwn(t *testing.T) {
	t.Parallel()
	var fleets strings.Builder
	fleets.WriteString("package gpufleet\n\n")
	gang := func(cloud string) string {
		return fmt.Sprintf(`{gpu: {model: "H100", perNode: 8}, nodes: 2, placement: {clouds: [%q], gang: "zone"}}`, cloud)
	}
	var inner []string
	for _, cloud := range groupClouds {
		fmt.Fprintf(&fleets, "fleets: \"p-%s\": {owner: \"research\", workloads: g: %s}\n", cloud, gang(cloud))
		inner = append(inner, fmt.Sprintf("\"%s-g\": %s", cloud, gang(cloud)))
	}
	fmt.Fprintf(&fleets, "fleets: p: {owner: \"research\", workloads: {\n\t%s\n}}\n", strings.Join(inner, "\n\t"))
	e := newEnvFrom(t, sim.Config{Seed: 4}, fstest.MapFS{
		"gpufleet.cue":     {Data: []byte(gangClouds)},
		"fleets/gangs.cue": {Data: []byte(fleets.String())},
	})
	res := e.mustRun(nil)
	if OutcomeOf(res, nil) != Converged {
		t.Fatalf("the run did not converge: %v", res.NotConverged)
	}
	groups := e.placementGroups(t)
	nodes := liveGangNodes(e)
	for _, cloud := range groupClouds {
		gangs := [][2]string{{"p-" + cloud, "g"}, {"p", cloud + "-g"}}
		var zones []string
		for _, inst := range nodes {
			if inst.Cloud == cloud && !slices.Contains(zones, inst.Zone) {
				zones = append(zones, inst.Zone)
			}
		}
		if len(zones) != 1 {
			t.Errorf("%s: the two gangs are in zones %v; the test wants them in one", cloud, zones)
		}
		if len(groups[cloud]) != 2 || groups[cloud][0].Name == groups[cloud][1].Name {
			t.Errorf("%s: placement groups %+v, want one for each gang", cloud, groups[cloud])
			continue
		}
		for _, g := range groups[cloud] {
			i := slices.IndexFunc(gangs, func(fw [2]string) bool { return fw == [2]string{g.Fleet, g.Workload} })
			if i < 0 {
				t.Errorf("%s: group %s is of %s/%s, not a gang of the specs", cloud, g.Name, g.Fleet, g.Workload)
				continue
			}
			in := 0
			for _, inst := range nodes {
				fleet, workload, _, _ := providers.Owned(inst.Tags)
				if inst.Cloud != cloud || !inGroup(inst, strings.ToLower(g.Name)) {
					continue
				}
				in++
				if fleet != g.Fleet || workload != g.Workload {
					t.Errorf("%s: %s/%s's node %s is in %s/%s's group %s", cloud, fleet, workload, inst.ID, g.Fleet, g.Workload, g.Name)
				}
			}
			if in != 2 {
				t.Errorf("%s: group %s of %s/%s holds %d nodes, want its gang's 2", cloud, g.Name, g.Fleet, g.Workload, in)
			}
		}
	}
}

// A group made under the name earlier versions gave (gf-<fleet>-<workload>-
// <zone>) stays its gang's: a run launches the gang's nodes into it rather
// than into a second group, removes only the ones no node is in, and, once
// the gang is gone, removes it too. None is left behind.
func TestAGroupOfAnOlderNameStaysItsGangsUntilTheGangEnds(t *testing.T) {
	t.Parallel()
	e := newEnvFrom(t, sim.Config{Seed: 4}, fstest.MapFS{
		"gpufleet.cue":     {Data: []byte(gangClouds)},
		"fleets/train.cue": {Data: []byte(gangFleet(0))},
	})
	e.mustRun(nil)
	// An earlier version made the gangs' groups, in every zone they might
	// go to.
	c := e.checkout()
	repo, err := schema.Load(c.Dir)
	if err != nil {
		t.Fatal(err)
	}
	ps, closer, err := e.options(c).Connect(context.Background(), repo.Config)
	if err != nil {
		t.Fatal(err)
	}
	defer closer()
	legacy := func(workload, zone string) string { return "gf-train-" + workload + "-" + strings.ToLower(zone) }
	made := 0
	for _, cloud := range groupClouds {
		region, _ := catalog.Default().Region(cloud, gangRegion[cloud])
		for _, zone := range region.Zones {
			g := providers.PlacementGroup{Name: legacy("on"+cloud, zone), Region: region.Name, Zone: zone, Fleet: "train", Workload: "on" + cloud}
			if err := ps[cloud].(providers.PlacementGrouper).EnsurePlacementGroup(context.Background(), g); err != nil {
				t.Fatalf("%s: making %s as an earlier version did: %v", cloud, g.Name, err)
			}
			made++
		}
	}
	if made < 6 {
		t.Fatalf("only %d groups made; the test wants several zones a cloud", made)
	}

	e.Push("fleets/train.cue", gangFleet(3), "three nodes a gang")
	res := e.mustRun(nil)
	if OutcomeOf(res, nil) != Converged {
		t.Fatalf("the run did not converge: %v", res.NotConverged)
	}
	groups := e.placementGroups(t)
	for _, cloud := range groupClouds {
		var zone string
		for _, inst := range liveGangNodes(e) {
			if inst.Cloud == cloud {
				zone = inst.Zone
			}
		}
		want := legacy("on"+cloud, zone)
		if len(groups[cloud]) != 1 || groups[cloud][0].Name != want {
			t.Errorf("%s: placement groups %+v, want only the older one of the gang's zone, %s", cloud, groups[cloud], want)
		}
		for _, inst := range liveGangNodes(e) {
			if inst.Cloud == cloud && !inGroup(inst, want) {
				t.Errorf("%s: node %s is not in the gang's group %s: %v", cloud, inst.ID, want, inst.Properties)
			}
		}
	}

	e.Push("fleets/train.cue", gangFleet(0), "the job is done")
	e.mustRun(nil)
	if got := e.placementGroups(t); len(got["aws"])+len(got["azure"])+len(got["gcp"]) != 0 {
		t.Errorf("placement groups left after the gangs ended: %+v", got)
	}
}

// groupClouds are the clouds gpufleet keeps placement groups in: Lambda
// Cloud has none.
var groupClouds = catalog.Hyperscalers
