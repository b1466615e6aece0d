// SPDX-License-Identifier: Apache-2.0

package reconcile_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/providers/fake"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// What a cloud says of its quotas and zones reaches the plan: a full quota
// sends nodes elsewhere, a zone that does not offer a type gets none, and
// what a cloud could not say is a warning of the plan, not a failure.
func TestQuotasAndOfferingsSteerThePlan(t *testing.T) {
	const fleet = `package gpufleet

fleets: ml: {
	owner: "ml-team"
	workloads: infer: {gpu: {model: "L4", perNode: 1}, nodes: 3}
}
`
	e := newFakeEnv(t, fleet)
	// One L4 GPU of quota left in us-central1, where L4 is cheapest; its
	// zone a does not offer the type at all.
	e.gcp.SetCapacity(providers.Capacity{
		Quotas: []planner.Quota{
			{Cloud: catalog.GCP, Region: "us-central1", Name: "NVIDIA_L4_GPUS", Unit: catalog.GPUs, Limit: 8, Used: 7},
		},
		Offerings: []providers.ZoneOffering{{Zone: "us-central1-a", Types: []string{"a2-highgpu-1g"}}},
		Warnings:  []string{"quotas in europe-west4 not read: the credential lacks permission compute.regions.get"},
	})
	res, err := e.run(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var central, europe int
	for _, c := range e.gcp.CallsTo(fake.MethodCreate) {
		if c.Offer.Zone == "us-central1-a" {
			t.Errorf("created on %s, which does not offer the type", c.Offer)
		}
		switch c.Offer.Region {
		case "us-central1":
			central++
		case "europe-west4":
			europe++
		}
	}
	if central != 1 || europe != 2 {
		t.Errorf("created %d in us-central1 and %d in europe-west4, want 1 and 2: %v", central, europe, e.mutations())
	}
	if !slices.ContainsFunc(res.Report.Plan.Warnings, func(w string) bool {
		return strings.Contains(w, "gcp: quotas in europe-west4 not read") && strings.Contains(w, "compute.regions.get")
	}) {
		t.Errorf("warnings %q lack the cloud's", res.Report.Plan.Warnings)
	}
	if n := e.gcp.Count(fake.MethodCapacity); n == 0 {
		t.Error("the run never asked for capacity")
	}
}

// A stock-out after some nodes launched caps the offer at what it held, for
// the blocklist period, rather than blocking it: the nodes there stay, and
// the next run, too, plans no more there.
func TestAStockOutCapsTheOfferAtWhatItHeld(t *testing.T) {
	const fleet = `package gpufleet

fleets: ml: {
	owner: "ml-team"
	workloads: infer: {gpu: {model: "L4", perNode: 1}, nodes: 3}
}
`
	e := newFakeEnv(t, fleet)
	// us-central1-a is the cheapest of the zones, by a micro-dollar, so
	// that every node is planned there and not on an equal zone a tie
	// picks.
	offers, err := e.gcp.Offers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for i := range offers {
		if offers[i].OfferKey == gcpCentralA {
			offers[i].PriceMicros--
		}
	}
	e.gcp.SetOffers(offers)
	e.gcp.ResetCalls()
	e.gcp.NextCreateErr(nil, nil, fake.Err(providers.KindCapacity))
	res, err := e.run(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var entry *struct {
		offer    string
		capacity int
	}
	for _, b := range res.Blocklist {
		if b.Offer == gcpCentralA.String() {
			entry = &struct {
				offer    string
				capacity int
			}{b.Offer, b.Capacity}
		}
	}
	if entry == nil || entry.capacity != 2 {
		t.Fatalf("blocklist %+v, want %s capped at the 2 nodes it held", res.Blocklist, gcpCentralA)
	}
	onA := func() int {
		n := 0
		for _, inst := range e.gcp.Instances() {
			if inst.OfferKey == gcpCentralA {
				n++
			}
		}
		return n
	}
	if n := onA(); n != 2 {
		t.Errorf("%d nodes on %s, want the 2 that launched", n, gcpCentralA)
	}
	e.gcp.ResetCalls()
	res, err = e.run(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range e.gcp.CallsTo(fake.MethodCreate) {
		if c.Offer == gcpCentralA {
			t.Errorf("the next run created on %s again: %v", gcpCentralA, e.mutations())
		}
	}
	if n := onA(); n != 2 {
		t.Errorf("after the next run %d nodes on %s, want 2", n, gcpCentralA)
	}
	// One of them goes: the offer had room for two, so a third run may put
	// one back there, where a blocked offer would take none.
	for _, inst := range e.gcp.Instances() {
		if inst.OfferKey == gcpCentralA {
			e.gcp.Remove(inst.ID)
			break
		}
	}
	e.gcp.ResetCalls()
	if _, err := e.run(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if n := onA(); n != 2 {
		t.Errorf("after one left, %d nodes on %s, want it refilled to the 2 it held: %v", n, gcpCentralA, e.mutations())
	}
}
