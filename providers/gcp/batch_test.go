// SPDX-License-Identifier: Apache-2.0

package gcp

import (
	"errors"
	"testing"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

func batchRequest(offer planner.OfferKey, first, count int) providers.BatchRequest {
	return providers.BatchRequest{CreateRequest: testRequest(offer, "bulk", first), Count: count}
}

// A batch is one bulkInsert; every node is named from its own token, lists
// with it, and can be deleted; a repeat makes nothing more.
func TestCreateBatchIsOneBulkInsert(t *testing.T) {
	b := newBackend(t, sim.Config{}, nil)
	ctx := testCtx(t)
	req := batchRequest(spot, 4, 12)
	insts, err := b.provider.CreateBatch(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if n := b.calls("instances.bulkInsert"); n != 1 {
		t.Errorf("%d bulkInsert calls, want 1", n)
	}
	if n := b.calls("instances.insert"); n != 0 {
		t.Errorf("%d insert calls, want none", n)
	}
	want := req.Tokens()
	if len(insts) != len(want) {
		t.Fatalf("made %d, want %d", len(insts), len(want))
	}
	for i, inst := range insts {
		if inst.Token != want[i] || inst.ID != providers.InstanceName("bulk", "w", want[i]) || inst.OfferKey != spot {
			t.Errorf("node %d: %+v, want token %s", i, inst, want[i])
		}
	}
	listed, err := b.provider.List(ctx, providers.Selector{Fleet: "bulk"})
	if err != nil {
		t.Fatal(err)
	}
	if len(listed) != 12 {
		t.Fatalf("listed %d, want 12", len(listed))
	}
	for _, inst := range listed {
		if providers.InstanceName("bulk", "w", inst.Token) != inst.ID {
			t.Errorf("%s lists with token %s", inst.ID, inst.Token)
		}
	}

	again, err := b.provider.CreateBatch(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(again) != 12 || len(b.world.List(Name, nil)) != 12 {
		t.Errorf("the repeat returned %d and the world holds %d, want 12 and 12", len(again), len(b.world.List(Name, nil)))
	}
	// A batch that shares nodes with one made is refused for the names,
	// never makes them twice.
	if _, err := b.provider.CreateBatch(ctx, batchRequest(spot, 10, 10)); err == nil {
		t.Error("an overlapping batch succeeded")
	}
	if n := len(b.world.List(Name, nil)); n != 12 {
		t.Errorf("the world holds %d, want 12", n)
	}
	// A node of a batch is deleted as its own.
	if err := b.provider.Delete(ctx, listed[3]); err != nil {
		t.Fatal(err)
	}
}

// A zone with room for fewer makes what fits and says so; a full one makes
// none, with the stock-out.
func TestCreateBatchMakesWhatFits(t *testing.T) {
	b := newBackend(t, sim.Config{}, nil)
	ctx := testCtx(t)
	b.world.SetCapacity(Name, testZone, testType, catalog.OnDemand, 5)
	insts, err := b.provider.CreateBatch(ctx, batchRequest(onDemand, 0, 8))
	if len(insts) != 5 || !errors.Is(err, providers.ErrCapacity) {
		t.Fatalf("got %d and %v, want 5 and a capacity error", len(insts), err)
	}
	insts, err = b.provider.CreateBatch(ctx, batchRequest(onDemand, 8, 3))
	var pe *providers.Error
	if len(insts) != 0 || !errors.Is(err, providers.ErrCapacity) || !errors.As(err, &pe) || pe.Offer != onDemand {
		t.Fatalf("a full zone gave %d and %v, want none and a capacity error for the offer", len(insts), err)
	}
}

// A replayed batch whose nodes have since ended says the token is spent.
func TestCreateBatchOfEndedNodesIsTokenSpent(t *testing.T) {
	b := newBackend(t, sim.Config{}, nil)
	ctx := testCtx(t)
	req := batchRequest(onDemand, 0, 3)
	insts, err := b.provider.CreateBatch(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	for _, inst := range insts {
		if err := b.provider.Delete(ctx, inst); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.provider.CreateBatch(ctx, req); !errors.Is(err, providers.ErrTokenSpent) {
		t.Errorf("got %v, want the token spent", err)
	}
	if n := len(b.world.List(Name, nil)); n != 0 {
		t.Errorf("%d instances after the replay, want none", n)
	}
}
