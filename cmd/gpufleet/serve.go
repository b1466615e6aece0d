// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpufleet/gpufleet/providers/clouds"
	"github.com/gpufleet/gpufleet/reconcile"
	"github.com/gpufleet/gpufleet/reconcile/agent"
	"github.com/gpufleet/gpufleet/reconcile/catalogs"
)

// serveFlags are the flags of serve.
type serveFlags struct {
	repos                   []string
	branch, workDir, listen string
	interval, lockWait      time.Duration
	lockTTL                 time.Duration
	shutdownDelay           time.Duration
	jitter                  float64
	maxPayload              int64
	parallelism             int
	replicas, ordinal       int
	ordinalGiven            bool
	peerURL                 string
	emulated                bool
	simState                string
	// catalogRefresh is --catalog-refresh when given, nil otherwise.
	catalogRefresh *time.Duration
}

func (a *app) serveCommand() *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Reconcile repositories on a schedule and on webhooks, serving metrics and health checks",
		Long: `serve runs gpufleet unattended. It reconciles each --repo at once, then
every --interval (spread by --jitter), and at once when a signed GitHub push
webhook (POST /webhook/github) or trigger (POST /trigger) names it. Runs of
one repository never overlap: a trigger during a run asks for exactly one
more run after it.

Every --catalog-refresh it refreshes the prices as catalog refresh does,
into the catalog file, and the runs after it plan with them; a refresh that
fails leaves them the last good catalog, and /readyz and the metrics say so.
By default it refreshes every 6h when some cloud's credentials are in the
environment or the prices are an emulator's, and otherwise never.

It serves Prometheus metrics on /metrics, liveness on /healthz and
readiness on /readyz. The webhook secret comes from GPUFLEET_WEBHOOK_SECRET
only, never a flag; without it the webhook and trigger endpoints are off.

On SIGTERM or SIGINT it stops the HTTP server, cancels the runs in
progress (each still records its status and releases the repository
lock), waits for them, and exits 0.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := envDefaults(cmd, map[string]string{
				"interval":        "GPUFLEET_INTERVAL",
				"jitter":          "GPUFLEET_JITTER",
				"lock-wait":       "GPUFLEET_LOCK_WAIT",
				"lock-ttl":        "GPUFLEET_LOCK_TTL",
				"shutdown-delay":  "GPUFLEET_SHUTDOWN_DELAY",
				"replicas":        "GPUFLEET_REPLICAS",
				"ordinal":         "GPUFLEET_ORDINAL",
				"peer-url":        "GPUFLEET_PEER_URL",
				"catalog-refresh": "GPUFLEET_CATALOG_REFRESH",
			}); err != nil {
				return err
			}
			f.ordinalGiven = cmd.Flags().Changed("ordinal")
			if !cmd.Flags().Changed("catalog-refresh") {
				f.catalogRefresh = nil
			}
			return a.serve(cmd.Context(), f)
		},
	}
	flags := cmd.Flags()
	flags.StringArrayVar(&f.repos, "repo", splitList(os.Getenv("GPUFLEET_REPO")), "fleet repository to reconcile, a URL or local checkout, with an optional #branch; repeat for more [GPUFLEET_REPO, comma-separated]")
	flags.StringVar(&f.branch, "branch", envOr("GPUFLEET_BRANCH", ""), "branch of repositories that name none; the default branch when empty [GPUFLEET_BRANCH]")
	flags.StringVar(&f.workDir, "workdir", envOr("GPUFLEET_WORKDIR", filepath.Join(".gpufleet", "clones")), "where remote repositories are cloned, one directory each [GPUFLEET_WORKDIR]")
	flags.StringVar(&f.listen, "listen", envOr("GPUFLEET_LISTEN", ":8080"), "address of the HTTP server [GPUFLEET_LISTEN]")
	flags.DurationVar(&f.interval, "interval", agent.DefaultInterval, "time between scheduled runs of a repository [GPUFLEET_INTERVAL]")
	flags.Float64Var(&f.jitter, "jitter", agent.DefaultJitter, "share of the interval each pause may be longer or shorter, so agents drift apart; 0 for none [GPUFLEET_JITTER]")
	flags.DurationVar(&f.lockWait, "lock-wait", 0, "how long a run waits for another reconciler's lock; 0 gives up, and tries again once that lock expires or at the next run if sooner [GPUFLEET_LOCK_WAIT]")
	flags.DurationVar(&f.lockTTL, "lock-ttl", reconcile.DefaultLockTTL, "how long the repository lock outlives a run that stopped renewing it (a crashed or evicted replica); renewed every quarter of it [GPUFLEET_LOCK_TTL]")
	flags.DurationVar(&f.shutdownDelay, "shutdown-delay", 0, "how long to keep serving, with /readyz failing, after SIGTERM before stopping [GPUFLEET_SHUTDOWN_DELAY]")
	flags.Int64Var(&f.maxPayload, "max-payload", agent.DefaultMaxPayload, "largest webhook or trigger body accepted, in bytes; larger ones get 413")
	flags.IntVar(&f.parallelism, "parallelism", 16, "cloud calls in flight while applying")
	flags.IntVar(&f.replicas, "replicas", 1, "how many replicas share the repositories; each reconciles its shard [GPUFLEET_REPLICAS]")
	flags.IntVar(&f.ordinal, "ordinal", -1, "this replica's number, from 0; read from the host name's -N suffix (a StatefulSet pod's) when not given [GPUFLEET_ORDINAL]")
	flags.StringVar(&f.peerURL, "peer-url", "", "replica N's base URL with %d for N, e.g. http://gpufleet-%d.gpufleet-replicas:8080: webhooks for another shard's repository are passed on there [GPUFLEET_PEER_URL]")
	f.catalogRefresh = new(time.Duration)
	flags.DurationVar(f.catalogRefresh, "catalog-refresh", 0, "how often to refresh the prices into the catalog file (GPUFLEET_CATALOG), as catalog refresh does; 0 never; by default 6h when some cloud's credentials are in the environment or the prices are an emulator's, else never [GPUFLEET_CATALOG_REFRESH]")
	flags.BoolVar(&f.emulated, "sim", false, "run against the embedded cloud emulator instead of real clouds")
	flags.StringVar(&f.simState, "sim-state", envOr("GPUFLEET_SIM_STATE", ".gpufleet/sim-state.json"), "the emulator's state file, with --sim [GPUFLEET_SIM_STATE]")
	return cmd
}

// serve runs the agent until ctx ends, which Main ties to SIGTERM and
// SIGINT.
func (a *app) serve(ctx context.Context, f serveFlags) error {
	// Before anything starts: a replica that misreads its shard would
	// reconcile repositories another replica holds, or none at all.
	shard, err := shardOf(f.ordinal, f.ordinalGiven, f.replicas)
	if err != nil {
		return err
	}
	var repos []agent.Repo
	for _, r := range f.repos {
		repos = append(repos, agent.ParseRepo(r, f.branch))
	}
	catalogPath := envOr("GPUFLEET_CATALOG", defaultCatalogPath)
	cat, err := loadCatalog(catalogPath, os.Getenv("GPUFLEET_CATALOG") != "")
	if err != nil {
		return err
	}
	endpoints := clouds.EndpointsFromEnv()
	var emulatedPrices *catalogs.Endpoints
	if f.emulated {
		emu, closeClouds, err := a.emulatedClouds(f.simState, cat)
		if err != nil {
			return err
		}
		// Closing saves the emulated clouds, after the last run is over.
		defer closeClouds()
		endpoints = clouds.Endpoints{AWS: emu.Endpoints.EC2, Azure: emu.Endpoints.ARM, GCP: emu.Endpoints.GCE, Lambda: emu.Endpoints.Lambda, OCI: emu.Endpoints.OCI}
		ep := emulatorPrices(emu)
		emulatedPrices = &ep
	}
	refresh, refreshEvery, err := a.catalogRefresher(f.catalogRefresh, servePriceSources(emulatedPrices, os.Getenv), catalogPath)
	if err != nil {
		return err
	}
	var peer func(int) string
	if f.peerURL != "" {
		if strings.Count(f.peerURL, "%d") != 1 {
			return fmt.Errorf("--peer-url must hold %%d once, for the replica's number: %q", f.peerURL)
		}
		peer = func(n int) string { return fmt.Sprintf(f.peerURL, n) }
	}
	agent.Version = buildVersion()
	ag, err := agent.New(agent.Options{
		Shard:         shard,
		Peer:          peer,
		Repos:         repos,
		Interval:      f.interval,
		Jitter:        f.jitter,
		WorkDir:       f.workDir,
		LockWait:      f.lockWait,
		LockTTL:       f.lockTTL,
		Parallelism:   f.parallelism,
		Holder:        holder(),
		Endpoints:     endpoints,
		Catalog:       cat,
		Refresh:       refresh,
		RefreshEvery:  refreshEvery,
		Secret:        []byte(os.Getenv("GPUFLEET_WEBHOOK_SECRET")),
		MaxPayload:    f.maxPayload,
		ShutdownDelay: f.shutdownDelay,
		Log:           a.log,
		Secrets:       a.secrets,
	})
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", f.listen)
	if err != nil {
		return fmt.Errorf("--listen: %w", err)
	}
	return ag.Serve(ctx, l)
}

// envDefaults sets flags the command line left alone from the environment,
// parsed as the flag parses its own value.
func envDefaults(cmd *cobra.Command, env map[string]string) error {
	for flag, name := range env {
		v, ok := os.LookupEnv(name)
		if !ok || v == "" || cmd.Flags().Changed(flag) {
			continue
		}
		if err := cmd.Flags().Set(flag, v); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}

// splitList reads a comma-separated environment variable.
func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// shardOf is this replica's shard: the ordinal given, or the host name's.
// A count below one, or an ordinal outside 0 to replicas-1, is refused
// rather than read as a single replica that keeps everything.
func shardOf(ordinal int, ordinalGiven bool, replicas int) (agent.Shard, error) {
	if replicas < 1 {
		return agent.Shard{}, fmt.Errorf("--replicas is %d: it is how many replicas share the repositories, at least 1", replicas)
	}
	if ordinalGiven && (ordinal < 0 || ordinal >= replicas) {
		return agent.Shard{}, fmt.Errorf("--ordinal is %d: with --replicas %d it must be from 0 to %d", ordinal, replicas, replicas-1)
	}
	if replicas == 1 {
		return agent.Shard{}, nil
	}
	if !ordinalGiven {
		host, _ := os.Hostname()
		n, err := agent.OrdinalFromHostname(host)
		if err != nil {
			return agent.Shard{}, err
		}
		if n >= replicas {
			return agent.Shard{}, fmt.Errorf("the host name %q gives ordinal %d: with --replicas %d it must be from 0 to %d", host, n, replicas, replicas-1)
		}
		ordinal = n
	}
	return agent.Shard{Ordinal: ordinal, Replicas: replicas}, nil
}
