// SPDX-License-Identifier: Apache-2.0

package planner

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/gpufleet/gpufleet/schema"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// NewInput builds the input for a repository's fleets from a catalog, with
// offers in the configured regions of the enabled clouds only, each at the
// price the account pays, and the prices as old as those clouds' are.
func NewInput(repo *schema.Repo, cat *catalog.Catalog) Input {
	regions := map[string][]string{}
	enabled := repo.Config.Clouds.Enabled()
	for _, c := range enabled {
		regions[c] = repo.Config.Clouds.Regions(c)
	}
	offers := Expand(cat, regions)
	ApplyAccountPrices(offers, repo.Config.Pricing)
	return Input{
		Fleets:       repo.Fleets,
		Defaults:     repo.Config.Defaults,
		Reservations: repo.Config.Reservations,
		Offers:       offers,
		Egress:       cat.Egress,
		// As old as the prices of the clouds it may use: a catalog
		// refreshed but for a cloud the fleets do not use is fresh.
		Prices:     PriceInfo{Source: cat.Source, AsOf: cat.PricedAt(enabled...)},
		Bootstraps: Bootstraps(&repo.Config, repo.Fleets),
	}
}

// SpecRevisions digests each workload's spec, keyed "fleet/workload", for
// create tokens: a changed spec gets fresh tokens, and an unrelated commit
// leaves them alone, so a run that crashed after a create asks for the
// same node again.
func SpecRevisions(fleets []schema.Fleet) map[string]string {
	out := map[string]string{}
	for _, f := range fleets {
		for _, w := range f.Workloads {
			data, _ := json.Marshal(w)
			sum := sha256.Sum256(data)
			out[f.Name+"/"+w.Name] = hex.EncodeToString(sum[:8])
		}
	}
	return out
}
