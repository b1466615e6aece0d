package reconcile

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/schema"
	"github.com/gpufleet/gpufleet/schema/atomicfile"
)

// summaryFile is the human-readable status, beside the fleets' JSON.
const summaryFile = "STATUS.md"

// finish builds the status of every fleet and, when committing, writes it
// and commits and pushes it if anything besides timestamps changed.
func (r *run) finish(ctx context.Context) error {
	if r.state == nil {
		// The run stopped before it read the state (no head to read).
		r.state = &RepoState{}
	}
	r.state.prune(r.now)
	statuses := r.statuses()
	r.result.Statuses = statuses
	r.result.Blocklist = slices.Clone(r.state.Blocklist)
	if r.opts.DryRun || !r.opts.Commit {
		return nil
	}
	files := r.statusFiles(statuses)
	if len(files) == 0 {
		r.log.Info("status unchanged; nothing to commit")
		return nil
	}
	return r.commit(ctx, files)
}

// statuses builds each fleet's status from what the run saw and did.
func (r *run) statuses() map[string]*FleetStatus {
	out := map[string]*FleetStatus{}
	revision := r.specRevision()
	if r.repo == nil || r.report == nil {
		// The run stopped before it could plan: keep what the last run
		// knew and say why this one stopped.
		reason, message := ReasonObserveFailed, ""
		if r.specErr != nil {
			reason = ReasonSpecInvalid
		}
		for _, e := range r.errs[""] {
			message = e
		}
		for name, prev := range r.previous {
			st := *prev
			st.SpecRevision = revision
			st.Errors = append([]string{}, r.errs[""]...)
			st.Conditions = carryConditions([]Condition{
				{Type: Ready, Status: false, Reason: reason, Message: message},
				{Type: Progressing, Status: false, Reason: reason},
				{Type: Degraded, Status: true, Reason: reason, Message: message},
				{Type: Stalled, Status: reason == ReasonSpecInvalid, Reason: reason, Message: message},
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
		st := &FleetStatus{
			SchemaVersion:  StatusVersion,
			Fleet:          f.Name,
			SpecRevision:   revision,
			BaselineMicros: f.BaselineMicros,
			Workloads:      []WorkloadStatus{},
			Observed:       r.now,
			Errors:         r.errs[f.Name],
		}
		for _, w := range f.Workloads {
			ws := WorkloadStatus{Name: w.Name, Desired: w.Desired, Placed: w.Placements, Shortfall: w.Shortfall, Instances: []InstanceStatus{}}
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
				ws.Instances = append(ws.Instances, InstanceStatus{ID: inst.ID, Offer: inst.OfferKey.String(), State: inst.State, Token: inst.Token})
			}
			st.CostMicros += runningCost(w, byWorkload[f.Name+"/"+w.Name], r.offers)
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
		slices.SortStableFunc(st.LastActions, func(a, b ActionResult) int {
			return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Workload, b.Workload), cmp.Compare(a.Offer, b.Offer), cmp.Compare(a.Instance, b.Instance))
		})
		if len(st.LastActions) == 0 && r.previous[f.Name] != nil {
			// Nothing done this time: the last actions stay the last.
			st.LastActions = r.previous[f.Name].LastActions
		}
		st.Conditions = r.conditions(f, st)
		if prev := r.previous[f.Name]; prev != nil {
			st.Conditions = carryConditions(st.Conditions, prev.Conditions, r.now)
		} else {
			st.Conditions = carryConditions(st.Conditions, nil, r.now)
		}
		out[f.Name] = st
	}
	for _, o := range r.report.Changes.Orphans {
		st := out[o.Fleet]
		if st == nil {
			st = &FleetStatus{SchemaVersion: StatusVersion, Fleet: o.Fleet, SpecRevision: revision, Orphaned: true, Observed: r.now, Workloads: []WorkloadStatus{}}
			st.Conditions = carryConditions([]Condition{
				{Type: Ready, Status: false, Reason: ReasonOrphaned, Message: "the fleet was removed from the repository; its instances run on because prune is off"},
				{Type: Stalled, Status: true, Reason: ReasonOrphaned, Message: "delete the instances by hand, or set defaults.prune in gpufleet.cue"},
			}, conditionsOf(r.previous[o.Fleet]), r.now)
			out[o.Fleet] = st
		}
		i := slices.IndexFunc(st.Workloads, func(w WorkloadStatus) bool { return w.Name == o.Workload })
		if i < 0 {
			st.Workloads = append(st.Workloads, WorkloadStatus{Name: o.Workload, Placed: []planner.Placement{}})
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
		st.Workloads[i].Instances = append(st.Workloads[i].Instances, InstanceStatus{ID: o.ID, Offer: o.OfferKey.String(), State: o.State, Token: o.Token})
		if o.State.Live() {
			st.CostMicros += priceOf(o.OfferKey, r.offers)
		}
	}
	return out
}

func conditionsOf(st *FleetStatus) []Condition {
	if st == nil {
		return nil
	}
	return st.Conditions
}

// relevantBlocks are blocklisted offers the fleet's workloads could use.
func (r *run) relevantBlocks(f planner.FleetPlan) []BlockedOffer {
	var out []BlockedOffer
	fleet, _ := r.repo.Fleet(f.Name)
	for _, b := range r.state.Blocklist {
		k, err := planner.ParseOfferKey(b.Offer)
		if err != nil {
			continue
		}
		for _, w := range fleet.Workloads {
			if slices.Contains(w.Placement.Clouds, k.Cloud) && schema.MatchRegion(k.Region, w.Placement.Regions.Allow, w.Placement.Regions.Deny) && r.gpuModel(k) == w.GPU.Model {
				out = append(out, b)
				break
			}
		}
	}
	return out
}

func appendBlocked(list []BlockedOffer, more ...BlockedOffer) []BlockedOffer {
	for _, b := range more {
		if !slices.ContainsFunc(list, func(x BlockedOffer) bool { return x.Offer == b.Offer }) {
			list = append(list, b)
		}
	}
	slices.SortFunc(list, func(a, b BlockedOffer) int { return strings.Compare(a.Offer, b.Offer) })
	return list
}

// runningCost prices what runs for a workload: nodes on planned offers at
// the plan's prices (reserved ones free), others at the offer's price.
func runningCost(w planner.WorkloadPlan, instances []planner.Instance, offers []planner.Offer) int64 {
	perOffer := map[planner.OfferKey]int{}
	for _, inst := range instances {
		if inst.State.Live() {
			perOffer[inst.OfferKey]++
		}
	}
	total := int64(0)
	for _, p := range w.Placements {
		n := min(perOffer[p.Offer], p.Count)
		total += int64(n-min(n, p.Reserved))*p.PriceMicros + int64(n)*p.EgressMicros
		perOffer[p.Offer] -= n
	}
	for k, n := range perOffer {
		total += int64(n) * priceOf(k, offers)
	}
	return total
}

func priceOf(k planner.OfferKey, offers []planner.Offer) int64 {
	for _, o := range offers {
		if o.OfferKey == k {
			return max(0, o.PriceMicros)
		}
	}
	return 0
}

// conditions sums a fleet's state up the way Kubernetes and Flux users read
// it.
func (r *run) conditions(f planner.FleetPlan, st *FleetStatus) []Condition {
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
	refused := slices.ContainsFunc(r.report.Changes.Refused, func(a planner.Action) bool { return a.Fleet == f.Name })
	errs := len(st.Errors)

	ready := Condition{Type: Ready, Status: true, Reason: ReasonConverged, Message: "every node runs where the plan puts it"}
	switch {
	case todo > 0 || missing > 0:
		ready = Condition{Type: Ready, Status: false, Reason: ReasonNotConverged, Message: fmt.Sprintf("%d actions left to apply", todo)}
	case short > 0:
		ready = Condition{Type: Ready, Status: false, Reason: ReasonShortfall, Message: fmt.Sprintf("%d nodes cannot be placed", short)}
	case pending > 0:
		ready = Condition{Type: Ready, Status: false, Reason: ReasonPending, Message: fmt.Sprintf("%d nodes are starting", pending)}
	}
	progressing := Condition{Type: Progressing, Status: false, Reason: ReasonIdle}
	if pending > 0 || todo > 0 {
		progressing = Condition{Type: Progressing, Status: true, Reason: ReasonApplying, Message: fmt.Sprintf("%d pending nodes, %d actions left", pending, todo)}
	}
	degraded := Condition{Type: Degraded, Status: false, Reason: ReasonHealthy}
	switch {
	case errs > 0:
		degraded = Condition{Type: Degraded, Status: true, Reason: ReasonCloudErrors, Message: st.Errors[0]}
	case short > 0:
		degraded = Condition{Type: Degraded, Status: true, Reason: ReasonShortfall, Message: fmt.Sprintf("%d nodes short", short)}
	}
	stalled := Condition{Type: Stalled, Status: false, Reason: ReasonNone}
	if refused {
		stalled = Condition{Type: Stalled, Status: true, Reason: ReasonDeletionsRefused, Message: r.report.Changes.Refusal}
	}
	if r.suspended(f.Name) {
		return suspendedConditions(todo, degraded, stalled)
	}
	return []Condition{ready, progressing, degraded, stalled}
}

// specRevision digests the specs the run read: the Git trees of
// gpufleet.cue, fleets/ and policy/ at the head. It changes when a spec
// does, and not when only the status does.
func (r *run) specRevision() string {
	head, err := r.c.Head()
	if err != nil {
		return ""
	}
	commit, err := r.c.Repo.CommitObject(head)
	if err != nil {
		return ""
	}
	tree, err := commit.Tree()
	if err != nil {
		return ""
	}
	h := sha256.New()
	for _, name := range []string{schema.ConfigFile, schema.FleetsDir, schema.PolicyDir} {
		if e, err := tree.FindEntry(name); err == nil {
			fmt.Fprintf(h, "%s %s\n", name, e.Hash)
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// statusFiles renders the status files that differ from what the checkout
// holds in more than timestamps, keyed by repository-relative path.
func (r *run) statusFiles(statuses map[string]*FleetStatus) map[string][]byte {
	dir := r.statusDir()
	files := map[string][]byte{}
	changed := false
	for name, st := range statuses {
		if prev := r.previous[name]; prev != nil && sameBesidesTime(prev, st) {
			continue
		}
		changed = true
		files[path.Join(dir, name+".json")] = encode(st)
	}
	// The loader refuses fleet names that are files gpufleet writes for
	// itself; a status computed from an older or foreign state must not
	// overwrite them either.
	for _, own := range []string{stateFile, summaryFile} {
		delete(files, path.Join(dir, own))
	}
	unchanged := func(name string, data []byte) bool {
		if r.root == nil {
			return false
		}
		old, err := r.root.ReadFile(name)
		return err == nil && bytes.Equal(old, data)
	}
	state := encode(r.state)
	if name := path.Join(dir, stateFile); !unchanged(name, state) {
		changed = true
		files[name] = state
	}
	summary := r.summary(statuses)
	if name := path.Join(dir, summaryFile); !unchanged(name, summary) {
		changed = true
		files[name] = summary
	}
	if !changed {
		return nil
	}
	return files
}

// commit writes files, commits them, and pushes; when the branch moved
// meanwhile, it syncs to the new head, writes the files again and retries.
// It never force-pushes.
func (r *run) commit(ctx context.Context, files map[string][]byte) error {
	msg := r.commitMessage()
	for attempt := 1; ; attempt++ {
		hash, err := r.writeAndCommit(files, msg)
		if err != nil {
			return err
		}
		r.result.Commit = hash
		if !r.c.Remote {
			return nil
		}
		if r.hooks.pushing() {
			return errCrashed
		}
		err = r.c.Repo.PushContext(ctx, &git.PushOptions{
			RemoteName: git.DefaultRemoteName,
			RefSpecs:   []config.RefSpec{config.RefSpec(fmt.Sprintf("%s:%s", r.c.Branch, r.c.Branch))},
			Auth:       r.c.auth,
		})
		if err == nil || errors.Is(err, git.NoErrAlreadyUpToDate) {
			return nil
		}
		if !isRejected(err) || attempt >= r.opts.PushAttempts {
			r.result.Commit = plumbing.ZeroHash
			return fmt.Errorf("pushing the status, %w", err)
		}
		r.log.Info("the branch moved; re-applying the status onto its new head", "attempt", attempt)
		if err := r.c.Sync(ctx); err != nil {
			return err
		}
	}
}

func (r *run) writeAndCommit(files map[string][]byte, msg string) (plumbing.Hash, error) {
	wt, err := r.c.Repo.Worktree()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	// Checked again on every attempt: the head a retry starts from may have
	// put a symlink where the status directory was.
	root, err := statusRoot(r.c.Dir, r.statusDir())
	if err != nil {
		return plumbing.ZeroHash, err
	}
	defer root.Close()
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if err := atomicfile.WriteIn(root, filepath.FromSlash(name), files[name]); err != nil {
			return plumbing.ZeroHash, fmt.Errorf("writing %s, %w", name, err)
		}
		if _, err := wt.Add(name); err != nil {
			return plumbing.ZeroHash, fmt.Errorf("staging %s, %w", name, err)
		}
	}
	name, email := cmp.Or(r.opts.AuthorName, "gpufleet"), cmp.Or(r.opts.AuthorEmail, "gpufleet@localhost")
	sig := &object.Signature{Name: name, Email: email, When: r.now}
	hash, err := wt.Commit(msg, &git.CommitOptions{Author: sig, Committer: sig})
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("committing the status, %w", err)
	}
	return hash, nil
}

// commitMessage says what changed and the new hourly cost.
func (r *run) commitMessage() string {
	var created, deleted, failed int
	fleets := map[string]bool{}
	for _, a := range r.result.Applied {
		fleets[a.Fleet] = true
		switch {
		case a.Error != "":
			failed++
		case a.Kind == planner.Create:
			created++
		default:
			deleted++
		}
	}
	var b strings.Builder
	cost := int64(0)
	for _, st := range r.result.Statuses {
		cost += st.CostMicros
	}
	switch {
	case r.repo == nil || r.report == nil:
		b.WriteString("gpufleet: run stopped before planning")
	case len(r.result.Applied) > 0:
		fmt.Fprintf(&b, "gpufleet: %d created, %d deleted", created, deleted)
		if failed > 0 {
			fmt.Fprintf(&b, ", %d failed", failed)
		}
		fmt.Fprintf(&b, " in %s; now %s/h", strings.Join(slices.Sorted(maps.Keys(fleets)), ", "), money(cost))
	default:
		fmt.Fprintf(&b, "gpufleet: status update; now %s/h", money(cost))
	}
	b.WriteString("\n\n")
	for _, a := range r.result.Applied {
		sign := "+"
		if a.Kind == planner.Delete {
			sign = "-"
		}
		fmt.Fprintf(&b, "%s %s/%s %s %s", sign, a.Fleet, a.Workload, a.Offer, a.Instance)
		if a.Error != "" {
			fmt.Fprintf(&b, " FAILED: %s", a.Error)
		}
		b.WriteString("\n")
	}
	for _, e := range r.errs[""] {
		fmt.Fprintf(&b, "error: %s\n", e)
	}
	if r.result.Revision != "" {
		fmt.Fprintf(&b, "\nSpec-Commit: %s\n", r.result.Revision)
	}
	return b.String()
}
