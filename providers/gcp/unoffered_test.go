// SPDX-License-Identifier: Apache-2.0

package gcp

import (
	"errors"
	"os"
	"testing"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// A create of a machine type in a zone that does not sell it fails as a
// stock-out of that offer, which the planner fails over from, and not as
// an invalid request; the same type launches in a zone that sells it. The
// catalog sells a3-highgpu-8g in us-central1-b only.
func TestCreateWhereTheZoneLacksTheType(t *testing.T) {
	f, err := os.Open("../sim/testdata/zonal-catalog.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cat, err := catalog.Read(f)
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig()
	cfg.Regions = []string{"us-central1"}
	b := newBackendWith(t, cfg, sim.Config{Catalog: cat}, nil)
	ctx := testCtx(t)
	inA := planner.OfferKey{Cloud: Name, Region: "us-central1", Zone: "us-central1-a", InstanceType: "a3-highgpu-8g", Market: catalog.OnDemand}

	_, err = b.provider.Create(ctx, testRequest(inA, "zonal", 0))
	var pe *providers.Error
	if !errors.As(err, &pe) || !errors.Is(err, providers.ErrCapacity) || pe.Code != "machineTypeNotInZone" || pe.Offer != inA {
		t.Fatalf("create in us-central1-a: %v, want a capacity error of code machineTypeNotInZone on the offer", err)
	}
	_, err = b.provider.CreateBatch(ctx, providers.BatchRequest{CreateRequest: testRequest(inA, "zonal-batch", 0), Count: 2})
	if !errors.Is(err, providers.ErrCapacity) {
		t.Fatalf("batch in us-central1-a: %v, want a capacity error", err)
	}

	inB := inA
	inB.Zone = "us-central1-b"
	inst, err := b.provider.Create(ctx, testRequest(inB, "zonal", 0))
	if err != nil {
		t.Fatalf("create in us-central1-b: %v", err)
	}
	if inst.Zone != "us-central1-b" {
		t.Errorf("created in %s", inst.Zone)
	}

	// A request that is wrong whatever the zone stays invalid.
	unknown := inB
	unknown.InstanceType = "a9-nosuch-8g"
	if _, err := b.provider.Create(ctx, testRequest(unknown, "zonal", 1)); errors.Is(err, providers.ErrCapacity) {
		t.Errorf("an unknown machine type: %v, want no capacity error", err)
	}
}
