// SPDX-License-Identifier: Apache-2.0

package main

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/reconcile"
	"github.com/gpufleet/gpufleet/reconcile/notify"
	"github.com/gpufleet/gpufleet/reconcile/render"
)

// runFlags are what reconcile, apply and demo share.
type runFlags struct {
	repo, branch, workDir, output string
	catalogFile                   string
	catalogExplicit               bool
	dryRun, emulated              bool
	// detail lists every node under its grouped line.
	detail            bool
	simState          string
	lockWait, lockTTL time.Duration
	parallelism       int
	// saved is the plan apply PLANFILE carries out.
	saved *reconcile.SavedPlan
	// fleets limits what is applied to these fleets.
	fleets []string
}

func (f *runFlags) register(cmd *cobra.Command, remote bool) {
	cmd.Flags().StringVar(&f.repo, "repo", envOr("GPUFLEET_REPO", "."), "fleet repository: a URL to clone or a local checkout [GPUFLEET_REPO]")
	if remote {
		cmd.Flags().StringVar(&f.branch, "branch", envOr("GPUFLEET_BRANCH", ""), "branch to reconcile; the default branch when empty [GPUFLEET_BRANCH]")
		cmd.Flags().StringVar(&f.workDir, "workdir", envOr("GPUFLEET_WORKDIR", ""), "where remote repositories are cloned; .gpufleet/clones/<hash> when empty [GPUFLEET_WORKDIR]")
		cmd.Flags().BoolVar(&f.dryRun, "dry-run", false, "plan only: change no cloud and commit nothing")
	}
	cmd.Flags().StringVarP(&f.output, "output", "o", "text", "output format: text or json")
	cmd.Flags().BoolVar(&f.emulated, "sim", false, "run against the embedded cloud emulator instead of real clouds")
	cmd.Flags().StringVar(&f.catalogFile, "catalog", envOr("GPUFLEET_CATALOG", defaultCatalogPath), "price catalog file; the embedded snapshot when it is missing or older [GPUFLEET_CATALOG]")
	cmd.Flags().StringVar(&f.simState, "sim-state", envOr("GPUFLEET_SIM_STATE", ".gpufleet/sim-state.json"), "the emulator's state file, with --sim [GPUFLEET_SIM_STATE]")
	cmd.Flags().DurationVar(&f.lockWait, "lock-wait", 0, "how long to wait for another reconciler's lock; 0 gives up at once")
	cmd.Flags().DurationVar(&f.lockTTL, "lock-ttl", reconcile.DefaultLockTTL, "how long the repository lock outlives a run that stopped renewing it (one that was killed); renewed every quarter of it")
	cmd.Flags().IntVar(&f.parallelism, "parallelism", 16, "cloud calls in flight while applying")
	cmd.Flags().BoolVar(&f.detail, "detail", false, "list every node's create or delete under its grouped line; -o json always has them")
	cmd.Flags().StringArrayVar(&f.fleets, "fleet", nil, "apply only this fleet's actions (all fleets are still placed together); repeat for several")
}

func (a *app) reconcileCommand() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "reconcile",
		Short: "Make the clouds match a fleet repository and commit the status back",
		Long: `reconcile clones (or fetches) the fleet repository, observes what runs in
every enabled cloud, plans the cheapest placement, applies the difference
with failover when an offer runs out of capacity, and commits status/ back
to the repository. A second run with nothing to do changes nothing.

The plan and what was applied are printed grouped, a line per workload,
offer and action with the count of nodes; --detail lists the nodes of each
line too, and -o json has every action. The summary counts nodes created,
deleted and failed: a node whose pool ran out and that launched elsewhere
in a later round is created, and counted as re-placed; failed cloud calls
are counted apart.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.catalogExplicit = cmd.Flags().Changed("catalog") || os.Getenv("GPUFLEET_CATALOG") != ""
			return a.reconcile(cmd.Context(), f, true)
		},
	}
	f.register(cmd, true)
	return cmd
}

func (a *app) applyCommand() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "apply [PLANFILE]",
		Short: "Apply a saved plan, or plan and apply a local checkout",
		Long: `apply PLANFILE carries out a plan saved by gpufleet plan -out PLANFILE,
exactly: its creates and deletes, nothing else, with no failover beyond them.
It refuses the plan if the specs, what runs or the prices changed since it
was made, saying what changed. It then commits the status, as reconcile does,
so later plans see what runs.

apply without a file plans and applies a local Git checkout (--repo, the
current directory by default; not a URL: reconcile clones), with failover,
and writes no status: the next reconcile records what runs.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f.catalogExplicit = cmd.Flags().Changed("catalog") || os.Getenv("GPUFLEET_CATALOG") != ""
			if len(args) == 1 {
				saved, err := reconcile.ReadSavedPlan(args[0])
				if err != nil {
					return err
				}
				f.saved = saved
				return a.reconcile(cmd.Context(), f, true)
			}
			return a.reconcile(cmd.Context(), f, false)
		},
	}
	f.register(cmd, false)
	return cmd
}

// reconcile runs one reconciliation and prints what it did.
func (a *app) reconcile(ctx context.Context, f runFlags, commit bool) error {
	if err := outputFormat(f.output, "text", "json"); err != nil {
		return err
	}
	workDir := cmp.Or(f.workDir, defaultWorkDir(f.repo))
	checkout, err := reconcile.Open(ctx, reconcile.SourceOptions{URL: f.repo, Branch: f.branch, WorkDir: workDir})
	if err != nil {
		return err
	}
	if (!commit || f.saved != nil) && checkout.Remote {
		return fmt.Errorf("apply works on a local checkout; use reconcile for %s", f.repo)
	}
	cat, err := loadCatalog(cmp.Or(f.catalogFile, defaultCatalogPath), f.catalogExplicit)
	if err != nil {
		return err
	}
	endpoints, closeClouds, err := a.cloudEndpoints(f.emulated, f.simState, cat)
	if err != nil {
		return err
	}
	defer closeClouds()
	opts := reconcile.Options{
		Connect:     reconcile.ConnectTo(cat, endpoints),
		Catalog:     cat,
		Log:         a.log,
		DryRun:      f.dryRun,
		Commit:      commit,
		Parallelism: f.parallelism,
		Lock:        reconcile.LockOptions{Holder: holder(), Wait: f.lockWait, TTL: f.lockTTL},
		Saved:       f.saved,
		Secrets:     a.secrets,
		Notifier:    notify.New(os.Getenv),
		Fleets:      f.fleets,
	}
	var shown *progress
	planShown := false
	if f.output == "text" && a.logFormat != "json" {
		// The plan first, on stdout; then the progress, live on stderr;
		// then the summary. JSON logs are for machines, which keep a line
		// per launch instead.
		shown = newProgress(a.stderr)
		opts.Applying = func(round int, report *planner.Report, actions []planner.Action) {
			// On a terminal, someone watches: the plan comes first. Elsewhere
			// the output is read whole, opening with how the run ended.
			if round == 1 && report != nil && isTerminal(a.stdout) {
				if err := a.textOut(func(w io.Writer) error {
					head, _ := checkout.Head()
					return render.View{Detail: f.detail}.RunHeader(w, checkout.Dir, head.String(), report)
				}); err == nil {
					planShown = true
				}
			}
			shown.applying(round, report, actions)
		}
		opts.Applied = shown.applied
	}
	started := time.Now()
	result, runErr := reconcile.Run(ctx, checkout, opts)
	if shown != nil {
		shown.done()
	}
	outcome := reconcile.OutcomeOf(result, runErr)
	if result != nil {
		if err := a.printRun(f, checkout, result, outcome, commit, planShown, time.Since(started)); err != nil {
			return err
		}
	}
	if f.saved != nil && outcome == reconcile.NotConverged && result.Counts.FailedNodes == 0 {
		// A saved plan's apply succeeds when it did what the plan said:
		// what is left — nodes the plan could not place, deletions it
		// rolls over later runs — was in the plan that was reviewed, and
		// is the scheduled reconcile's to carry on.
		fmt.Fprintln(a.stderr, "gpufleet: applied the reviewed plan in full; the fleets are not converged, as the plan showed, and the scheduled reconcile carries on from here")
		outcome = reconcile.Converged
	}
	if err := runExit(outcome, runErr, f.dryRun); err != nil {
		return err
	}
	// A run interrupted once its work was done still did not end as it
	// would have: what it had to tell was cut short.
	if ctx.Err() != nil {
		return fmt.Errorf("interrupted (%v) as the run ended: its status is recorded, its notifications may not have been sent", context.Cause(ctx))
	}
	return nil
}

// Exit codes of reconcile, apply and demo, as README's table gives them.
const (
	exitConverged    = 0
	exitError        = 1
	exitNotConverged = 2
	exitLocked       = 3
)

// runExit turns how a run ended into the command's error: nil for a
// converged run (and for any dry run that finished), the run's error for a
// failed one, and an exit code alone when the output already said why.
func runExit(outcome reconcile.Outcome, err error, dryRun bool) error {
	switch outcome {
	case reconcile.Locked:
		return lockedError{err}
	case reconcile.Failed:
		return err
	case reconcile.NotConverged:
		if dryRun {
			return nil
		}
		return exitCode(exitNotConverged)
	}
	return nil
}

// lockedError prints the lock holder's message and exits 3.
type lockedError struct{ err error }

func (e lockedError) Error() string { return e.err.Error() }
func (e lockedError) Unwrap() error { return e.err }
func (e lockedError) ExitCode() int { return exitLocked }

// defaultWorkDir is where a remote repository is cloned when --workdir is
// not given: a directory of its own under .gpufleet/clones.
func defaultWorkDir(repo string) string {
	sum := sha256.Sum256([]byte(repo))
	return filepath.Join(".gpufleet", "clones", hex.EncodeToString(sum[:6]))
}

func holder() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s:%d", host, os.Getpid())
}

func (a *app) printRun(f runFlags, c *reconcile.Checkout, res *reconcile.Result, outcome reconcile.Outcome, commit, planShown bool, took time.Duration) error {
	if f.output == "json" {
		return a.writeOutput("run", newRunOutput(res, outcome))
	}
	run := render.Run{
		Dir: c.Dir, Revision: res.Revision, Report: res.Report, Applied: res.Applied, Rounds: res.Rounds,
		Statuses: res.Statuses, DryRun: f.dryRun, Commits: commit, Converged: outcome == reconcile.Converged, NotConverged: res.NotConverged, Took: took,
		PlanShown: planShown, Counts: res.Counts, Detail: f.detail,
	}
	if !res.Commit.IsZero() {
		if commit, err := c.Repo.CommitObject(res.Commit); err == nil {
			run.Commit = fmt.Sprintf("%.12s: %s", res.Commit, firstLine(commit.Message))
		}
	}
	return a.textOut(func(w io.Writer) error { return render.RunText(w, run) })
}

func firstLine(s string) string {
	for i, r := range s {
		if r == '\n' {
			return s[:i]
		}
	}
	return s
}
