// SPDX-License-Identifier: Apache-2.0

package planner

import (
	"strings"
	"testing"

	"github.com/gpufleet/gpufleet/schema"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// A plan that places nodes on a derived price says so once, naming the
// places and pointing to catalog refresh; one that uses only quotes does
// not, even when derived offers were among those it could choose.
func TestAPlanOnDerivedPricesSaysSoOnce(t *testing.T) {
	quoted := offer("azure", "eastus", "eastus-1", "Standard_NC4as_T4_v3", catalog.OnDemand, "T4", 1, 0.526, Unlimited)
	derived := offer("azure", "japaneast", "japaneast-1", "Standard_NC4as_T4_v3", catalog.OnDemand, "T4", 1, 0.6312, Unlimited)
	derived.Derived = true
	cheaperDerived := derived
	cheaperDerived.OfferKey.Zone, cheaperDerived.PriceMicros = "japaneast-2", catalog.Micros(0.40)
	for _, tt := range []struct {
		name   string
		offers []Offer
		want   string
	}{
		{"quotes only", []Offer{quoted, derived}, ""},
		{"derived chosen", []Offer{quoted, cheaperDerived}, "2 nodes are priced with derived prices, estimates for places no price source quotes (azure japaneast): gpufleet catalog refresh"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := workloadSpec("w", "T4", 1, 2)
			w.Spread.MaxPerCloud, w.Spread.MaxPerRegion = 1, 1
			in := Input{
				Fleets:   []schema.Fleet{{Name: "f", Owner: "o", Workloads: []schema.Workload{w}}},
				Defaults: schema.Defaults{MigrationThreshold: 0.1, SpotRiskPremium: 0.15},
				Offers:   tt.offers,
			}
			plan := solve(t, in)
			var said []string
			for _, warn := range plan.Warnings {
				if strings.Contains(warn, "derived") {
					said = append(said, warn)
				}
			}
			switch {
			case tt.want == "" && len(said) > 0:
				t.Errorf("warnings %q, want none about derived prices", said)
			case tt.want != "" && (len(said) != 1 || !strings.HasPrefix(said[0], tt.want)):
				t.Errorf("warnings %q, want one starting %q", said, tt.want)
			}
		})
	}
}
