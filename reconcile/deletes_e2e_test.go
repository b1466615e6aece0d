// SPDX-License-Identifier: Apache-2.0

package reconcile

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

const threeSpotClouds = `package gpufleet

gpufleet: clouds: {
	aws: regions: ["us-east-1"]
	gcp: {project: "gpufleet-test", regions: ["us-central1"]}
	azure: {subscription: "00000000-0000-0000-0000-000000000000", resourceGroup: "gpufleet", regions: ["eastus"], launch: {adminUsername: "mlops", sshPublicKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHq3bWl2Zm9vYmFyYmF6cXV4cXV1eHF1dXpxdXV6 mlops@example.com", subnetByRegion: eastus: "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/gpufleet/providers/Microsoft.Network/virtualNetworks/gpu-eastus/subnets/nodes"}}
}
// Every delete a change asks for goes in one run.
gpufleet: defaults: disruption: budget: "100%"
`

// spotEverywhere is a fleet of spot nodes, n in each cloud.
func spotEverywhere(n int) string {
	return fmt.Sprintf(`package gpufleet

fleets: s: {
	owner: "me"
	workloads: {
		a: {gpu: {model: "T4", perNode: 1}, nodes: %[1]d, capacity: "spot", placement: clouds: ["aws"]}
		g: {gpu: {model: "L4", perNode: 1}, nodes: %[1]d, capacity: "spot", placement: clouds: ["gcp"]}
		z: {gpu: {model: "T4", perNode: 1}, nodes: %[1]d, capacity: "spot", placement: clouds: ["azure"]}
	}
}
`, n)
}

// Spot nodes that gpufleet itself deletes, still on their way out when a
// later run looks (the clouds are slow, and the run that deleted them was
// cut short), are not preemptions: no pool is blocklisted for them, and
// nothing is done to them again. A node a cloud takes back is still one,
// on GCE as the cloud records it, on Azure where the cloud cannot tell.
func TestOwnDeletesInFlightAreNotPreemptions(t *testing.T) {
	t.Parallel()
	clock := sim.NewManualClock(time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC))
	e := newEnvFrom(t, sim.Config{Seed: 9, Clock: clock}, fstest.MapFS{
		"gpufleet.cue":    {Data: []byte(threeSpotClouds)},
		"fleets/spot.cue": {Data: []byte(spotEverywhere(2))},
	})
	at := func(o *Options) { o.Now = clock.Now }
	if res, err := e.run(at); OutcomeOf(res, err) != Converged {
		t.Fatalf("first run: %s %v %v", OutcomeOf(res, err), err, res.NotConverged)
	}

	// From now on a delete takes an hour of the clouds' time, which does
	// not pass: every delete stays in flight.
	if err := e.World.SetLatency(sim.Latency{Operation: time.Hour}); err != nil {
		t.Fatal(err)
	}
	e.Push("fleets/spot.cue", spotEverywhere(1), "One node a cloud")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		// GCE's and Azure's deletes wait for their operations: the run is
		// stopped once all three clouds were asked.
		for ctx.Err() == nil && shuttingDown(e.World) < 3 {
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
	}()
	c := e.checkout()
	opts := e.options(c)
	at(&opts)
	if _, err := runWith(ctx, c, opts, nil); err == nil {
		t.Fatal("the run that was cut short succeeded")
	}
	if n := shuttingDown(e.World); n != 3 {
		t.Fatalf("%d instances shutting down, want the 3 deleted", n)
	}

	// A delete asked again would wait for ever: the run is stopped at the
	// first one, and says so.
	before := deletes(e.World)
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for ctx.Err() == nil && deletes(e.World) == before {
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
	}()
	c = e.checkout()
	opts = e.options(c)
	at(&opts)
	res, err := runWith(ctx, c, opts, nil)
	cancel()
	if len(res.Blocklist) != 0 {
		t.Errorf("the run blocklisted %v for gpufleet's own deletes", res.Blocklist)
	}
	if n := deletes(e.World) - before; n > 0 {
		t.Fatalf("the run asked for %d deletes again, of gpufleet's own deletes in flight (%v)", n, err)
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range res.Applied {
		t.Errorf("the run did %s %s again", a.Kind, a.Instance)
	}
	if got := OutcomeOf(res, err); got != Converged {
		t.Errorf("outcome %s (%v), want converged: one node runs in each cloud", got, res.NotConverged)
	}
	if _, state := e.Statuses(); len(state.Preempted) != 0 {
		t.Errorf("the state has %v preempted, want none", state.Preempted)
	}
	// EC2 says who shut an instance down; GCE and Azure do not, and their
	// deletes in flight are remembered.
	if got := deletesRemembered(t, e); strings.Join(got, ",") != "azure,gcp" {
		t.Errorf("deletes remembered in %v, want Azure's and GCP's", got)
	}

	// A preemption is still one: GCE records it, Azure's is read from its
	// eviction. Their replacements launch at once again.
	if err := e.World.SetLatency(sim.Latency{}); err != nil {
		t.Fatal(err)
	}
	var taken []string
	for _, inst := range e.World.Instances() {
		if (inst.Cloud == catalog.GCP || inst.Cloud == catalog.Azure) && e.World.StateOf(inst) == sim.StateRunning {
			if err := e.World.Preempt(inst.ID); err != nil {
				t.Fatal(err)
			}
			taken = append(taken, inst.Cloud)
		}
	}
	if len(taken) != 2 {
		t.Fatalf("preempted nodes in %v, want one in GCP and one in Azure", taken)
	}
	res, err = e.run(at)
	if err != nil {
		t.Fatal(err)
	}
	var blocked []string
	for _, b := range res.Blocklist {
		if strings.HasPrefix(b.Reason, "preempted ") {
			blocked = append(blocked, strings.SplitN(b.Offer, "/", 2)[0])
		}
	}
	if strings.Join(blocked, ",") != "azure,gcp" {
		t.Errorf("blocklisted for preemptions: %v (%v), want the Azure and the GCP pool", blocked, res.Blocklist)
	}
	// The preempted nodes were cleaned up, and are gone; what is still in
	// flight is still remembered, and a run with nothing to do commits
	// nothing.
	if got := deletesRemembered(t, e); strings.Join(got, ",") != "azure,gcp" {
		t.Errorf("deletes remembered in %v, want the first two still in flight", got)
	}
	again, err := e.run(at)
	if err != nil || len(again.Applied) != 0 || !again.Commit.IsZero() {
		t.Errorf("the run after applied %v, committed %s (%v); want nothing", again.Applied, again.Commit, err)
	}
}

// deletesRemembered are the clouds of the deletes the state at the head
// remembers, sorted.
func deletesRemembered(t *testing.T, e *env) []string {
	t.Helper()
	f, err := e.Head().File("status/gpufleet.json")
	if err != nil {
		t.Fatal(err)
	}
	text, err := f.Contents()
	if err != nil {
		t.Fatal(err)
	}
	var state struct {
		Deletes []struct{ Cloud string } `json:"deletesIssued"`
	}
	if err := json.Unmarshal([]byte(text), &state); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range state.Deletes {
		out = append(out, d.Cloud)
	}
	slices.Sort(out)
	return out
}

// deletes counts the delete calls the clouds were asked.
func deletes(w *sim.World) int {
	n := 0
	for call, count := range w.Calls() {
		if strings.HasSuffix(call, "TerminateInstances") || strings.HasSuffix(call, "instances.delete") || strings.HasSuffix(call, " delete") {
			n += count
		}
	}
	return n
}

// shuttingDown counts the instances on their way out.
func shuttingDown(w *sim.World) int {
	n := 0
	for _, inst := range w.Instances() {
		if w.StateOf(inst) == sim.StateShuttingDown {
			n++
		}
	}
	return n
}
