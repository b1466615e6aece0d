// SPDX-License-Identifier: Apache-2.0

package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers/prices"
	"github.com/gpufleet/gpufleet/reconcile"
	"github.com/gpufleet/gpufleet/reconcile/render"
	"github.com/gpufleet/gpufleet/reconcile/status"
	"github.com/gpufleet/gpufleet/schema"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

type planFlags struct {
	repo, base, observed, catalogFile, output string
	// out is where to save the plan for apply; "" saves none.
	out string
	// fleets narrows the plan to these fleets.
	fleets                    []string
	detailed, catalogExplicit bool
	// detail lists every node under its line.
	detail      bool
	maxPriceAge time.Duration
}

func (a *app) planCommand() *cobra.Command {
	var f planFlags
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "Plan the cheapest placement of a repository's fleets, offline, against the price catalog",
		Long: `plan loads a repository, places every fleet at the lowest cost the catalog
allows, and shows where each node goes, what it costs, why, and the actions
that would get there from what runs now. What runs is read from the
repository's status files (the last reconcile's view), or from --observed,
a JSON list of instances; no cloud is contacted.

With --base REF it plans a pull request: the checkout's specs against those
of REF, with the cost before, after and the difference, for a review
comment (-o markdown) or a machine (-o json).

With -out FILE it also saves the plan, for gpufleet apply FILE to carry out
exactly, once reviewed; apply refuses it if the specs, what runs or the
prices changed since.

Changes are grouped, a line per workload, offer, action and cause, with
the count of nodes and their cost; --detail lists the nodes of each line
too (in Markdown, the first few of each). -o json always has every action.

With --detailed-exitcode the exit status is 0 when there is nothing to do,
1 on an error and 2 when there are changes, as Terraform does.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := outputFormat(f.output, "text", "json", "markdown"); err != nil {
				return err
			}
			f.catalogExplicit = cmd.Flags().Changed("catalog") || os.Getenv("GPUFLEET_CATALOG") != ""
			if f.base != "" {
				if f.out != "" {
					return errors.New("-out saves a plan to apply; a pull request's plan (--base) is for review: plan -out on the merged commit")
				}
				return a.review(f)
			}
			return a.plan(f)
		},
	}
	cmd.Flags().StringVar(&f.repo, "repo", envOr("GPUFLEET_REPO", "."), "fleet repository directory [GPUFLEET_REPO]")
	cmd.Flags().StringVar(&f.base, "base", "", "revision to compare with, e.g. the pull request's base commit")
	cmd.Flags().StringArrayVar(&f.fleets, "fleet", nil, "plan only this fleet's actions (all fleets are still placed together); with --base, compare only this fleet; repeat for several")
	cmd.Flags().StringVar(&f.out, "out", "", "save the plan to this file, for gpufleet apply FILE (also spelt -out)")
	cmd.Flags().StringVar(&f.observed, "observed", "", "JSON file listing the instances that run now; the status files when empty")
	cmd.Flags().StringVar(&f.catalogFile, "catalog", envOr("GPUFLEET_CATALOG", defaultCatalogPath), "price catalog file, as gpufleet catalog refresh writes it; the embedded snapshot when it is missing or older [GPUFLEET_CATALOG]")
	cmd.Flags().StringVarP(&f.output, "output", "o", "text", "output format: text, json or markdown")
	cmd.Flags().BoolVar(&f.detailed, "detailed-exitcode", false, "exit 2 when there are changes, 0 when there are none")
	cmd.Flags().BoolVar(&f.detail, "detail", false, "list every node's create or delete under its grouped line; -o json always has them")
	cmd.Flags().DurationVar(&f.maxPriceAge, "max-price-age", catalog.MaxPriceAge, "warn when the prices are older than this")
	return cmd
}

// context is what a plan needs besides the specs.
type planContext struct {
	cat      *catalog.Catalog
	observed []planner.Instance
	// status is what the status files say of offers, quotas and tokens.
	status   *status.Snapshot
	warnings []string
	// observedFrom says how old observed is, when it is the status's.
	observedFrom *planner.ObservedState
}

// planContext is what a plan over cat needs beside the specs; clouds are
// the clouds they enable, whose prices it says are stale when they are.
func (a *app) planContext(f planFlags, cat *catalog.Catalog, repoDir, statusDir string, clouds []string) (*planContext, error) {
	pc := &planContext{cat: cat}
	var err error
	now := now()
	if pc.cat.Emulated() {
		pc.warnings = append(pc.warnings, "the prices are the emulator's, not the clouds' (catalog refresh --sim); refresh them with gpufleet catalog refresh")
	}
	if stale := pc.cat.Staleness(now, f.maxPriceAge, clouds...); stale != "" {
		pc.warnings = append(pc.warnings, stale)
	}
	// What the status says of offers and quotas holds whatever runs: an
	// --observed list replaces only the instances.
	if pc.status, err = status.ReadObserved(repoDir, statusDir, now); err != nil {
		return nil, err
	}
	pc.observed = pc.status.Observed
	if f.observed != "" {
		pc.observed, err = readObserved(f.observed)
	} else {
		pc.observedFrom = reconcile.ObservedFromStatus(repoDir, statusDir, pc.status.ObservedAt, now)
	}
	return pc, err
}

// input is a repository's planning input in the context: what runs, what is
// blocked, learned capacity and quotas, as the status says.
func (pc *planContext) input(r *schema.Repo) planner.Input {
	in := planner.NewInput(r, pc.cat)
	in.Observed, in.Blocked, in.Learned, in.Quotas = pc.observed, pc.status.Blocked, pc.status.Learned, pc.status.Quotas
	return in
}

// now is the time plans are made at; GPUFLEET_NOW pins it, so that
// recorded outputs stay reproducible.
func now() time.Time {
	if s := os.Getenv("GPUFLEET_NOW"); s != "" {
		if t, err := time.Parse(time.RFC3339, s); err == nil {
			return t
		}
	}
	return time.Now()
}

func (a *app) plan(f planFlags) error {
	// The specs are checked against the catalog the plan prices them
	// with: a region a refresh found is one a spec may name.
	cat, err := loadCatalog(f.catalogFile, f.catalogExplicit)
	if err != nil {
		return err
	}
	r, err := schema.LoadWithCatalog(f.repo, cat)
	if err != nil {
		return a.specErrors(f.repo, err)
	}
	pc, err := a.planContext(f, cat, f.repo, r.Config.Status.Dir, r.Config.Clouds.Enabled())
	if err != nil {
		return err
	}
	report, err := planReport(r, pc)
	if err != nil {
		return err
	}
	if len(f.fleets) > 0 {
		if err := knownFleets(r, f.fleets); err != nil {
			return err
		}
		report = report.Only(f.fleets)
	}
	if f.out != "" {
		if err := savePlan(f, r, pc, report); err != nil {
			return err
		}
	}
	if err := a.writeReport(report, f.output, render.View{Detail: f.detail}); err != nil {
		return err
	}
	if f.out != "" {
		// Where the plan went, and what runs it, after the plan itself;
		// beside JSON on stdout it goes to stderr.
		w := a.stdout
		if f.output == "json" {
			w = a.stderr
		}
		fmt.Fprintf(w, "\nSaved the plan to %s. To apply exactly these actions: gpufleet apply %s\n", f.out, shellQuote(f.out))
	}
	if creates, deletes := report.Changes.Counts(); f.detailed && (creates+deletes > 0 || len(report.Changes.Refused) > 0 || len(report.Changes.Deferred) > 0) {
		return exitCode(2)
	}
	return nil
}

// review plans a pull request's head against its base.
func (a *app) review(f planFlags) error {
	cat, err := loadCatalog(f.catalogFile, f.catalogExplicit)
	if err != nil {
		return err
	}
	headRepo, headErr := schema.LoadWithCatalog(f.repo, cat)
	headErrors, err := specErrorLines(headErr)
	if err != nil {
		return err
	}
	baseDir, err := os.MkdirTemp("", "gpufleet-base-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(baseDir)
	if err := reconcile.Export(f.repo, f.base, baseDir); err != nil {
		return err
	}
	baseRepo, baseErr := schema.LoadWithCatalog(baseDir, cat)
	baseErrors, err := specErrorLines(baseErr)
	if err != nil {
		return err
	}
	statusDir, clouds := "status", []string(nil)
	if headRepo != nil {
		statusDir, clouds = headRepo.Config.Status.Dir, headRepo.Config.Clouds.Enabled()
	}
	pc, err := a.planContext(f, cat, f.repo, statusDir, clouds)
	if err != nil {
		return err
	}
	var head *planner.Report
	if headRepo != nil {
		if head, err = planReport(headRepo, pc); err != nil {
			return err
		}
		if len(f.fleets) > 0 {
			if err := knownFleets(headRepo, f.fleets); err != nil {
				return err
			}
			head = head.Only(f.fleets)
		}
	}
	var base *planner.Plan
	if baseRepo != nil {
		if base, err = planner.Solve(pc.input(baseRepo)); err != nil {
			return err
		}
		if len(f.fleets) > 0 {
			// The base's fleets are placed together too, and compared
			// only where the head is.
			base = (&planner.Report{Plan: base}).Only(f.fleets).Plan
		}
	}
	review := planner.NewReview(head, base, headErrors, baseErrors)
	if head == nil {
		// A head that planned carries these in its plan already.
		review.Warnings = append(pc.warnings, review.Warnings...)
	}
	review.BaseCommit, review.HeadCommit = reconcile.Commits(f.repo, f.base)
	switch f.output {
	case "json":
		err = a.writeOutput("review", review)
	case "markdown":
		err = render.View{Detail: f.detail}.ReviewMarkdown(a.stdout, review)
	default:
		err = render.View{Detail: f.detail}.ReviewText(a.stdout, review)
	}
	switch {
	case err != nil:
		return err
	case head == nil:
		// The review said why, in the format asked for.
		return exitCode(1)
	}
	if creates, deletes := head.Changes.Counts(); f.detailed && (creates+deletes > 0 || len(head.Changes.Refused) > 0 || len(head.Changes.Deferred) > 0) {
		return exitCode(2)
	}
	return nil
}

// specErrorLines turns a load's errors into lines; any other error is
// returned as it is.
func specErrorLines(err error) ([]string, error) {
	if err == nil {
		return nil, nil
	}
	var problems schema.Errors
	if !errors.As(err, &problems) {
		return nil, err
	}
	lines := make([]string, len(problems))
	for i, p := range problems {
		lines[i] = p.Error()
	}
	return lines, nil
}

// planReport plans a loaded repository against a catalog and what runs.
func planReport(r *schema.Repo, pc *planContext) (*planner.Report, error) {
	return reconcile.PlanOffline(reconcile.OfflineInput{Repo: r, Catalog: pc.cat, Observed: pc.observed, Status: pc.status, Warnings: pc.warnings, ObservedFrom: pc.observedFrom})
}

func (a *app) writeReport(report *planner.Report, output string, view render.View) error {
	switch output {
	case "json":
		return a.writeOutput("plan", report)
	case "markdown":
		return view.PlanMarkdown(a.stdout, report)
	default:
		return a.textOut(func(w io.Writer) error { return view.PlanText(w, report) })
	}
}

// specErrors prints a repository's problems as validate does and asks for
// exit status 1.
func (a *app) specErrors(repo string, err error) error {
	var problems schema.Errors
	if !errors.As(err, &problems) {
		return err
	}
	a.stoppedOn = problems
	for _, e := range problems {
		fmt.Fprintln(a.stderr, e.Error())
	}
	if len(problems) == 1 {
		fmt.Fprintf(a.stderr, "%s: 1 error; fix it before planning\n", repo)
	} else {
		fmt.Fprintf(a.stderr, "%s: %d errors; fix them before planning\n", repo, len(problems))
	}
	return exitCode(1)
}

// loadCatalog reads the prices a plan uses: the named file when the user
// named one, else the freshest of the refreshed file and the snapshot.
func loadCatalog(path string, explicit bool) (*catalog.Catalog, error) {
	if explicit {
		return readCatalog(path)
	}
	return prices.Freshest(path)
}

func readCatalog(name string) (*catalog.Catalog, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cat, err := catalog.Read(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if err := cat.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return cat, nil
}

// savePlan writes the plan for apply, with what it was made of.
func savePlan(f planFlags, r *schema.Repo, pc *planContext, report *planner.Report) error {
	specs, err := reconcile.SpecsOf(f.repo, r)
	if err != nil {
		return err
	}
	source := "status"
	if f.observed != "" {
		source = f.observed
	}
	saved, err := reconcile.NewSavedPlan(specs, pc.observed, source, pc.cat, report, now())
	if err != nil {
		return err
	}
	saved.Fleets = f.fleets
	if err := saved.Write(f.out); err != nil {
		return fmt.Errorf("saving the plan, %w", err)
	}
	return nil
}

// knownFleets refuses --fleet names the repository does not have.
func knownFleets(r *schema.Repo, names []string) error {
	var have []string
	for _, f := range r.Fleets {
		have = append(have, f.Name)
	}
	for _, n := range names {
		if !slices.Contains(have, n) {
			return fmt.Errorf("--fleet %s: the repository has no such fleet (it has %s)", n, strings.Join(have, ", "))
		}
	}
	return nil
}

// shellQuote quotes a path for a command line a user copies, when it
// needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:@+", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
