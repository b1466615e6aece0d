// SPDX-License-Identifier: Apache-2.0

package aws

import (
	"context"
	"errors"
	"testing"

	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

func TestListCoversEveryRegionAndHonoursTheSelector(t *testing.T) {
	b := emulator(t, catalog.Default())
	p := b.provider(t, catalog.Default())
	ctx := context.Background()
	west := testOffer
	west.Region, west.Zone = "us-west-2", "us-west-2a"
	east, err := p.Create(ctx, providers.CreateRequest{Token: "gf1-east", Offer: testOffer, Fleet: "one", Workload: "w"})
	if err != nil {
		t.Fatal(err)
	}
	westInst, err := p.Create(ctx, providers.CreateRequest{Token: "gf1-west", Offer: west, Fleet: "two", Workload: "w"})
	if err != nil {
		t.Fatal(err)
	}

	all, err := p.List(ctx, providers.Selector{})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 || all[0].ID != east.ID || all[1].ID != westInst.ID {
		t.Fatalf("listed %+v, want the us-east-1 and the us-west-2 instance in region order", all)
	}
	if all[1].OfferKey != west || all[1].Fleet != "two" || all[1].Token != "gf1-west" {
		t.Errorf("listed %+v", all[1])
	}
	two, err := p.List(ctx, providers.Selector{Fleet: "two"})
	if err != nil {
		t.Fatal(err)
	}
	if len(two) != 1 || two[0].ID != westInst.ID {
		t.Errorf("fleet two lists %+v", two)
	}
}

func TestDeleteRefusals(t *testing.T) {
	b := emulator(t, catalog.Default())
	p := b.provider(t, catalog.Default())
	ctx := context.Background()
	inst, err := p.Create(ctx, providers.CreateRequest{Token: "gf1-mine", Offer: testOffer, Fleet: "mine", Workload: "w"})
	if err != nil {
		t.Fatal(err)
	}

	other := inst
	other.Fleet = "theirs"
	if err := p.Delete(ctx, other); !errors.Is(err, providers.ErrInvalid) {
		t.Errorf("deleting with the wrong fleet: %v, want an invalid-request error", err)
	}
	elsewhere := inst
	elsewhere.Region = "eu-west-1"
	if err := p.Delete(ctx, elsewhere); !errors.Is(err, providers.ErrInvalid) {
		t.Errorf("deleting in an unconfigured region: %v, want an invalid-request error", err)
	}
	if alive, _ := b.alive(ctx, inst.Region, inst.ID); !alive {
		t.Fatal("a refused delete ended the instance")
	}

	unknown := inst
	unknown.ID = "i-0123456789abcdef0"
	if err := p.Delete(ctx, unknown); err != nil {
		t.Errorf("deleting an instance EC2 does not know: %v, want success", err)
	}
}
