package agent

import (
	"context"

	"github.com/gpufleet/gpufleet/providers/clouds"
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
	opts := reconcile.Options{
		Catalog:     a.opts.Catalog,
		Log:         a.log.With("repo", w.name),
		Commit:      true,
		Parallelism: a.opts.Parallelism,
		Lock:        reconcile.LockOptions{Holder: a.opts.Holder, Wait: a.opts.LockWait},
		Progress: func(step reconcile.Step) {
			if step == reconcile.StepLoad {
				w.markLoaded()
			}
		},
	}
	// The providers come from the specs' gpufleet.cue, read afresh each
	// run since a push may enable a cloud; when the specs do not load, the
	// run still goes far enough to record why.
	if repo, err := schema.Load(checkout.Dir); err == nil {
		set, err := clouds.New(ctx, repo.Config, a.opts.Catalog, a.opts.Endpoints)
		if err != nil {
			return nil, err
		}
		defer set.Close()
		opts.Providers = a.metrics.Instrument(set.Providers)
	}
	return reconcile.Run(ctx, checkout, opts)
}
