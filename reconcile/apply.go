// SPDX-License-Identifier: Apache-2.0

package reconcile

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
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
	if err := r.checkSecrets(); err != nil {
		return err
	}
	for round := 1; round <= r.opts.Rounds; round++ {
		actions := r.applicable(r.report.Changes.Actions)
		if len(actions) == 0 {
			break
		}
		r.result.Rounds = round
		r.throttledNow = false
		if r.opts.Applying != nil {
			r.opts.Applying(round, r.report, actions)
		}
		failedOver := r.applyRound(ctx, actions)
		// Plan again on what now runs: the report then shows what is left.
		if err := r.replan(); err != nil {
			return err
		}
		if !failedOver || ctx.Err() != nil {
			break
		}
		if r.throttledNow {
			// The SDK backed off and gave up; the cloud wants fewer
			// calls, so the next round waits longer each time.
			r.throttledRounds++
			wait := time.Duration(r.throttledRounds) * throttlePause
			r.log.Warn("creates throttled after the SDK's retries; trying them again", "round", round+1, "after", wait)
			select {
			case <-time.After(wait):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		r.log.Info("re-planning after capacity errors", "round", round+1)
	}
	if ctx.Err() == nil {
		r.prunePlacementGroups(ctx)
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

// spareNodes is, for each workload whose creates did not all launch, how
// many live nodes it has beyond what the plan places: those its deletes
// may take.
func (r *run) spareNodes(incomplete map[string]bool) map[string]int {
	spare := map[string]int{}
	for _, inst := range r.observed {
		if key := inst.Fleet + "/" + inst.Workload; incomplete[key] && inst.State.Live() {
			spare[key]++
		}
	}
	for key := range incomplete {
		fleet, workload, _ := strings.Cut(key, "/")
		if wp := r.report.Plan.Workload(fleet, workload); wp != nil {
			spare[key] -= wp.Placed
		} else {
			spare[key] = 0
		}
	}
	return spare
}

// spend counts a live deletion the round sets out to make against its
// fleet's disruption budget, before it is asked for: a call cut short may
// still have reached the cloud. A deletion the round skips, for the create
// that was to replace it failed, spends nothing: a later round may move
// the node again.
func (r *run) spend(a planner.Action) {
	if !a.Cause.Live() {
		return
	}
	if r.disrupted == nil {
		r.disrupted = map[string]int{}
	}
	r.disrupted[a.Fleet]++
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
	r.mu.Lock()
	r.ownDeletes(observed, true)
	// A preemption whose instance is gone needs remembering no more; the
	// next run would forget it, and commit only for that.
	listed := map[string]bool{}
	for _, inst := range observed {
		listed[inst.ID] = true
	}
	r.state.Preempted = slices.DeleteFunc(r.state.Preempted, func(id string) bool { return !listed[id] })
	r.mu.Unlock()
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
	// A pool takes one batch, or a few single creates, at a time, and none
	// more once one found it out of capacity: the creates queued behind
	// would only fail too. Its nodes are planned again elsewhere next round.
	units := r.launches(creates)
	pools := map[planner.OfferKey]chan struct{}{}
	dry := map[planner.OfferKey]bool{}
	for _, u := range units {
		if pools[u.offer] == nil {
			n := perPool
			if r.batcher(u.offer.Cloud) != nil {
				n = 1
			}
			pools[u.offer] = make(chan struct{}, n)
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(r.opts.Parallelism)
	for _, u := range units {
		g.Go(func() error {
			pool := pools[u.offer]
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
			key := u.fleet + "/" + u.workload
			r.mu.Lock()
			skip := dry[u.offer]
			if skip {
				incomplete[key] = true
				failedOver = true
				r.tally.notLaunched(u.fleet, u.workload, len(u.actions), true)
			}
			r.mu.Unlock()
			if skip {
				return nil
			}
			insts, asked, err := r.launch(gctx, u, labels[key])
			// A cloud's error may quote what it was sent.
			err = r.secrets.Error(err)
			r.mu.Lock()
			defer r.mu.Unlock()
			if err != nil && asked {
				r.tally.callFailed(u.fleet, u.workload)
			}
			launched := map[string]planner.Instance{}
			for _, inst := range insts {
				launched[inst.Token] = inst
			}
			var unlaunched []string
			for _, a := range u.actions {
				res := status.ActionResult{Fleet: a.Fleet, Kind: planner.Create, Workload: a.Workload, Offer: a.Offer.String()}
				if inst, ok := launched[a.Token]; ok {
					res.Instance = inst.ID
					r.observed = append(r.observed, inst)
					r.hooks.onCreate()
				} else {
					res.Error = "not launched"
					if err != nil {
						res.Error = err.Error()
					}
					unlaunched = append(unlaunched, a.Token)
				}
				r.result.Applied = append(r.result.Applied, res)
				r.tell(res)
			}
			r.tally.launched(u.fleet, u.workload, len(u.actions)-len(unlaunched))
			if len(insts) > 0 {
				r.log.Log(gctx, r.actionLevel(), "created", "fleet", u.fleet, "workload", u.workload, "offer", u.offer.String(), "nodes", len(insts), "first", insts[0].ID)
			}
			if err == nil && len(unlaunched) == 0 {
				return nil
			}
			incomplete[key] = true
			if err == nil {
				// A cloud that answered with fewer nodes than asked, and no
				// error, is read as a pool with no room for more.
				err = &providers.Error{Kind: providers.KindCapacity, Cloud: u.offer.Cloud, Op: "create", Offer: u.offer,
					Message: fmt.Sprintf("launched %d of %d", len(insts), len(u.actions))}
			}
			dryPool := errors.Is(err, providers.ErrCapacity) || errors.Is(err, providers.ErrQuota)
			r.tally.notLaunched(u.fleet, u.workload, len(unlaunched), dryPool && gctx.Err() == nil)
			if gctx.Err() != nil {
				// Cut short by the cancel, not refused by the cloud.
				return nil
			}
			if dryPool {
				dry[u.offer] = true
			}
			if r.handleCreateError(u.actions[0], unlaunched, err) {
				failedOver = true
			}
			return nil
		})
	}
	g.Wait()

	// Deletes wait for the creates: a replacement runs before what it
	// replaces goes, and a workload whose create failed keeps as many of
	// its old nodes as the failed creates were to replace, until a later
	// round places them: it never runs fewer nodes than the plan gives it.
	if ctx.Err() != nil {
		r.tally.endRound()
		return false
	}
	spare := r.spareNodes(incomplete)
	g, gctx = errgroup.WithContext(ctx)
	g.SetLimit(r.opts.Parallelism)
	for _, a := range deletes {
		if key := a.Fleet + "/" + a.Workload; incomplete[key] && a.Cause.Live() {
			if spare[key] <= 0 {
				continue
			}
			spare[key]--
		}
		inst, ok := r.findObserved(a.Instance)
		if !ok {
			continue
		}
		r.spend(a)
		g.Go(func() error {
			if gctx.Err() != nil {
				return nil
			}
			// Remembered before it is asked for: a call cut short may
			// still have reached the cloud.
			r.mu.Lock()
			r.noteDelete(inst)
			r.mu.Unlock()
			err := r.secrets.Error(r.opts.Providers[a.Offer.Cloud].Delete(gctx, inst))
			res := status.ActionResult{Fleet: a.Fleet, Kind: planner.Delete, Workload: a.Workload, Offer: a.Offer.String(), Instance: a.Instance}
			r.mu.Lock()
			defer r.mu.Unlock()
			r.tally.deleted(a.Fleet, a.Workload, a.Instance, err != nil)
			if err != nil {
				r.tally.callFailed(a.Fleet, a.Workload)
				res.Error = err.Error()
				r.errs[a.Fleet] = append(r.errs[a.Fleet], fmt.Sprintf("deleting %s: %v", a.Instance, err))
			} else {
				r.observed = slices.DeleteFunc(r.observed, func(i planner.Instance) bool { return i.ID == a.Instance && i.OfferKey == a.Offer })
				if inst.Token != "" {
					r.state.Retire(inst.Token, r.now.Add(tokenMemory))
				}
				r.log.Log(gctx, r.actionLevel(), "deleted", "fleet", a.Fleet, "workload", a.Workload, "instance", a.Instance, "reason", a.Reason)
			}
			r.result.Applied = append(r.result.Applied, res)
			r.tell(res)
			return nil
		})
	}
	g.Wait()
	r.tally.endRound()
	slices.SortStableFunc(r.observed, planner.CompareInstances)
	// Calls finish in any order; the record of them should not.
	slices.SortStableFunc(r.result.Applied, func(a, b status.ActionResult) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Fleet, b.Fleet), cmp.Compare(a.Workload, b.Workload), cmp.Compare(a.Offer, b.Offer), cmp.Compare(a.Instance, b.Instance))
	})
	return failedOver
}

// A run tries creates the clouds throttled again at most maxThrottledRounds
// times, pausing throttlePause longer each time.
const (
	maxThrottledRounds = 3
	throttlePause      = time.Second
)

// perPool is how many single creates a pool takes at once: when it runs
// dry, at most this many fail. A cloud that launches in batches takes one
// batch at a time per pool.
const perPool = 2

// launchUnit is what one call launches: a batch of a workload's nodes on
// one offer, of consecutive slots, or a single node.
type launchUnit struct {
	fleet, workload string
	offer           planner.OfferKey
	actions         []planner.Action
}

// batcher is the cloud's provider if it launches in batches, or nil.
func (r *run) batcher(cloud string) providers.BatchCreator {
	b, _ := r.opts.Providers[cloud].(providers.BatchCreator)
	return b
}

// launches groups creates into what one call launches each: on a cloud
// that launches in batches, the creates of a workload on an offer whose
// slots follow one another, up to providers.MaxBatch; elsewhere one create
// each. The units are ordered round-robin over the pools in the order they
// first appear, so the run's parallelism is shared among the pools rather
// than queued behind one.
func (r *run) launches(creates []planner.Action) []launchUnit {
	type group struct {
		fleet, workload string
		offer           planner.OfferKey
	}
	var order []planner.OfferKey
	byPool := map[planner.OfferKey][]launchUnit{}
	var groups []group
	byGroup := map[group][]planner.Action{}
	for _, a := range creates {
		k := group{a.Fleet, a.Workload, a.Offer}
		if byGroup[k] == nil {
			groups = append(groups, k)
		}
		byGroup[k] = append(byGroup[k], a)
	}
	for _, k := range groups {
		actions := byGroup[k]
		// A bootstrap that names each node's token differs from node to
		// node, and a batch's nodes all get the same one.
		batches := r.batcher(k.offer.Cloud) != nil && !r.perNodeBootstrap(k.fleet, k.workload, k.offer.Cloud)
		if batches {
			slices.SortStableFunc(actions, func(a, b planner.Action) int { return cmp.Compare(slotOf(a.Token), slotOf(b.Token)) })
		}
		for len(actions) > 0 {
			n := 1
			if batches {
				for n < len(actions) && n < providers.MaxBatch {
					next, ok := planner.TokenAt(actions[0].Token, n)
					if !ok || next != actions[n].Token {
						break
					}
					n++
				}
			}
			if byPool[k.offer] == nil {
				order = append(order, k.offer)
			}
			byPool[k.offer] = append(byPool[k.offer], launchUnit{fleet: k.fleet, workload: k.workload, offer: k.offer, actions: actions[:n:n]})
			actions = actions[n:]
		}
	}
	var out []launchUnit
	for more := true; more; {
		more = false
		for _, k := range order {
			if q := byPool[k]; len(q) > 0 {
				out = append(out, q[0])
				byPool[k] = q[1:]
				more = true
			}
		}
	}
	return out
}

// slotOf is a token's slot, or -1 for a token of an older form.
func slotOf(token string) int {
	if _, slot, ok := planner.TokenSlot(token); ok {
		return slot
	}
	return -1
}

// launch makes the calls of one unit and returns the nodes it launched, in
// the order of its actions; an error says why the rest were not, and
// asked whether a cloud call returned it, rather than what came before
// any call (a bootstrap that does not render).
func (r *run) launch(ctx context.Context, u launchUnit, labels map[string]string) (insts []planner.Instance, asked bool, err error) {
	first := u.actions[0]
	req := providers.CreateRequest{Token: first.Token, Offer: u.offer, Fleet: u.fleet, Workload: u.workload, Labels: labels}
	boot, err := r.renderBootstrap(u.fleet, u.workload, u.offer, first.Token)
	if err != nil {
		return nil, false, &providers.Error{Kind: providers.KindInvalid, Cloud: u.offer.Cloud, Op: "create", Offer: u.offer, Message: err.Error()}
	}
	req.Bootstrap = boot
	if req.PlacementGroup, err = r.placementGroup(ctx, u.fleet, u.workload, u.offer); err != nil {
		return nil, true, err
	}
	req.EFA = r.efaOf(u.fleet, u.workload, u.offer)
	if len(u.actions) == 1 {
		inst, err := r.opts.Providers[u.offer.Cloud].Create(ctx, req)
		if err != nil {
			return nil, true, err
		}
		insts = []planner.Instance{inst}
	} else {
		insts, err = r.batcher(u.offer.Cloud).CreateBatch(ctx, providers.BatchRequest{CreateRequest: req, Count: len(u.actions)})
	}
	// A create's answer says what was launched, not always with which
	// tags: the nodes boot with what was asked for.
	for i := range insts {
		if boot != nil && insts[i].Bootstrap == "" {
			insts[i].Bootstrap = boot.Digest
		}
	}
	return insts, true, err
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

// handleCreateError records a failed create, or the part of a batch that
// was not launched (the tokens given), and reports whether planning again
// can route around it. The caller holds r.mu.
func (r *run) handleCreateError(a planner.Action, tokens []string, err error) bool {
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
		r.retire(tokens)
		r.log.Warn("offer out of capacity", "offer", a.Offer.String(), "code", code, "until", until)
		return true
	case errors.Is(err, providers.ErrQuota):
		// Quota is per region and GPU family: every such offer is out.
		model := r.gpuModel(a.Offer)
		for _, o := range r.offers {
			if o.Cloud == a.Offer.Cloud && o.Region == a.Offer.Region && o.GPUModel == model {
				r.state.Block(o.OfferKey, "quota exceeded ("+code+")", until)
			}
		}
		r.retire(tokens)
		// Like a stock-out, it is routed around; the blocklist entry, in
		// the fleet's status, says which quota to raise, and a node that
		// cannot go elsewhere is a shortfall.
		r.log.Warn("quota exceeded; the region's offers of the GPU model are blocklisted", "offer", a.Offer.String(), "code", code, "until", until)
		return true
	case errors.Is(err, providers.ErrThrottled) && r.throttledRounds < maxThrottledRounds:
		// Throttled beyond the SDK's own retries: the same creates, with
		// the same tokens, go again next round, after a pause; a node the
		// call made after all is observed, or adopted by its token.
		r.throttledNow = true
		return true
	case errors.Is(err, providers.ErrTokenSpent):
		// The token's node came and went; the next round gets a new one.
		r.retire(tokens)
		return true
	}
	r.errs[a.Fleet] = append(r.errs[a.Fleet], fmt.Sprintf("creating on %s: %v", a.Offer, err))
	return false
}

// retire keeps tokens from being used again for tokenMemory. The caller
// holds r.mu.
func (r *run) retire(tokens []string) {
	for _, t := range tokens {
		r.state.Retire(t, r.now.Add(tokenMemory))
	}
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

// tell passes a finished action to Options.Applied.
func (r *run) tell(res status.ActionResult) {
	if r.opts.Applied != nil {
		r.opts.Applied(res)
	}
}

// actionLevel is the level each create and delete is logged at: info,
// unless the caller follows them through Options.Applied and shows them
// itself.
func (r *run) actionLevel() slog.Level {
	if r.opts.Applied != nil {
		return slog.LevelDebug
	}
	return slog.LevelInfo
}
