// SPDX-License-Identifier: Apache-2.0

package reconcile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"golang.org/x/sync/errgroup"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/reconcile/notify"
	"github.com/gpufleet/gpufleet/reconcile/status"
	"github.com/gpufleet/gpufleet/schema"
	"github.com/gpufleet/gpufleet/schema/catalog"
	"github.com/gpufleet/gpufleet/schema/redact"
)

// Options configure a run.
type Options struct {
	// Connect builds the providers once the run has read which clouds the
	// repository enables; Providers, when set instead, are used as they
	// are.
	Connect   Connect
	Providers map[string]providers.Provider
	Catalog   *catalog.Catalog
	Now       func() time.Time
	Log       *slog.Logger
	// Parallelism bounds the cloud calls in flight while applying.
	Parallelism int
	// Rounds bounds how often a run re-plans after capacity errors.
	Rounds int
	// DryRun plans without touching a cloud or the repository.
	DryRun bool
	// Commit writes the status files and commits and pushes them; apply
	// leaves the checkout untouched.
	Commit bool
	// Author of status commits.
	AuthorName, AuthorEmail string
	// Lock says who takes the repository lock and how long to wait for it.
	Lock LockOptions
	// PushAttempts bounds re-applying the status onto a moved branch.
	PushAttempts int
	// Fleets, when set, limits what is applied to these fleets' actions,
	// as Terraform's -target does: the plan still places every fleet
	// (they share capacity, quotas and budgets), and the status still
	// records them all, but no other fleet's node is created or deleted,
	// and only these fleets decide whether the run converged.
	Fleets []string
	// Saved, when set, is a plan made earlier (plan -out) to apply as it
	// is: the run refuses it with a *StalePlanError if the specs, what
	// runs or the prices moved since, and otherwise carries out its
	// actions, and only those — no failover beyond them; what they leave
	// undone is reported, for the next run to converge.
	Saved *SavedPlan
	// Applying, when set, is told the actions of each round of applying
	// before they start, and Applied of each as it finishes, from the
	// goroutine that ran it (so it must be safe for concurrent use): what
	// a live progress display needs.
	Applying func(round int, report *planner.Report, actions []planner.Action)
	Applied  func(status.ActionResult)
	// Notifier, when set, tells what gpufleet.cue's notifications ask for
	// of how the run ended. It is shared by the runs of a process, which
	// is how a failure repeated run after run is told once.
	Notifier *notify.Notifier
	// Secrets are the values no output of the run may hold: every error
	// it records, status file, commit message and notification is masked
	// with them, and it adds each bootstrap secret it reads. The
	// environment's secrets and credentials when nil.
	Secrets *redact.Set
	// Progress, when set, is told each step that finished without error,
	// as it finishes. A long-running agent uses it to know a repository
	// loaded long before the run ends.
	Progress func(Step)
}

// Step names a step of a run.
type Step string

// The steps of a run, in order. The report follows them on every way out.
const (
	StepLoad    Step = "load"
	StepObserve Step = "observe"
	StepPlan    Step = "plan"
	StepApply   Step = "apply"
)

// Result is what a run did.
type Result struct {
	// Revision is the spec commit reconciled.
	Revision string
	Report   *planner.Report
	// Applied lists every create and delete attempted, over all rounds.
	Applied  []status.ActionResult
	Statuses map[string]*status.FleetStatus
	// Commit is the status commit pushed, zero when nothing changed.
	Commit plumbing.Hash
	// Rounds of applying that ran.
	Rounds int
	// Counts sum up what the run did, in nodes and calls, as every
	// output says it; FleetCounts has them fleet by fleet.
	Counts      status.RunCounts
	FleetCounts map[string]status.RunCounts
	// Blocklist is the repository's blocklist as the run left it in
	// status/gpufleet.json, expired entries pruned.
	Blocklist []status.BlockedOffer
	// NotConverged says, for a run that finished, why the clouds still
	// differ from the specs; empty when they match. See OutcomeOf.
	NotConverged []string `json:"notConverged,omitempty"`
	// Drift is how the clouds differed from the committed status when the
	// run began, nil when it did not get to list them.
	Drift *status.Drift `json:"drift,omitempty"`
}

// errCrashed is what a run that was told to crash returns.
var errCrashed = errors.New("crashed on purpose")

// run is the state of one reconciliation.
type run struct {
	opts    Options
	c       *Checkout
	log     *slog.Logger
	secrets *redact.Set
	now     time.Time
	repo    *schema.Repo
	specErr error
	// root is the checkout, opened so that no status read or write leaves
	// it.
	root     *os.Root
	state    *status.RepoState
	previous map[string]*status.FleetStatus
	// unreadable are the fleets' status files the run could not read;
	// stateUnread says it could not read the repository state, which it
	// then leaves as it is, never written over.
	unreadable  []status.CorruptFile
	stateUnread bool

	observed []planner.Instance
	// budgets are the fleets' disruption budgets, resolved on what the run
	// first observed; disrupted counts, by fleet, the live deletions its
	// rounds so far made or asked for (see spend).
	budgets   map[string]planner.DeletionBudget
	disrupted map[string]int
	// unobserved names clouds whose instances could not be listed.
	unobserved map[string]error
	offers     []planner.Offer
	// quotas are the clouds' limits, and capacityWarnings what of them
	// could not be read (readCapacity).
	quotas           []planner.Quota
	quotaOthers      []int64
	capacityWarnings []string
	report           *planner.Report
	result           Result
	errs             map[string][]string // by fleet, "" for all
	// tally counts what the rounds did, in nodes and calls.
	tally *tally
	// throttledNow says a create of this round was throttled beyond the
	// SDK's retries; throttledRounds counts the rounds tried again so.
	throttledNow    bool
	throttledRounds int
	// groups are the placement groups made sure of and listed this run.
	groups placementGroups
	mu     sync.Mutex
	hooks  *hooks
	// disconnect releases what Options.Connect built.
	disconnect func() error
	// lostLock is why the run lost the repository lock, nil while it
	// holds it.
	lostLock atomic.Pointer[error]
}

// lockLost is why the run lost the repository lock, nil if it did not.
func (r *run) lockLost() error {
	if p := r.lostLock.Load(); p != nil {
		return *p
	}
	return nil
}

type step struct {
	name Step
	fn   func(context.Context) error
}

// Run reconciles a checkout: load, observe, plan, apply, report. The report
// step runs on every way out, so the status in the repository always says
// how the last run went, including a failed one.
func Run(ctx context.Context, c *Checkout, opts Options) (res *Result, err error) {
	return runWith(ctx, c, opts, nil)
}

// runWith is Run with test hooks, nil for none.
func runWith(ctx context.Context, c *Checkout, opts Options, h *hooks) (res *Result, err error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Parallelism <= 0 {
		opts.Parallelism = 16
	}
	if opts.Rounds <= 0 {
		opts.Rounds = 100
	}
	if opts.Saved != nil {
		opts.Rounds = 1
		if len(opts.Saved.Fleets) > 0 {
			opts.Fleets = opts.Saved.Fleets
		}
	}
	if opts.PushAttempts <= 0 {
		opts.PushAttempts = 5
	}
	if opts.Catalog == nil {
		opts.Catalog = catalog.Default()
	}
	if opts.Secrets == nil {
		opts.Secrets = redact.FromEnv()
	}
	r := &run{opts: opts, c: c, log: opts.Log, secrets: opts.Secrets, now: opts.Now().UTC(), errs: map[string][]string{}, unobserved: map[string]error{}, hooks: h, tally: newTally()}
	if !c.Remote {
		// A local checkout is reconciled in place: what it applies must be
		// what it records against the commit.
		if err := c.checkClean(); err != nil {
			return nil, err
		}
	}

	// The run tells of itself last, after the lock is released (defers
	// run in reverse): the lock guards the repository, and a receiver that
	// is slow or never answers must not hold it from the next run.
	var tell func()
	defer func() {
		if tell != nil {
			tell()
		}
	}()
	// The steps stop when told to, by the caller or a test, and when the
	// run loses the lock it renews while it runs.
	stepCtx, stopSteps := context.WithCancelCause(ctx)
	defer stopSteps(nil)
	if h != nil {
		h.cancel = func() { stopSteps(nil) }
	}
	if !opts.DryRun {
		lockOpts := opts.Lock
		if lockOpts.Now == nil {
			lockOpts.Now = opts.Now
		}
		lock, err := c.Lock(ctx, lockOpts)
		if err != nil {
			return nil, err
		}
		// Whoever held the lock before may have pushed: start from there.
		if err := c.Sync(ctx); err != nil {
			lock.Release(context.WithoutCancel(ctx))
			return nil, err
		}
		stopKeeping := lock.Keep(func(err error) {
			r.lostLock.Store(&err)
			r.log.Error("the run lost the repository lock and stops", "err", err)
			stopSteps(err)
		})
		defer func() {
			stopKeeping()
			if errors.Is(err, errCrashed) {
				return
			}
			// Released even when lost: a renewal under way when the run
			// gave the lock up may have got through, and the lock would
			// stay held for a TTL. The release moves the lock only from
			// the commit this run last wrote, so a lock another reconciler
			// took over is left alone.
			if rerr := lock.Release(context.WithoutCancel(ctx)); rerr != nil {
				r.log.Warn("releasing the repository lock", "err", rerr)
			}
		}()
	}

	defer func() {
		if r.root != nil {
			r.root.Close()
		}
		if r.disconnect != nil {
			if cerr := r.disconnect(); cerr != nil {
				r.log.Warn("closing the cloud clients", "err", cerr)
			}
		}
	}()
	steps := []step{{StepLoad, r.load}, {StepObserve, r.observe}, {StepPlan, r.plan}, {StepApply, r.apply}}
	var runErr error
	for _, s := range steps {
		r.log.Debug("step", "name", s.name)
		runErr = s.fn(stepCtx)
		if h.crashedAt(s.name) {
			return &r.result, errCrashed
		}
		if errors.Is(runErr, ErrStalePlan) {
			// Nothing was done: the status stays what it was.
			return &r.result, runErr
		}
		if lost := r.lockLost(); lost != nil {
			runErr = fmt.Errorf("%s: %w", s.name, lost)
			break
		}
		if runErr != nil {
			runErr = fmt.Errorf("%s: %w", s.name, runErr)
			break
		}
		if opts.Progress != nil {
			opts.Progress(s.name)
		}
	}
	if runErr != nil {
		r.recordRunError(runErr)
	}
	c.gitMu.Lock()
	reportErr := r.finish(context.WithoutCancel(ctx))
	c.gitMu.Unlock()
	if reportErr != nil {
		runErr = errors.Join(runErr, fmt.Errorf("report: %w", reportErr))
	}
	if runErr == nil {
		r.result.NotConverged = r.notConverged()
	}
	// Unlike the report, the notifications stop when the run is told to:
	// an interrupted run must end promptly, and what it had to tell is cut
	// short.
	tell = func() { r.notify(ctx, runErr) }
	return &r.result, runErr
}

// recordRunError keeps why a run stopped for the status: each spec error
// on its own line, with its file and line.
func (r *run) recordRunError(err error) {
	var problems schema.Errors
	if errors.As(err, &problems) {
		for _, p := range problems {
			r.errs[""] = append(r.errs[""], r.secrets.String(p.Error()))
		}
		return
	}
	r.errs[""] = append(r.errs[""], r.secrets.String(err.Error()))
}

// statusDir is the status directory, relative to the checkout, with
// slashes.
func (r *run) statusDir() string {
	if r.repo != nil {
		return r.repo.Config.Status.Dir
	}
	return "status"
}

// load reads the specs and what the last run left in the status files, and
// connects to the clouds the specs enable.
func (r *run) load(ctx context.Context) error {
	if err := r.loadSpecs(); err != nil {
		return err
	}
	return r.loadRest(ctx)
}

// loadSpecs reads the specs at the head and what the status says, and
// checks them against the commit.
func (r *run) loadSpecs() error {
	r.c.gitMu.Lock()
	defer r.c.gitMu.Unlock()
	head, err := r.c.Head()
	if err != nil {
		return err
	}
	r.result.Revision = head.String()
	if len(r.opts.Catalog.Offers) == 0 {
		// Checked before the specs are: against an empty catalog every
		// type and region they name would look like their mistake.
		return fmt.Errorf("the price catalog (%s) has no valid offer for any cloud: nothing is planned or deleted", r.opts.Catalog.Source)
	}
	r.repo, r.specErr = schema.LoadWithCatalog(r.c.Dir, r.opts.Catalog)
	if r.root, err = status.OpenRoot(r.c.Dir, r.statusDir()); err != nil {
		return err
	}
	if err := r.readStatus(); err != nil {
		return err
	}
	if r.specErr != nil {
		return fmt.Errorf("the fleet specs at %s are invalid, %w", short(head), r.specErr)
	}
	r.maskNotificationSecrets()
	commit, err := r.headCommit()
	if err != nil {
		return err
	}
	if err := checkCommitted(commit, r.repo.Read); err != nil {
		return err
	}
	if r.opts.Saved != nil {
		if err := r.opts.Saved.checkSpecs(r.specRevision(), head.String()); err != nil {
			return err
		}
	}
	return nil
}

// loadRest checks the fleets the run is narrowed to, and connects to the
// clouds the specs enable.
func (r *run) loadRest(ctx context.Context) error {
	var err error
	for _, name := range r.opts.Fleets {
		if _, ok := r.repo.Fleet(name); !ok {
			return fmt.Errorf("no fleet %q in the repository, so nothing of it can be applied", name)
		}
	}
	if r.opts.Providers == nil && r.opts.Connect != nil {
		if r.opts.Providers, r.disconnect, err = r.opts.Connect(ctx, r.repo.Config); err != nil {
			return fmt.Errorf("connecting to the clouds, %w", err)
		}
	}
	for _, cloud := range r.repo.Config.Clouds.Enabled() {
		if r.opts.Providers[cloud] == nil {
			return fmt.Errorf("gpufleet.cue enables %s but no %s provider is configured", cloud, cloud)
		}
	}
	return nil
}

// observe lists what gpufleet owns in every enabled cloud. A cloud that
// cannot be listed stops the run before it changes anything: acting on half
// a picture could launch nodes twice.
func (r *run) observe(ctx context.Context) error {
	clouds := r.repo.Config.Clouds.Enabled()
	lists := make([][]planner.Instance, len(clouds))
	var g errgroup.Group
	for i, cloud := range clouds {
		g.Go(func() error {
			got, err := r.opts.Providers[cloud].List(ctx, providers.Selector{})
			if err != nil {
				r.mu.Lock()
				r.unobserved[cloud] = err
				r.mu.Unlock()
				return nil
			}
			lists[i] = got
			return nil
		})
	}
	g.Wait()
	for _, l := range lists {
		r.observed = append(r.observed, l...)
	}
	slices.SortFunc(r.observed, func(a, b planner.Instance) int { return planner.CompareInstances(a, b) })
	if len(r.unobserved) > 0 {
		var errs []error
		for _, cloud := range slices.Sorted(maps.Keys(r.unobserved)) {
			errs = append(errs, fmt.Errorf("%s: %w", cloud, r.unobserved[cloud]))
		}
		return fmt.Errorf("could not list every cloud, so nothing was changed: %w", errors.Join(errs...))
	}
	r.noteDrift()
	r.ownDeletes(r.observed, false)
	r.notePreemptions()
	r.budgets = planner.Budgets(r.repo.Fleets, r.repo.Config.Defaults, r.observed)
	if r.opts.Saved != nil {
		return r.opts.Saved.checkObserved(r.observed)
	}
	return nil
}

// notePreemptions blocklists the offer of each newly preempted spot node,
// once, so its replacement goes elsewhere. A preemption seen by an earlier
// run was dealt with then: the instance leaves the picture (the cloud
// removes it, as gpufleet asks for spot nodes), and its token is retired
// so that no create asks for it again.
func (r *run) notePreemptions() {
	seen := map[string]bool{}
	for _, id := range r.state.Preempted {
		seen[id] = true
	}
	var still []string
	kept := r.observed[:0]
	for _, inst := range r.observed {
		if inst.State != planner.StatePreempted {
			kept = append(kept, inst)
			continue
		}
		still = append(still, inst.ID)
		if seen[inst.ID] {
			r.state.Retire(inst.Token, r.now.Add(tokenMemory))
			continue
		}
		kept = append(kept, inst)
		r.state.Block(inst.OfferKey, "preempted "+inst.ID, r.now.Add(r.repo.Config.Defaults.BlocklistFor))
		r.log.Info("spot node preempted; its offer is blocklisted", "instance", inst.ID, "offer", inst.OfferKey.String())
	}
	r.observed = kept
	r.state.Preempted = still
}

// plan computes the placement and the actions to reach it.
func (r *run) plan(ctx context.Context) error {
	r.offers = nil
	for _, cloud := range r.repo.Config.Clouds.Enabled() {
		offers, err := r.opts.Providers[cloud].Offers(ctx)
		if err != nil {
			// Live prices are a refinement: fall back to the catalog.
			r.log.Warn("live offers unavailable; using the catalog", "cloud", cloud, "err", err)
			offers = planner.Expand(r.opts.Catalog, map[string][]string{cloud: r.repo.Config.Clouds.Regions(cloud)})
		}
		r.offers = append(r.offers, offers...)
	}
	// Live offers come at list price; the account's own are the ones
	// planned with, as NewInput gives every offline plan.
	planner.ApplyAccountPrices(r.offers, r.repo.Config.Pricing)
	if err := planner.CheckPrices(r.offers, r.repo.Config.Clouds.Enabled(), r.opts.Catalog.Source); err != nil {
		return err
	}
	if err := r.readCapacity(ctx); err != nil {
		return err
	}
	if saved := r.opts.Saved; saved != nil {
		return r.planSaved(saved)
	}
	if err := r.replan(); err != nil {
		return err
	}
	if r.opts.DryRun {
		r.preflight(ctx)
	}
	return nil
}

// planSaved makes the plan a saved plan was made as, again, and takes it
// only if its actions are the saved ones: what was reviewed is what is
// done, and nothing else is.
func (r *run) planSaved(saved *SavedPlan) error {
	if err := saved.checkPrices(r.opts.Catalog); err != nil {
		return err
	}
	snapshot, err := status.ReadObserved(r.c.Dir, r.statusDir(), r.now)
	if err != nil {
		return fmt.Errorf("reading the status the plan was made with, %w", err)
	}
	report, err := saved.replan(r.repo, r.opts.Catalog, snapshot)
	if err != nil {
		return err
	}
	if err := saved.checkActions(report); err != nil {
		return err
	}
	r.report, r.result.Report = report, report
	return nil
}

func (r *run) replan() error {
	in := planner.NewInput(r.repo, r.opts.Catalog)
	in.Offers = r.offers
	in.Observed = r.observed
	in.Blocked = r.state.Active(r.now)
	in.Learned = r.state.Learned(r.now)
	in.Quotas = r.quotas
	in.Start = status.Placements(r.previous)
	plan, err := planner.Solve(in)
	if err != nil {
		return err
	}
	plan.Warnings = append(plan.Warnings, r.capacityWarnings...)
	if stale := r.stalePrices(); stale != "" {
		plan.Warnings = append(plan.Warnings, stale)
	}
	changes := planner.Diff(plan, r.observed, planner.DiffOptions{
		Revision: planner.SpecRevisions(r.repo.Fleets),
		Budgets:  r.budgetsLeft(),
		Prune:    r.repo.Config.Defaults.Prune,
		Retired:  r.state.RetiredTokens(r.now),
	})
	r.report = planner.NewReport(plan, changes)
	if w := secretsWarning(r.repo, changes.Actions, envSecret); w != "" {
		r.report.Plan.Warnings = append(r.report.Plan.Warnings, w)
	}
	if r.result.Report == nil {
		r.result.Report = r.report
	}
	return nil
}

// budgetsLeft are the fleets' disruption budgets less what the run's
// rounds spent of them: the budget is of a run, however many rounds it
// takes.
func (r *run) budgetsLeft() map[string]planner.DeletionBudget {
	out := make(map[string]planner.DeletionBudget, len(r.budgets))
	for fleet, b := range r.budgets {
		b.Spent = r.disrupted[fleet]
		out[fleet] = b
	}
	return out
}

func short(h plumbing.Hash) string { return h.String()[:12] }

// tokenMemory is how long a cloud may answer a token with what it made:
// EC2 keeps ClientTokens for at least a day.
const tokenMemory = 25 * time.Hour
