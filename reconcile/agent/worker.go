package agent

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gpufleet/gpufleet/reconcile"
)

// worker is one repository's schedule. Its runs happen on one goroutine,
// so two runs of a repository never overlap, whatever triggers them.
type worker struct {
	repo Repo
	// id tells configured repositories apart; name shows one in logs and
	// metrics, with any credentials in its URL hidden.
	id, name string
	// key is the repository's URL reduced for matching webhooks.
	key     string
	workDir string
	sched   *schedule
	// pending holds at most one trigger: any that arrive while it is full
	// are the same request, and the next run serves them all.
	pending chan string
	// triggered counts the triggers accepted; tests read it.
	triggered atomic.Int64
	// ready is set once the first run has loaded the specs or ended.
	ready atomic.Bool

	mu sync.Mutex
	// branch is the branch reconciled: the configured one, or the
	// remote's default once a run has cloned it.
	branch string
}

func newWorker(repo Repo, opts Options) *worker {
	id := repo.URL
	if repo.Branch != "" {
		id += "#" + repo.Branch
	}
	name := displayName(repo.URL)
	if repo.Branch != "" {
		name += "#" + repo.Branch
	}
	return &worker{
		repo:    repo,
		id:      id,
		name:    name,
		key:     repoKey(repo.URL),
		sched:   newSchedule(opts.Interval, opts.Jitter, id),
		pending: make(chan string, 1),
		branch:  repo.Branch,
	}
}

// trigger asks for a run as soon as the one in progress, if any, is over.
func (w *worker) trigger(reason string) {
	w.triggered.Add(1)
	select {
	case w.pending <- reason:
	default:
		// A run is already due: it will see whatever this trigger is for,
		// because every run fetches the branch head when it starts.
	}
}

func (w *worker) markReady()    { w.ready.Store(true) }
func (w *worker) isReady() bool { return w.ready.Load() }

func (w *worker) setBranch(b string) {
	w.mu.Lock()
	w.branch = b
	w.mu.Unlock()
}

// currentBranch is the branch reconciled, or "" before the first clone of
// a repository configured without one.
func (w *worker) currentBranch() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.branch
}

// loop runs the repository at once, then on its schedule and on triggers,
// until ctx ends.
func (a *Agent) loop(ctx context.Context, w *worker) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		reason := "schedule"
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case reason = <-w.pending:
		}
		if ctx.Err() != nil {
			return
		}
		a.runOnce(ctx, w, reason)
		if ctx.Err() != nil {
			return
		}
		// The next scheduled run counts from the end of this one, however
		// it was started, so a busy webhook does not add scheduled runs.
		next := w.sched.next()
		timer.Reset(next)
		a.log.Debug("next scheduled run", "repo", w.name, "in", next.Round(time.Second))
	}
}

// Results of a run, as the runs metric labels them.
const (
	resultSuccess = "success"
	resultError   = "error"
	resultLocked  = "locked"
)

func resultOf(err error) string {
	var held *reconcile.HeldError
	switch {
	case err == nil:
		return resultSuccess
	case errors.As(err, &held):
		return resultLocked
	}
	return resultError
}

// runOnce reconciles a repository and records how it went.
func (a *Agent) runOnce(ctx context.Context, w *worker, reason string) {
	log := a.log.With("repo", w.name)
	log.Info("reconciling", "reason", reason)
	started := time.Now()
	res, err := a.reconcile(ctx, w)
	took := time.Since(started)
	// A run that failed before loading still answers readiness: the agent
	// is up and says why in its logs, metrics and status.
	w.markReady()
	result := resultOf(err)
	a.metrics.recordRun(w.name, result, took, res, time.Now())
	switch result {
	case resultSuccess:
		attrs := []any{"took", took.Round(time.Millisecond), "applied", len(res.Applied)}
		if !res.Commit.IsZero() {
			attrs = append(attrs, "commit", res.Commit.String()[:12])
		}
		log.Info("reconciled", attrs...)
	case resultLocked:
		log.Info("another reconciler holds the lock; trying again at the next run", "err", err)
	default:
		log.Error("reconcile failed", "took", took.Round(time.Millisecond), "err", err)
	}
	if a.afterRun != nil {
		a.afterRun(w, res, err)
	}
}
