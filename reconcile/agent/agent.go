// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gpufleet/gpufleet/providers/clouds"
	"github.com/gpufleet/gpufleet/reconcile"
	"github.com/gpufleet/gpufleet/reconcile/notify"
	"github.com/gpufleet/gpufleet/schema/catalog"
	"github.com/gpufleet/gpufleet/schema/redact"
)

// Defaults of Options.
const (
	DefaultInterval   = 5 * time.Minute
	DefaultJitter     = 0.1
	DefaultMaxPayload = 1 << 20
	// GitHub gives up on a delivery after ten seconds, and Kubernetes
	// sends SIGKILL thirty seconds after SIGTERM by default.
	defaultShutdownTimeout = 10 * time.Second
)

// Repo is a fleet repository the agent reconciles.
type Repo struct {
	// URL is what reconcile.Open takes: a remote or a local checkout.
	URL string
	// Branch to reconcile; empty means the remote's default branch.
	Branch string
}

// ParseRepo reads a --repo argument: a URL, optionally followed by
// #branch. A branch given this way wins over fallbackBranch.
func ParseRepo(arg, fallbackBranch string) Repo {
	// Git URLs never carry a fragment, so # is free to name the branch.
	if url, branch, ok := strings.Cut(arg, "#"); ok && url != "" && branch != "" {
		return Repo{URL: url, Branch: branch}
	}
	return Repo{URL: arg, Branch: fallbackBranch}
}

// Options configure an agent.
type Options struct {
	Repos []Repo
	// Interval between scheduled runs of a repository; DefaultInterval
	// when zero.
	Interval time.Duration
	// Jitter spreads each interval by up to this share either way, so
	// agents restarted together do not hit the clouds together; zero
	// keeps it exact. DefaultJitter is a good value.
	Jitter float64
	// WorkDir is where remote repositories are cloned, one directory each.
	WorkDir string
	// LockWait is how long a run waits for another reconciler's lock.
	LockWait time.Duration
	// LockTTL is how long a run's lock outlives it if it stops renewing
	// it; reconcile.DefaultLockTTL when zero.
	LockTTL time.Duration
	// Parallelism bounds the cloud calls in flight while applying.
	Parallelism int
	// Holder names this agent in the repository lock.
	Holder string
	// Endpoints point the providers at the emulator; empty for real clouds.
	Endpoints clouds.Endpoints
	// Catalog is what runs plan with until a refresh replaces it;
	// catalog.Default() when nil.
	Catalog *catalog.Catalog
	// Refresh, when set, refreshes the catalog every RefreshEvery: runs
	// that start after a refresh plan with the catalog it returned, and a
	// refresh that fails leaves them the one they had.
	Refresh      Refresher
	RefreshEvery time.Duration
	// Secret verifies the signature of webhooks and triggers. Without it
	// neither endpoint is served: an unsigned trigger is never trusted.
	Secret []byte
	// MaxPayload is the largest request body read; DefaultMaxPayload
	// when zero.
	MaxPayload int64
	// ShutdownDelay keeps serving, with /readyz failing, this long after
	// the context ends, so a load balancer stops sending requests before
	// the server stops taking them.
	ShutdownDelay time.Duration
	// ShutdownTimeout bounds waiting for requests in flight at shutdown.
	ShutdownTimeout time.Duration
	Log             *slog.Logger
	// Secrets are what every run masks in what it writes and sends; the
	// environment's secrets and credentials when nil.
	Secrets *redact.Set
	// Shard, when it has several replicas, keeps the repositories of this
	// replica's shard and leaves the others to theirs.
	Shard Shard
	// Peer, when set, is replica n's base URL (a StatefulSet pod's, through
	// its headless Service): a webhook for another shard's repository is
	// passed on there. Without it such a webhook is ignored.
	Peer func(ordinal int) string
}

// Agent reconciles repositories on a schedule and on triggers.
type Agent struct {
	opts         Options
	log          *slog.Logger
	metrics      *Metrics
	workers      []*worker
	shuttingDown atomic.Bool
	// deliveries are the GitHub delivery ids accepted lately.
	deliveries *deliveries
	// notifier tells of every repository's runs, remembering across them
	// what it told.
	notifier *notify.Notifier
	// others are the repositories other replicas' shards hold.
	others []*worker
	// catalogs is the catalog runs plan with, and how its refreshes go.
	catalogs catalogs

	// reconcile runs one reconciliation of a repository; tests replace it
	// to control when runs start and end.
	reconcile func(ctx context.Context, w *worker) (*reconcile.Result, error)
}

// New checks the options and sets up an agent; Serve runs it.
func New(opts Options) (*Agent, error) {
	if len(opts.Repos) == 0 {
		return nil, errors.New("no repository to reconcile: give at least one --repo")
	}
	if opts.Interval == 0 {
		opts.Interval = DefaultInterval
	}
	if opts.Interval < 0 {
		return nil, fmt.Errorf("the interval must be positive, not %s", opts.Interval)
	}
	if opts.Jitter < 0 || opts.Jitter >= 1 {
		return nil, fmt.Errorf("the jitter is a share of the interval from 0 up to 1, not %g", opts.Jitter)
	}
	if opts.MaxPayload <= 0 {
		opts.MaxPayload = DefaultMaxPayload
	}
	if opts.ShutdownTimeout <= 0 {
		opts.ShutdownTimeout = defaultShutdownTimeout
	}
	if opts.WorkDir == "" {
		opts.WorkDir = filepath.Join(".gpufleet", "clones")
	}
	if opts.Catalog == nil {
		opts.Catalog = catalog.Default()
	}
	if opts.Refresh != nil && opts.RefreshEvery <= 0 {
		return nil, fmt.Errorf("the catalog refresh interval must be positive, not %s", opts.RefreshEvery)
	}
	if opts.Holder == "" {
		// The lock tells holders apart by name: an empty one would let
		// two nameless agents both think they hold it.
		host, _ := os.Hostname()
		opts.Holder = fmt.Sprintf("%s:%d", host, os.Getpid())
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	a := &Agent{notifier: notify.New(os.Getenv), opts: opts, log: opts.Log, metrics: NewMetrics(opts.Log),
		deliveries: newDeliveries(deliveryWindow, maxDeliveries, time.Now)}
	a.reconcile = a.reconcileRepo
	a.catalogs.current = opts.Catalog
	a.metrics.catalog.setCatalog(opts.Catalog)
	if err := opts.Shard.check(); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, repo := range opts.Repos {
		if repo.URL == "" {
			return nil, errors.New("an empty --repo")
		}
		w := newWorker(repo, opts)
		if seen[w.id] {
			return nil, fmt.Errorf("%s is configured twice", w.name)
		}
		seen[w.id] = true
		if !opts.Shard.owns(w.id) {
			a.others = append(a.others, w)
			continue
		}
		w.workDir = filepath.Join(opts.WorkDir, workDirName(repo))
		a.workers = append(a.workers, w)
		a.metrics.addRepo(w.name, time.Now())
	}
	return a, nil
}

// workDirName is the clone directory of a repository under the work
// directory: the name `gpufleet reconcile` uses for the same repository,
// with the branch mixed in when one is named so two branches never share a
// clone.
func workDirName(repo Repo) string {
	key := repo.URL
	if repo.Branch != "" {
		key += "#" + repo.Branch
	}
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:6])
}

// Metrics are the agent's metrics, for tests and embedding.
func (a *Agent) Metrics() *Metrics { return a.metrics }

// Serve runs the schedule of every repository and serves HTTP on l until
// ctx ends. Then it shuts down in order: /readyz fails at once; after
// ShutdownDelay the HTTP server stops; the runs in progress are cancelled,
// which makes each record its status and release the lock on its way out;
// and Serve waits for them. It returns nil after a clean shutdown.
func (a *Agent) Serve(ctx context.Context, l net.Listener) error {
	// Runs get a context of their own, so they outlive ctx until the HTTP
	// server has stopped taking triggers.
	runCtx, cancelRuns := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelRuns()
	var runs sync.WaitGroup
	for _, w := range a.workers {
		runs.Go(func() { a.loop(runCtx, w) })
	}
	if a.opts.Refresh != nil {
		runs.Go(func() { a.refreshLoop(runCtx) })
	}

	srv := &http.Server{
		Handler:           a.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(a.log.Handler(), slog.LevelWarn),
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	if a.opts.Shard.Replicas > 1 {
		var mine []string
		for _, w := range a.workers {
			mine = append(mine, w.name)
		}
		a.log.Info("sharded", "replica", a.opts.Shard.Ordinal, "of", a.opts.Shard.Replicas, "repos", mine, "left to other replicas", len(a.others))
	}
	a.log.Info("serving", "addr", l.Addr().String(), "repos", len(a.workers),
		"interval", a.opts.Interval, "jitter", a.opts.Jitter, "webhooks", len(a.opts.Secret) > 0)
	if len(a.opts.Secret) == 0 {
		a.log.Warn("GPUFLEET_WEBHOOK_SECRET is not set: /webhook/github and /trigger are off, runs follow the schedule only")
	}

	var serveErr error
	select {
	case <-ctx.Done():
		a.log.Info("shutting down", "cause", context.Cause(ctx))
	case serveErr = <-served:
		a.log.Error("the HTTP server stopped", "err", serveErr)
	}
	a.shuttingDown.Store(true)
	if a.opts.ShutdownDelay > 0 && serveErr == nil {
		time.Sleep(a.opts.ShutdownDelay)
	}
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.opts.ShutdownTimeout)
	if err := srv.Shutdown(stopCtx); err != nil {
		a.log.Warn("requests still in flight at shutdown were cut off", "err", err)
	}
	cancel()
	cancelRuns()
	runs.Wait()
	a.log.Info("stopped")
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		return fmt.Errorf("serving HTTP, %w", serveErr)
	}
	return nil
}

// Trigger asks for a run of every configured repository that ref names (a
// URL in any of its forms, or owner/name), and returns their names. A run
// in progress is followed by exactly one more, however many triggers came
// meanwhile.
func (a *Agent) Trigger(ref, reason string) []string {
	var names []string
	for _, w := range a.match(ref) {
		w.trigger(reason)
		names = append(names, w.name)
	}
	return names
}

// Readiness is what /readyz answers.
type Readiness struct {
	Ready  bool   `json:"-"`
	Status string `json:"status"`
	// NotReady names each repository that is not ready, with why: the
	// first line of the error that stopped its latest run before the
	// specs loaded, or that its first run has not got that far yet.
	NotReady map[string]string `json:"notReady,omitempty"`
	// Catalog is there while the catalog's refreshes fail: runs plan with
	// the last good one, which it names.
	Catalog *CatalogCondition `json:"catalog,omitempty"`
}

// Ready reports whether the latest run of every repository got as far as
// loading its specs, and the agent is not shutting down. A run that
// loaded the specs and failed afterwards keeps its repository ready: the
// agent serves it, and the runs metric says the run failed.
func (a *Agent) Ready() Readiness {
	if a.shuttingDown.Load() {
		return Readiness{Status: "shutting down"}
	}
	notReady := map[string]string{}
	for _, w := range a.workers {
		if ready, why := w.readiness(); !ready {
			notReady[w.name] = why
		}
	}
	if len(notReady) > 0 {
		return Readiness{Status: fmt.Sprintf("%d of %d repositories not ready", len(notReady), len(a.workers)), NotReady: notReady, Catalog: a.catalogCondition()}
	}
	return Readiness{Ready: true, Status: "ready", Catalog: a.catalogCondition()}
}
