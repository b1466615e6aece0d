package reconcile

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/reconcile/status"
)

// apply carries out the plan's actions. A create that finds its offer out of
// capacity (or its region out of quota) blocklists it, and once the round
// is over the rest is planned again and applied, on another zone, region or
// cloud if that is now cheapest, for a bounded number of rounds.
func (r *run) apply(ctx context.Context) error {
	if r.opts.DryRun {
		return nil
	}
	for round := 1; round <= r.opts.Rounds; round++ {
		actions := r.applicable(r.report.Changes.Actions)
		if len(actions) == 0 {
			break
		}
		r.result.Rounds = round
		failedOver := r.applyRound(ctx, actions)
		// Plan again on what now runs: the report then shows what is left.
		if err := r.replan(); err != nil {
			return err
		}
		if !failedOver || ctx.Err() != nil {
			break
		}
		r.log.Info("re-planning after capacity errors", "round", round+1)
	}
	if len(r.result.Applied) > 0 && ctx.Err() == nil {
		// Look again, so the status says what the clouds say now rather
		// than what the calls returned a moment ago (pending, mostly).
		if err := r.reobserve(ctx); err != nil {
			r.log.Warn("could not observe again after applying; the status shows what the calls returned", "err", err)
		} else if err := r.replan(); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// reobserve lists every enabled cloud again.
func (r *run) reobserve(ctx context.Context) error {
	var observed []planner.Instance
	for _, cloud := range r.repo.Config.Clouds.Enabled() {
		got, err := r.opts.Providers[cloud].List(ctx, providers.Selector{})
		if err != nil {
			return fmt.Errorf("%s: %w", cloud, err)
		}
		observed = append(observed, got...)
	}
	slices.SortStableFunc(observed, planner.CompareInstances)
	seen := map[string]bool{}
	for _, id := range r.state.Preempted {
		seen[id] = true
	}
	// A preemption this run cleaned up counts as dealt with too.
	for _, a := range r.result.Applied {
		if a.Kind == planner.Delete && a.Error == "" {
			seen[a.Instance] = true
		}
	}
	observed = slices.DeleteFunc(observed, func(i planner.Instance) bool { return i.State == planner.StatePreempted && seen[i.ID] })
	r.mu.Lock()
	r.observed = observed
	r.mu.Unlock()
	return nil
}

// applyRound runs one round of creates, then deletes, and reports whether a
// capacity or quota error asks for another round.
func (r *run) applyRound(ctx context.Context, actions []planner.Action) (failedOver bool) {
	var creates, deletes []planner.Action
	for _, a := range actions {
		if a.Kind == planner.Create {
			creates = append(creates, a)
		} else {
			deletes = append(deletes, a)
		}
	}
	labels := map[string]map[string]string{}
	for _, f := range r.repo.Fleets {
		for _, w := range f.Workloads {
			labels[f.Name+"/"+w.Name] = w.Labels
		}
	}

	incomplete := map[string]bool{} // workloads with a failed create
	// A pool takes a few creates at a time, and none more once one found it
	// out of capacity: the creates queued behind would only fail too. Its
	// nodes are planned again elsewhere next round.
	pools := map[planner.OfferKey]chan struct{}{}
	dry := map[planner.OfferKey]bool{}
	for _, a := range creates {
		if pools[a.Offer] == nil {
			pools[a.Offer] = make(chan struct{}, perPool)
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(r.opts.Parallelism)
	for _, a := range interleave(creates) {
		g.Go(func() error {
			pool := pools[a.Offer]
			select {
			case pool <- struct{}{}:
				defer func() { <-pool }()
			case <-gctx.Done():
			}
			// A cancelled run asks the clouds for nothing more; what it
			// asked for already is adopted by the next run by its token.
			if gctx.Err() != nil {
				return nil
			}
			r.mu.Lock()
			skip := dry[a.Offer]
			if skip {
				incomplete[a.Fleet+"/"+a.Workload] = true
				failedOver = true
			}
			r.mu.Unlock()
			if skip {
				return nil
			}
			req := providers.CreateRequest{Token: a.Token, Offer: a.Offer, Fleet: a.Fleet, Workload: a.Workload, Labels: labels[a.Fleet+"/"+a.Workload]}
			inst, err := r.opts.Providers[a.Offer.Cloud].Create(gctx, req)
			res := status.ActionResult{Fleet: a.Fleet, Kind: planner.Create, Workload: a.Workload, Offer: a.Offer.String(), Instance: inst.ID}
			r.mu.Lock()
			defer r.mu.Unlock()
			switch {
			case err != nil && gctx.Err() != nil:
				// Cut short by the cancel, not refused by the cloud.
				res.Error = err.Error()
				incomplete[a.Fleet+"/"+a.Workload] = true
			case err != nil:
				res.Error = err.Error()
				incomplete[a.Fleet+"/"+a.Workload] = true
				if errors.Is(err, providers.ErrCapacity) || errors.Is(err, providers.ErrQuota) {
					dry[a.Offer] = true
				}
				if r.handleCreateError(a, err) {
					failedOver = true
				}
			default:
				r.observed = append(r.observed, inst)
				r.log.Info("created", "fleet", a.Fleet, "workload", a.Workload, "offer", a.Offer.String(), "instance", inst.ID)
				r.hooks.onCreate()
			}
			r.result.Applied = append(r.result.Applied, res)
			return nil
		})
	}
	g.Wait()

	// Deletes wait for the creates: a replacement runs before what it
	// replaces goes, and a workload whose create failed keeps its old nodes
	// until the next round places them.
	if ctx.Err() != nil {
		return false
	}
	g, gctx = errgroup.WithContext(ctx)
	g.SetLimit(r.opts.Parallelism)
	for _, a := range deletes {
		if incomplete[a.Fleet+"/"+a.Workload] && a.Cause.Live() {
			continue
		}
		inst, ok := r.findObserved(a.Instance)
		if !ok {
			continue
		}
		g.Go(func() error {
			if gctx.Err() != nil {
				return nil
			}
			err := r.opts.Providers[a.Offer.Cloud].Delete(gctx, inst)
			res := status.ActionResult{Fleet: a.Fleet, Kind: planner.Delete, Workload: a.Workload, Offer: a.Offer.String(), Instance: a.Instance}
			r.mu.Lock()
			defer r.mu.Unlock()
			if err != nil {
				res.Error = err.Error()
				r.errs[a.Fleet] = append(r.errs[a.Fleet], fmt.Sprintf("deleting %s: %v", a.Instance, err))
			} else {
				r.observed = slices.DeleteFunc(r.observed, func(i planner.Instance) bool { return i.ID == a.Instance && i.OfferKey == a.Offer })
				if inst.Token != "" {
					r.state.Retire(inst.Token, r.now.Add(tokenMemory))
				}
				r.log.Info("deleted", "fleet", a.Fleet, "workload", a.Workload, "instance", a.Instance, "reason", a.Reason)
			}
			r.result.Applied = append(r.result.Applied, res)
			return nil
		})
	}
	g.Wait()
	slices.SortStableFunc(r.observed, planner.CompareInstances)
	// Calls finish in any order; the record of them should not.
	slices.SortStableFunc(r.result.Applied, func(a, b status.ActionResult) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Fleet, b.Fleet), cmp.Compare(a.Workload, b.Workload), cmp.Compare(a.Offer, b.Offer), cmp.Compare(a.Instance, b.Instance))
	})
	return failedOver
}

// perPool is how many creates a pool takes at once: when it runs dry, at
// most this many fail.
const perPool = 2

// interleave orders creates so that consecutive ones go to different pools,
// round-robin in the order the pools first appear: the run's parallelism is
// shared among them rather than queued behind one.
func interleave(creates []planner.Action) []planner.Action {
	var order []planner.OfferKey
	byPool := map[planner.OfferKey][]planner.Action{}
	for _, a := range creates {
		if byPool[a.Offer] == nil {
			order = append(order, a.Offer)
		}
		byPool[a.Offer] = append(byPool[a.Offer], a)
	}
	out := make([]planner.Action, 0, len(creates))
	for len(out) < len(creates) {
		for _, k := range order {
			if q := byPool[k]; len(q) > 0 {
				out = append(out, q[0])
				byPool[k] = q[1:]
			}
		}
	}
	return out
}

func (r *run) findObserved(id string) (planner.Instance, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, inst := range r.observed {
		if inst.ID == id {
			return inst, true
		}
	}
	return planner.Instance{}, false
}

// handleCreateError records a failed create and reports whether planning
// again can route around it. The caller holds r.mu.
func (r *run) handleCreateError(a planner.Action, err error) bool {
	until := r.now.Add(r.repo.Config.Defaults.BlocklistFor)
	var pe *providers.Error
	errors.As(err, &pe)
	code := ""
	if pe != nil {
		code = pe.Code
	}
	switch {
	case errors.Is(err, providers.ErrCapacity):
		r.runOut(a.Offer, "out of capacity ("+code+")", until)
		// The next try on this offer gets a fresh token: a cloud may answer
		// the old one with the old failure (GCE replays an operation for
		// its requestId).
		r.state.Retire(a.Token, r.now.Add(tokenMemory))
		r.log.Warn("offer out of capacity; blocklisted", "offer", a.Offer.String(), "code", code, "until", until)
		return true
	case errors.Is(err, providers.ErrQuota):
		// Quota is per region and GPU family: every such offer is out.
		model := r.gpuModel(a.Offer)
		for _, o := range r.offers {
			if o.Cloud == a.Offer.Cloud && o.Region == a.Offer.Region && o.GPUModel == model {
				r.state.Block(o.OfferKey, "quota exceeded ("+code+")", until)
			}
		}
		r.state.Retire(a.Token, r.now.Add(tokenMemory))
		// Like a stock-out, it is routed around; the blocklist entry, in
		// the fleet's status, says which quota to raise, and a node that
		// cannot go elsewhere is a shortfall.
		r.log.Warn("quota exceeded; the region's offers of the GPU model are blocklisted", "offer", a.Offer.String(), "code", code, "until", until)
		return true
	case errors.Is(err, providers.ErrTokenSpent):
		// The token's node came and went; the next round gets a new one.
		r.state.Retire(a.Token, r.now.Add(tokenMemory))
		return true
	}
	r.errs[a.Fleet] = append(r.errs[a.Fleet], fmt.Sprintf("creating on %s: %v", a.Offer, err))
	return false
}

// runOut records an offer that ran out of capacity: capped at the nodes it
// holds of gpufleet's, when it holds some, for they show what it had;
// blocked otherwise. The caller holds r.mu.
func (r *run) runOut(k planner.OfferKey, reason string, until time.Time) {
	held := 0
	for _, inst := range r.observed {
		if inst.OfferKey == k && inst.State.Live() {
			held++
		}
	}
	if held == 0 {
		r.state.Block(k, reason, until)
		return
	}
	r.state.Cap(k, held, fmt.Sprintf("%s after %d nodes", reason, held), until)
	r.log.Warn("offer out of capacity; capped at what it holds", "offer", k.String(), "nodes", held, "until", until)
}

func (r *run) gpuModel(k planner.OfferKey) string {
	for _, o := range r.offers {
		if o.OfferKey == k {
			return o.GPUModel
		}
	}
	return ""
}
