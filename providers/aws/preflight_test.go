// SPDX-License-Identifier: Apache-2.0

package aws

import (
	"context"
	"errors"
	"testing"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/schema"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// A preflight is a dry run of the create's RunInstances: nothing is
// launched, and what EC2 would refuse comes back as the error the create
// would meet.
func TestPreflight(t *testing.T) {
	b := emulator(t, catalog.Default())
	ctx := context.Background()
	check := func(p *Provider, offer planner.OfferKey) (providers.Kind, string) {
		t.Helper()
		err := p.Preflight(ctx, offer)
		var e *providers.Error
		if err != nil && !errors.As(err, &e) {
			t.Fatalf("preflight of %s: %v, not a classified error", offer, err)
		}
		if e == nil {
			return "", ""
		}
		return e.Kind, e.Code
	}
	// launchProvider runs as instance profile gpu-node, which it gives
	// the account.
	p := launchProvider(t, b, nil)
	if kind, code := check(p, testOffer); kind != "" {
		t.Errorf("a launch EC2 would take: %s %s", kind, code)
	}
	if n := len(b.world.List(catalog.AWS, nil)); n != 0 {
		t.Fatalf("a preflight launched %d instances", n)
	}
	noProfile := launchProvider(t, b, func(cfg *schema.AWS) { cfg.Launch.InstanceProfile = "missing-node" })
	if kind, code := check(noProfile, testOffer); kind != providers.KindInvalid || code != "InvalidParameterValue" {
		t.Errorf("a profile the account lacks: %s %s, want invalid InvalidParameterValue", kind, code)
	}
	// A zone that does not sell the type is the stock-out a create meets.
	elsewhere := testOffer
	elsewhere.InstanceType, elsewhere.Zone = "p5en.48xlarge", "us-east-1c"
	if kind, code := check(p, elsewhere); kind != providers.KindCapacity || code != "Unsupported" {
		t.Errorf("a type the zone does not offer: %s %s, want capacity Unsupported", kind, code)
	}
	if n := b.world.Calls()["aws RunInstances"]; n != 3 {
		t.Errorf("%d RunInstances calls for three preflights, want one each", n)
	}
	account := b.world.Account()
	account.Denied = []string{"aws:RunInstances"}
	if err := b.world.SetAccount(account); err != nil {
		t.Fatal(err)
	}
	if kind, code := check(p, testOffer); kind != providers.KindAuth || code != "UnauthorizedOperation" {
		t.Errorf("a role that may not launch: %s %s, want auth UnauthorizedOperation", kind, code)
	}
}
