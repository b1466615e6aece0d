// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"context"
	"errors"
	"strings"
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
	// triggered counts the triggers accepted, and finished the runs whose
	// outcome is recorded; tests wait on them.
	triggered, finished atomic.Int64

	mu sync.Mutex
	// branch is the branch reconciled: the configured one, or the
	// remote's default once a run has cloned it.
	branch string
	// ready says the latest run that could tell got as far as loading the
	// specs; notReady is why not, when it did not.
	ready    bool
	notReady string
	// loaded says the run in progress has loaded the specs.
	loaded bool
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
		repo:     repo,
		id:       id,
		name:     name,
		key:      repoKey(repo.URL),
		sched:    newSchedule(opts.Interval, opts.Jitter, id),
		pending:  make(chan string, 1),
		branch:   repo.Branch,
		notReady: waitingForFirstRun,
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

const waitingForFirstRun = "waiting for the first run to load the specs"

// startRun forgets whether the last run loaded the specs, but not whether
// the repository is ready: that stays as the last run left it until this
// one loads the specs or fails before, so readiness does not flap with
// every run.
func (w *worker) startRun() {
	w.mu.Lock()
	w.loaded = false
	w.mu.Unlock()
}

// markLoaded is called when the run in progress has cloned or fetched the
// repository and loaded its specs: from then on the agent serves it,
// whatever happens further on in the run.
func (w *worker) markLoaded() {
	w.mu.Lock()
	w.loaded, w.ready, w.notReady = true, true, ""
	w.mu.Unlock()
}

// endRun sets readiness from how a run ended. Only a run that failed before
// its specs loaded makes the repository not ready: one that failed later,
// observing or applying, is served correctly and says so in the metrics.
func (w *worker) endRun(ctx context.Context, outcome reconcile.Outcome, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.loaded || err == nil:
		w.ready, w.notReady = true, ""
	case outcome == reconcile.Locked:
		// Another reconciler holding the lock says nothing about whether
		// this agent can load the repository: keep what the last run
		// said, or say why the first is taking so long.
		if w.notReady == waitingForFirstRun {
			w.notReady = "another reconciler held the repository lock; waiting for a run that loads the specs"
		}
	case ctx.Err() != nil:
		// Cancelled by shutdown, which readiness reports on its own.
	default:
		w.ready, w.notReady = false, firstLine(hideCredentials(err.Error(), w.repo.URL))
	}
}

// readiness is whether the repository is ready and, when not, why.
func (w *worker) readiness() (bool, string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ready, w.notReady
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return strings.TrimSpace(line)
}

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
		err := a.runOnce(ctx, w, reason)
		if ctx.Err() != nil {
			return
		}
		// The next scheduled run counts from the end of this one, however
		// it was started, so a busy webhook does not add scheduled runs.
		next := pauseAfter(err, w.sched.next())
		timer.Reset(next)
		a.log.Debug("next run", "repo", w.name, "in", next.Round(time.Second))
	}
}

// lockRetryMargin is how long past another holder's expiry a run that
// found the lock held tries again: the expiry is to the second, and the
// holder's clock may run a little behind this one's.
const lockRetryMargin = time.Second

// pauseAfter is the pause before the next run, given the error of the one
// that just ended and next, the pause the schedule drew. A run that found
// another reconciler's lock tries again just past its expiry, so a holder
// that died (a killed replica) keeps the repository for no longer than its
// lock's TTL; a holder that lives renews, and the run after finds a later
// expiry and waits for that one. It never waits longer than the schedule
// says, and never less than the margin, so a lock read as expiring now
// does not make a tight loop.
func pauseAfter(err error, next time.Duration) time.Duration {
	var held *reconcile.HeldError
	if !errors.As(err, &held) {
		return next
	}
	return min(next, max(held.Until.Sub(held.Now), 0)+lockRetryMargin)
}

// Results of a run, as the runs metric labels them.
const (
	resultSuccess      = "success"
	resultNotConverged = "not_converged"
	resultError        = "error"
	resultLocked       = "locked"
)

// results are every result label, in the order the metric starts them.
var results = []string{resultSuccess, resultNotConverged, resultError, resultLocked}

// resultOf labels an outcome. Only a converged run is a success: one that
// finished short of the specs must not move the last-success timestamp
// alerts watch.
func resultOf(outcome reconcile.Outcome) string {
	switch outcome {
	case reconcile.Converged:
		return resultSuccess
	case reconcile.NotConverged:
		return resultNotConverged
	case reconcile.Locked:
		return resultLocked
	}
	return resultError
}

// runOnce reconciles a repository, records how it went, and returns the
// run's error.
func (a *Agent) runOnce(ctx context.Context, w *worker, reason string) error {
	log := a.log.With("repo", w.name)
	log.Info("reconciling", "reason", reason)
	w.startRun()
	started := time.Now()
	res, err := a.reconcile(ctx, w)
	took := time.Since(started)
	outcome := reconcile.OutcomeOf(res, err)
	w.endRun(ctx, outcome, err)
	result := resultOf(outcome)
	a.metrics.recordRun(w.name, result, took, res, time.Now())
	switch result {
	case resultSuccess, resultNotConverged:
		c := res.Counts
		attrs := []any{"result", result, "took", took.Round(time.Millisecond), "created", c.Created, "deleted", c.Deleted,
			"replaced", c.Replaced, "failedNodes", c.FailedNodes, "failedCalls", c.FailedCalls}
		if !res.Commit.IsZero() {
			attrs = append(attrs, "commit", res.Commit.String()[:12])
		}
		if result == resultSuccess {
			log.Info("reconciled: converged", attrs...)
			break
		}
		attrs = append(attrs, "why", strings.Join(res.NotConverged, "; "))
		log.Warn("reconciled, but not converged: the clouds still differ from the specs", attrs...)
	case resultLocked:
		log.Info("another reconciler holds the lock; trying again once it expires, or at the next scheduled run if sooner", "result", result, "err", err)
	default:
		log.Error("reconcile failed", "result", result, "took", took.Round(time.Millisecond), "err", err)
	}
	w.finished.Add(1)
	return err
}
