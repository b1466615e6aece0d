// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"context"

	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/reconcile"
	"github.com/gpufleet/gpufleet/schema"
)

// reconcileRepo is one run, set up as `gpufleet reconcile` sets it up, with
// the providers counted and the worker told when the specs have loaded.
func (a *Agent) reconcileRepo(ctx context.Context, w *worker) (*reconcile.Result, error) {
	checkout, err := reconcile.Open(ctx, reconcile.SourceOptions{URL: w.repo.URL, Branch: w.repo.Branch, WorkDir: w.workDir})
	if err != nil {
		return nil, err
	}
	w.setBranch(checkout.Branch.Short())
	// One catalog for the whole run, whatever a refresh does meanwhile.
	cat := a.Catalog()
	connect := reconcile.ConnectTo(cat, a.opts.Endpoints)
	opts := reconcile.Options{
		// The providers count their calls for the metrics.
		Connect: func(ctx context.Context, cfg schema.Config) (map[string]providers.Provider, func() error, error) {
			ps, release, err := connect(ctx, cfg)
			return a.metrics.Instrument(ps), release, err
		},
		Catalog:     cat,
		Log:         a.log.With("repo", w.name),
		Commit:      true,
		Notifier:    a.notifier,
		Secrets:     a.opts.Secrets,
		Parallelism: a.opts.Parallelism,
		Lock:        reconcile.LockOptions{Holder: a.opts.Holder, Wait: a.opts.LockWait, TTL: a.opts.LockTTL},
		Progress: func(step reconcile.Step) {
			if step == reconcile.StepLoad {
				w.markLoaded()
			}
		},
	}
	return reconcile.Run(ctx, checkout, opts)
}
