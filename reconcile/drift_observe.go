// SPDX-License-Identifier: Apache-2.0

package reconcile

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/reconcile/status"
	"github.com/gpufleet/gpufleet/schema"
)

// maxForeign bounds the foreign instances a drift report lists per cloud:
// an account full of hand-made nodes named like gpufleet's is told as
// "more than this many", not listed in full.
const maxForeign = 1000

// DriftOptions configure ObserveDrift.
type DriftOptions struct {
	// Dir is the checkout whose status is compared; Repo its specs, loaded.
	Dir  string
	Repo *schema.Repo
	// Connect builds the providers of the clouds the specs enable;
	// Providers, when set instead, are used as they are.
	Connect   Connect
	Providers map[string]providers.Provider
	Now       func() time.Time
	Log       *slog.Logger
}

// ObserveDrift lists what every enabled cloud runs, as a run's observe
// step does, and compares it with the committed status. It changes
// nothing: no cloud, no file, no lock. A cloud that cannot be listed fails
// it, as it stops a run: half a picture would report the other half as
// missing.
func ObserveDrift(ctx context.Context, opts DriftOptions) (*status.Drift, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	dir := opts.Repo.Config.Status.Dir
	root, err := status.OpenRoot(opts.Dir, dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	recorded, err := status.ReadFleets(root, dir)
	if err != nil {
		// A status that cannot be read would report every instance of
		// its fleet as extra.
		return nil, fmt.Errorf("reading the committed status, %w", err)
	}
	state, err := status.ReadState(root, dir)
	if err != nil {
		return nil, fmt.Errorf("reading the committed status, %w", err)
	}
	ps := opts.Providers
	if ps == nil && opts.Connect != nil {
		var disconnect func() error
		if ps, disconnect, err = opts.Connect(ctx, opts.Repo.Config); err != nil {
			return nil, fmt.Errorf("connecting to the clouds, %w", err)
		}
		defer func() {
			if err := disconnect(); err != nil {
				opts.Log.Warn("closing the cloud clients", "err", err)
			}
		}()
	}
	clouds := opts.Repo.Config.Clouds.Enabled()
	for _, cloud := range clouds {
		if ps[cloud] == nil {
			return nil, fmt.Errorf("gpufleet.cue enables %s but no %s provider is configured", cloud, cloud)
		}
	}
	at := opts.Now().UTC()
	owned := make([][]planner.Instance, len(clouds))
	foreign := make([][]providers.Unowned, len(clouds))
	unchecked := make([]bool, len(clouds))
	var g errgroup.Group
	for i, cloud := range clouds {
		g.Go(func() error {
			got, err := ps[cloud].List(ctx, providers.Selector{})
			if err != nil {
				return fmt.Errorf("listing the instances in %s, %w", cloud, err)
			}
			owned[i] = got
			adopter, ok := ps[cloud].(providers.Adopter)
			if !ok {
				unchecked[i] = true
				return nil
			}
			others, err := adopter.Unowned(ctx, providers.UnownedSelector{Namespace: true, Limit: maxForeign})
			if err != nil {
				return fmt.Errorf("listing the instances in %s that gpufleet does not own, %w", cloud, err)
			}
			foreign[i] = others
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, fmt.Errorf("could not list every cloud, so no drift is reported: %w", err)
	}
	in := DriftInput{Recorded: recorded, State: state, At: at}
	truncated := false
	for i := range clouds {
		in.Observed = append(in.Observed, owned[i]...)
		if len(foreign[i]) > maxForeign {
			foreign[i], truncated = foreign[i][:maxForeign], true
		}
		in.Foreign = append(in.Foreign, foreign[i]...)
	}
	for _, f := range opts.Repo.Fleets {
		in.Fleets = append(in.Fleets, f.Name)
	}
	d := CompareDrift(in)
	d.ForeignTruncated = truncated
	for i, cloud := range clouds {
		if unchecked[i] {
			d.ForeignUnchecked = append(d.ForeignUnchecked, cloud)
		}
	}
	slices.Sort(d.ForeignUnchecked)
	return d, nil
}
