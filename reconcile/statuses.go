// SPDX-License-Identifier: Apache-2.0

package reconcile

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/reconcile/status"
	"github.com/gpufleet/gpufleet/schema"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// statuses builds each fleet's status from what the run saw and did.
// stalePrices says, when the run's prices are stale, so; "" when they
// are not.
func (r *run) stalePrices() string {
	if r.opts.Catalog == nil {
		return ""
	}
	var clouds []string
	if r.repo != nil {
		clouds = r.repo.Config.Clouds.Enabled()
	}
	return r.opts.Catalog.Staleness(r.now, catalog.MaxPriceAge, clouds...)
}

func (r *run) statuses() map[string]*status.FleetStatus {
	out := map[string]*status.FleetStatus{}
	revision, commit := r.specRevision(), r.specCommit()
	if r.repo == nil || r.report == nil {
		// The run stopped before it could plan: keep what the last run
		// knew and say why this one stopped.
		reason, message := status.ReasonObserveFailed, ""
		switch {
		case r.specErr != nil:
			reason = status.ReasonSpecInvalid
		case r.stateUnread:
			reason = status.ReasonStatusCorrupt
		}
		for _, e := range r.errs[""] {
			message = e
		}
		for name, prev := range r.previous {
			st := *prev
			st.SpecRevision, st.SpecCommit = revision, commit
			st.Errors = append([]string{}, r.errs[""]...)
			st.Conditions = status.CarryConditions([]status.Condition{
				{Type: status.Ready, Status: false, Reason: reason, Message: message},
				{Type: status.Progressing, Status: false, Reason: reason},
				{Type: status.Degraded, Status: true, Reason: reason, Message: message},
				{Type: status.Stalled, Status: reason == status.ReasonSpecInvalid || reason == status.ReasonStatusCorrupt, Reason: reason, Message: message},
			}, prev.Conditions, r.now)
			st.Observed = r.now
			out[name] = &st
		}
		return out
	}
	plan := r.report.Plan
	byWorkload := map[string][]planner.Instance{}
	for _, inst := range r.observed {
		byWorkload[inst.Fleet+"/"+inst.Workload] = append(byWorkload[inst.Fleet+"/"+inst.Workload], inst)
	}
	blocked := r.state.Blocklist
	for _, f := range plan.Fleets {
		st := &status.FleetStatus{
			SchemaVersion:  status.StatusVersion,
			Fleet:          f.Name,
			SpecRevision:   revision,
			SpecCommit:     commit,
			CostMicros:     f.NowMicros,
			BaselineMicros: f.BaselineMicros,
			Workloads:      []status.WorkloadStatus{},
			Observed:       r.now,
			Errors:         r.errs[f.Name],
			StalePrices:    r.stalePrices(),
		}
		for _, w := range f.Workloads {
			ws := status.WorkloadStatus{Name: w.Name, Desired: w.Desired, Placed: w.Placements, Shortfall: w.Shortfall, Instances: []status.InstanceStatus{}}
			if ws.Placed == nil {
				ws.Placed = []planner.Placement{}
			}
			for _, inst := range byWorkload[f.Name+"/"+w.Name] {
				switch inst.State {
				case planner.StateRunning:
					ws.Running++
				case planner.StatePending:
					ws.Pending++
				case planner.StateFailed:
					ws.Failed++
				case planner.StateStopping:
					ws.Stopped++
				}
				ws.Instances = append(ws.Instances, status.InstanceStatus{ID: inst.ID, Offer: inst.OfferKey.String(), State: inst.State, Token: inst.Token, Bootstrap: inst.Bootstrap})
			}
			st.Workloads = append(st.Workloads, ws)
			for _, b := range blocked {
				if slices.ContainsFunc(w.Placements, func(p planner.Placement) bool { return p.Offer.String() == b.Offer }) || w.RunnerUp != nil && w.RunnerUp.Offer.String() == b.Offer {
					st.Blocklist = appendBlocked(st.Blocklist, b)
				}
			}
		}
		st.Blocklist = appendBlocked(st.Blocklist, r.relevantBlocks(f)...)
		st.SavingMicros = st.BaselineMicros - st.CostMicros
		for _, a := range r.result.Applied {
			if a.Fleet == f.Name {
				st.LastActions = append(st.LastActions, a)
			}
		}
		slices.SortStableFunc(st.LastActions, func(a, b status.ActionResult) int {
			return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Workload, b.Workload), cmp.Compare(a.Offer, b.Offer), cmp.Compare(a.Instance, b.Instance))
		})
		if c, ok := r.result.FleetCounts[f.Name]; ok {
			st.LastRun = &c
		}
		if len(st.LastActions) == 0 && r.previous[f.Name] != nil {
			// Nothing done this time: the last actions stay the last.
			st.LastActions, st.LastRun = r.previous[f.Name].LastActions, r.previous[f.Name].LastRun
		}
		st.Conditions = r.conditions(f, st)
		st.Conditions = r.withDriftCondition(f.Name, st.Conditions)
		if prev := r.previous[f.Name]; prev != nil {
			st.Conditions = status.CarryConditions(st.Conditions, prev.Conditions, r.now)
		} else {
			st.Conditions = status.CarryConditions(st.Conditions, nil, r.now)
		}
		out[f.Name] = st
	}
	for _, o := range r.report.Changes.Orphans {
		st := out[o.Fleet]
		if st == nil {
			st = &status.FleetStatus{SchemaVersion: status.StatusVersion, Fleet: o.Fleet, SpecRevision: revision, SpecCommit: commit, Orphaned: true, Observed: r.now, Workloads: []status.WorkloadStatus{}}
			st.Conditions = status.CarryConditions([]status.Condition{
				{Type: status.Ready, Status: false, Reason: status.ReasonOrphaned, Message: "the fleet was removed from the repository; its instances run on because prune is off"},
				{Type: status.Stalled, Status: true, Reason: status.ReasonOrphaned, Message: "delete the instances by hand, or set defaults.prune in gpufleet.cue"},
			}, conditionsOf(r.previous[o.Fleet]), r.now)
			out[o.Fleet] = st
		}
		i := slices.IndexFunc(st.Workloads, func(w status.WorkloadStatus) bool { return w.Name == o.Workload })
		if i < 0 {
			st.Workloads = append(st.Workloads, status.WorkloadStatus{Name: o.Workload, Placed: []planner.Placement{}})
			i = len(st.Workloads) - 1
		}
		switch {
		case o.State.Live():
			st.Workloads[i].Running++
		case o.State == planner.StateFailed:
			st.Workloads[i].Failed++
		default:
			st.Workloads[i].Stopped++
		}
		st.Workloads[i].Instances = append(st.Workloads[i].Instances, status.InstanceStatus{ID: o.ID, Offer: o.OfferKey.String(), State: o.State, Token: o.Token, Bootstrap: o.Bootstrap})
		if o.State.Live() {
			st.CostMicros += priceOf(o.OfferKey, r.offers)
		}
	}
	return out
}

func conditionsOf(st *status.FleetStatus) []status.Condition {
	if st == nil {
		return nil
	}
	return st.Conditions
}

// relevantBlocks are blocklisted offers the fleet's workloads could use.
func (r *run) relevantBlocks(f planner.FleetPlan) []status.BlockedOffer {
	var out []status.BlockedOffer
	fleet, _ := r.repo.Fleet(f.Name)
	for _, b := range r.state.Blocklist {
		k, err := planner.ParseOfferKey(b.Offer)
		if err != nil {
			continue
		}
		for _, w := range fleet.Workloads {
			if slices.Contains(w.Placement.Clouds, k.Cloud) && schema.MatchRegion(k.Cloud, k.Region, w.Placement.Regions.Allow, w.Placement.Regions.Deny) && r.gpuModel(k) == w.GPU.Model {
				out = append(out, b)
				break
			}
		}
	}
	return out
}

func appendBlocked(list []status.BlockedOffer, more ...status.BlockedOffer) []status.BlockedOffer {
	for _, b := range more {
		if !slices.ContainsFunc(list, func(x status.BlockedOffer) bool { return x.Offer == b.Offer }) {
			list = append(list, b)
		}
	}
	slices.SortFunc(list, func(a, b status.BlockedOffer) int { return strings.Compare(a.Offer, b.Offer) })
	return list
}

// priceOf is what an instance of no workload in the specs costs: its
// offer's price, as the plan counts it in NowMicros.
func priceOf(k planner.OfferKey, offers []planner.Offer) int64 {
	for _, o := range offers {
		if o.OfferKey == k && planner.ValidPrice(o) {
			return o.PriceMicros
		}
	}
	return 0
}

// conditions sums a fleet's state up the way Kubernetes and Flux users read
// it.
func (r *run) conditions(f planner.FleetPlan, st *status.FleetStatus) []status.Condition {
	var short, pending, missing int
	for i, w := range f.Workloads {
		ws := st.Workloads[i]
		pending += ws.Pending
		if w.Shortfall != nil {
			short += w.Shortfall.Nodes
		}
		if ws.Running+ws.Pending < w.Placed {
			missing += w.Placed - ws.Running - ws.Pending
		}
	}
	var todo int
	for _, a := range r.report.Changes.Actions {
		if a.Fleet == f.Name {
			todo++
		}
	}
	refused := 0
	for _, a := range r.report.Changes.Refused {
		if a.Fleet == f.Name {
			refused++
		}
	}
	var deferredCreates, deferredDeletes int
	for _, a := range r.report.Changes.Deferred {
		switch {
		case a.Fleet != f.Name:
		case a.Kind == planner.Create:
			deferredCreates++
		default:
			deferredDeletes++
		}
	}
	// Nodes a budget holds back are not missing for this run: they come
	// with the deletions they replace.
	missing = max(0, missing-deferredCreates)
	rolling := fmt.Sprintf("%s and %s wait for later runs, which continue the rollout: %s", plural(deferredDeletes, "deletion"), plural(deferredCreates, "create"), r.report.Changes.Deferral)
	errs := len(st.Errors)

	ready := status.Condition{Type: status.Ready, Status: true, Reason: status.ReasonConverged, Message: "every node runs where the plan puts it"}
	switch {
	case refused > 0:
		// A refused change leaves the fleet as it was, whatever else
		// holds: it is not where the specs put it until someone acts.
		ready = status.Condition{Type: status.Ready, Status: false, Reason: status.ReasonDeletionsRefused, Message: fmt.Sprintf("%d actions refused: %s", refused, r.report.Changes.Refusal)}
	case todo > 0 || missing > 0:
		ready = status.Condition{Type: status.Ready, Status: false, Reason: status.ReasonNotConverged, Message: fmt.Sprintf("%d actions left to apply", todo)}
	case deferredDeletes > 0:
		ready = status.Condition{Type: status.Ready, Status: false, Reason: status.ReasonDeletionsDeferred, Message: rolling}
	case short > 0:
		ready = status.Condition{Type: status.Ready, Status: false, Reason: status.ReasonShortfall, Message: fmt.Sprintf("%d nodes cannot be placed", short)}
	case pending > 0:
		ready = status.Condition{Type: status.Ready, Status: false, Reason: status.ReasonPending, Message: fmt.Sprintf("%d nodes are starting", pending)}
	}
	progressing := status.Condition{Type: status.Progressing, Status: false, Reason: status.ReasonIdle}
	switch {
	case deferredDeletes > 0:
		progressing = status.Condition{Type: status.Progressing, Status: true, Reason: status.ReasonRolling, Message: fmt.Sprintf("%d pending nodes, %d actions left; %s", pending, todo, rolling)}
	case pending > 0 || todo > 0:
		progressing = status.Condition{Type: status.Progressing, Status: true, Reason: status.ReasonApplying, Message: fmt.Sprintf("%d pending nodes, %d actions left", pending, todo)}
	}
	degraded := status.Condition{Type: status.Degraded, Status: false, Reason: status.ReasonHealthy}
	switch {
	case errs > 0:
		degraded = status.Condition{Type: status.Degraded, Status: true, Reason: status.ReasonCloudErrors, Message: st.Errors[0]}
	case short > 0:
		degraded = status.Condition{Type: status.Degraded, Status: true, Reason: status.ReasonShortfall, Message: fmt.Sprintf("%d nodes short", short)}
	}
	stalled := status.Condition{Type: status.Stalled, Status: false, Reason: status.ReasonNone}
	if refused > 0 {
		stalled = status.Condition{Type: status.Stalled, Status: true, Reason: status.ReasonDeletionsRefused, Message: r.report.Changes.Refusal}
	}
	if r.suspended(f.Name) {
		return suspendedConditions(todo, degraded, stalled)
	}
	return []status.Condition{ready, progressing, degraded, stalled}
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func (r *run) headCommit() (*object.Commit, error) {
	head, err := r.c.Head()
	if err != nil {
		return nil, err
	}
	return r.c.Repo.CommitObject(head)
}
