// SPDX-License-Identifier: Apache-2.0

package aws

import (
	"context"
	"testing"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers/conformance"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

var (
	testOffer = planner.OfferKey{Cloud: catalog.AWS, Region: "us-east-1", Zone: "us-east-1a", InstanceType: "g4dn.xlarge", Market: catalog.OnDemand}
	testSpot  = planner.OfferKey{Cloud: catalog.AWS, Region: "us-east-1", Zone: "us-east-1b", InstanceType: "g4dn.xlarge", Market: catalog.Spot}
)

// seedOffer is apart from testOffer, whose capacity the suite sets: a
// type of the region in a zone the catalog sells it in, other than the
// test offers' zones.
func seedOffer(t *testing.T) planner.OfferKey {
	t.Helper()
	offer := planner.OfferKey{Cloud: catalog.AWS, Region: testOffer.Region, InstanceType: "g6.2xlarge", Market: catalog.OnDemand}
	for _, o := range catalog.Default().Offers {
		if o.Cloud == offer.Cloud && o.Region == offer.Region && o.InstanceType == offer.InstanceType && o.Market == offer.Market &&
			o.Zone != testOffer.Zone && o.Zone != testSpot.Zone {
			offer.Zone = o.Zone
			return offer
		}
	}
	t.Fatalf("the catalog sells no %s %s in %s outside %s and %s", offer.InstanceType, offer.Market, offer.Region, testOffer.Zone, testSpot.Zone)
	return offer
}

func harness(t *testing.T, b backend) conformance.Harness {
	cat := catalog.Default()
	seed := seedOffer(t)
	return conformance.Harness{
		Provider: b.provider(t, cat),
		Offer:    testOffer,
		Spot:     testSpot,
		World:    b.world,
		Seed: func(ctx context.Context, fleet string, n int) error {
			return b.seed(ctx, seed, fleet, n)
		},
		Foreign: func(ctx context.Context) (string, error) { return b.foreign(ctx, testOffer) },
		Alive: func(ctx context.Context, id string) (bool, error) {
			return b.alive(ctx, testOffer.Region, id)
		},
		CreateCalls: []string{"aws RunInstances"},
		DeleteCalls: []string{"aws TerminateInstances"},
	}
}

func TestConformanceEmulator(t *testing.T) {
	conformance.Run(t, harness(t, emulator(t, catalog.Default())))
}

func TestConformanceMoto(t *testing.T) {
	h := harness(t, moto(t))
	h.Gaps = motoGaps("repeated create returns the same instance")
	conformance.Run(t, h)
}
