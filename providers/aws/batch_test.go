// SPDX-License-Identifier: Apache-2.0

package aws

import (
	"context"
	"errors"
	"testing"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

func batch(offer planner.OfferKey, first, count int) providers.BatchRequest {
	req := request(offer, planner.Token("f", "w", offer, "rev", first))
	return providers.BatchRequest{CreateRequest: req, Count: count}
}

// A batch is one RunInstances call; every node it launched lists with its
// own token, and a repeat of the batch launches nothing more.
func TestCreateBatchIsOneCallAndEachNodeKeepsItsToken(t *testing.T) {
	b := emulator(t, catalog.Default())
	p := b.provider(t, catalog.Default())
	ctx := context.Background()
	req := batch(testOffer, 3, 20)
	before := b.world.Calls()["aws RunInstances"]
	insts, err := p.CreateBatch(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if n := b.world.Calls()["aws RunInstances"] - before; n != 1 {
		t.Errorf("a batch of 20 took %d RunInstances calls, want 1", n)
	}
	want := req.Tokens()
	if len(insts) != 20 {
		t.Fatalf("launched %d, want 20", len(insts))
	}
	for i, inst := range insts {
		if inst.Token != want[i] || inst.OfferKey != testOffer {
			t.Errorf("node %d: token %s on %s, want %s on %s", i, inst.Token, inst.OfferKey, want[i], testOffer)
		}
	}
	listed, err := p.List(ctx, providers.Selector{})
	if err != nil {
		t.Fatal(err)
	}
	tokens := map[string]string{}
	for _, inst := range listed {
		tokens[inst.ID] = inst.Token
	}
	for _, inst := range insts {
		if tokens[inst.ID] != inst.Token {
			t.Errorf("%s lists with token %q, created with %q", inst.ID, tokens[inst.ID], inst.Token)
		}
	}

	again, err := p.CreateBatch(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(again) != 20 || again[7].ID != insts[7].ID {
		t.Errorf("the repeat returned %d instances, not the first batch", len(again))
	}
	if n := len(b.world.List(catalog.AWS, nil)); n != 20 {
		t.Errorf("the world holds %d instances after a repeated batch, want 20", n)
	}
	// The same first token with another count is refused, never a second
	// set of nodes.
	if _, err := p.CreateBatch(ctx, batch(testOffer, 3, 25)); err == nil {
		t.Error("a repeat of the token with another count launched")
	}
	if n := len(b.world.List(catalog.AWS, nil)); n != 20 {
		t.Errorf("the world holds %d instances, want 20", n)
	}
}

// A zone with room for fewer than the batch launches what fits, and says
// the rest did not: a capacity error beside the nodes.
func TestCreateBatchLaunchesWhatFits(t *testing.T) {
	b := emulator(t, catalog.Default())
	p := b.provider(t, catalog.Default())
	b.world.SetCapacity(catalog.AWS, testOffer.Zone, testOffer.InstanceType, testOffer.Market, 7)
	insts, err := p.CreateBatch(context.Background(), batch(testOffer, 0, 10))
	if len(insts) != 7 || !errors.Is(err, providers.ErrCapacity) {
		t.Fatalf("got %d instances and %v, want 7 and a capacity error", len(insts), err)
	}
	insts, err = p.CreateBatch(context.Background(), batch(testOffer, 7, 3))
	if len(insts) != 0 || !errors.Is(err, providers.ErrCapacity) {
		t.Fatalf("a full zone gave %d instances and %v, want none and a capacity error", len(insts), err)
	}
}

func TestCreateBatchRefusesWhatNamesNoBatch(t *testing.T) {
	b := emulator(t, catalog.Default())
	p := b.provider(t, catalog.Default())
	for _, req := range []providers.BatchRequest{
		{CreateRequest: request(testOffer, "gf1-0123456789abcdef0123456789abcdef"), Count: 2},
		batch(testOffer, 0, 0),
		batch(testOffer, 0, providers.MaxBatch+1),
	} {
		if _, err := p.CreateBatch(context.Background(), req); !errors.Is(err, providers.ErrInvalid) {
			t.Errorf("a batch of %d from %s: %v, want invalid", req.Count, req.Token, err)
		}
	}
	if n := len(b.world.List(catalog.AWS, nil)); n != 0 {
		t.Errorf("%d instances launched", n)
	}
}
