// SPDX-License-Identifier: Apache-2.0

package reconcile

import (
	"context"

	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/providers/clouds"
	"github.com/gpufleet/gpufleet/schema"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// Connect builds a provider for each cloud a repository's gpufleet.cue
// enables, and a func that releases them. A run calls it once it has
// loaded the specs, which it reads once: a push may enable a cloud between
// two runs.
type Connect func(ctx context.Context, cfg schema.Config) (map[string]providers.Provider, func() error, error)

// ConnectTo connects to the clouds at ep: the real ones where an endpoint
// is empty, an emulator where it names one. The providers sell what cat
// lists at its prices, refined by each cloud's live signals.
func ConnectTo(cat *catalog.Catalog, ep clouds.Endpoints) Connect {
	return func(ctx context.Context, cfg schema.Config) (map[string]providers.Provider, func() error, error) {
		set, err := clouds.New(ctx, cfg, cat, ep)
		if err != nil {
			return nil, nil, err
		}
		return set.Providers, set.Close, nil
	}
}
