// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpufleet/gpufleet/reconcile"
	"github.com/gpufleet/gpufleet/reconcile/render"
)

// exitAdoptPending is adopt's exit status for a plan shown and not carried
// out, as plan --detailed-exitcode says there are changes.
const exitAdoptPending = 2

func (a *app) adoptCommand() *cobra.Command {
	var f runFlags
	var fleet, workload, selector string
	var ids []string
	var maxCount int
	var yes bool
	cmd := &cobra.Command{
		Use:   "adopt",
		Short: "Take running instances gpufleet did not launch into a workload",
		Long: `adopt takes instances that run in the clouds without gpufleet's ownership
tags — launched by hand, by another tool, before gpufleet — into a workload,
as Terraform's import takes resources into its state. It picks them by id
(EC2 instance id, Azure VM name, GCE instance name) or by a tag selector
(labels on GCE), checks each against the workload — its cloud, GPU model
and count, region and zone, market, account, price, that no fleet owns it,
and that the workload would not then run more nodes than it asks for —
and shows the plan. A single instance that does not fit refuses the whole
adoption, naming why: nothing is tagged.

With --yes, or once you answer yes at the prompt, it tags them with the
workload's labels and gpufleet's ownership tags, holding the repository
lock while it does. From then on every run lists them, counts them as the
workload's nodes on their offers and launches none in their place; status
records them at the next reconcile. Adopting the same instances again
changes nothing.

Without --yes and without a terminal to ask on, it prints the plan, tags
nothing and exits 2, as plan --detailed-exitcode does for changes. It
exits 0 when it tagged them or had nothing to do, 1 when it refused, 3
when the lock is held.`,
		Example: `  gpufleet adopt --fleet ml --workload inference --selector team=ml
  gpufleet adopt --fleet ml --workload inference --id i-0abc,i-0def --yes`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := outputFormat(f.output, "text", "json", "markdown"); err != nil {
				return err
			}
			if fleet == "" || workload == "" {
				return fmt.Errorf("adopt needs --fleet and --workload: the workload the instances join")
			}
			sel, err := parseSelector(selector)
			if err != nil {
				return err
			}
			ids = splitIDs(ids)
			if (len(ids) == 0) == (len(sel) == 0) {
				return fmt.Errorf("adopt takes --id or --selector, one of the two")
			}
			if maxCount < 1 {
				return fmt.Errorf("--max must be at least 1, not %d", maxCount)
			}
			f.catalogExplicit = cmd.Flags().Changed("catalog") || os.Getenv("GPUFLEET_CATALOG") != ""
			ask := !yes && f.output == "text" && isTerminal(os.Stdin) && isTerminal(a.stdout)
			ctx := cmd.Context()
			checkout, err := reconcile.Open(ctx, reconcile.SourceOptions{URL: f.repo, Branch: f.branch, WorkDir: cmp.Or(f.workDir, defaultWorkDir(f.repo))})
			if err != nil {
				return err
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
			opts := reconcile.AdoptOptions{
				Connect: reconcile.ConnectTo(cat, endpoints), Catalog: cat, Log: a.log,
				Fleet: fleet, Workload: workload, IDs: ids, Selector: sel, Max: maxCount,
				Apply: yes || ask,
				Lock:  reconcile.LockOptions{Holder: holder(), Wait: f.lockWait, TTL: f.lockTTL},
			}
			if ask {
				opts.Confirm = func(plan *reconcile.Adoption) (bool, error) {
					if err := a.textOut(func(w io.Writer) error { return render.AdoptionText(w, plan) }); err != nil {
						return false, err
					}
					fmt.Fprint(a.stdout, "\nTag these instances as the workload's? Only 'yes' will be accepted: ")
					answer, err := bufio.NewReader(os.Stdin).ReadString('\n')
					if err != nil && answer == "" {
						return false, fmt.Errorf("reading the answer, %w", err)
					}
					return strings.TrimSpace(answer) == "yes", nil
				}
			}
			plan, adoptErr := reconcile.Adopt(ctx, checkout, opts)
			if plan == nil {
				var held *reconcile.HeldError
				if errors.As(adoptErr, &held) {
					return lockedError{adoptErr}
				}
				return adoptErr
			}
			if err := a.printAdoption(f.output, plan, ask); err != nil {
				return err
			}
			switch {
			case adoptErr != nil:
				return adoptErr
			case plan.Blocked():
				return exitCode(exitError)
			case len(plan.Adopt) > 0 && !plan.Applied && !plan.Declined:
				if f.output == "text" {
					fmt.Fprintln(a.stderr, "Nothing was tagged: run again with --yes to adopt them.")
				}
				return exitCode(exitAdoptPending)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&f.repo, "repo", envOr("GPUFLEET_REPO", "."), "fleet repository: a URL to clone or a local checkout [GPUFLEET_REPO]")
	cmd.Flags().StringVar(&f.branch, "branch", envOr("GPUFLEET_BRANCH", ""), "branch; the default branch when empty [GPUFLEET_BRANCH]")
	cmd.Flags().StringVar(&f.workDir, "workdir", envOr("GPUFLEET_WORKDIR", ""), "where remote repositories are cloned; .gpufleet/clones/<hash> when empty [GPUFLEET_WORKDIR]")
	cmd.Flags().StringVarP(&f.output, "output", "o", "text", "output format: text, json or markdown")
	cmd.Flags().BoolVar(&f.emulated, "sim", false, "adopt from the embedded cloud emulator instead of real clouds")
	cmd.Flags().StringVar(&f.catalogFile, "catalog", envOr("GPUFLEET_CATALOG", defaultCatalogPath), "price catalog file; the embedded snapshot when it is missing or older [GPUFLEET_CATALOG]")
	cmd.Flags().StringVar(&f.simState, "sim-state", envOr("GPUFLEET_SIM_STATE", ".gpufleet/sim-state.json"), "the emulator's state file, with --sim [GPUFLEET_SIM_STATE]")
	cmd.Flags().DurationVar(&f.lockWait, "lock-wait", 0, "how long to wait for another reconciler's lock; 0 gives up at once")
	cmd.Flags().DurationVar(&f.lockTTL, "lock-ttl", reconcile.DefaultLockTTL, "how long the repository lock outlives an adoption that stopped renewing it")
	cmd.Flags().StringVar(&fleet, "fleet", "", "the fleet of the workload the instances join")
	cmd.Flags().StringVar(&workload, "workload", "", "the workload the instances join")
	cmd.Flags().StringArrayVar(&ids, "id", nil, "an instance to adopt: EC2 instance id, Azure VM name or GCE instance name; repeat or separate with commas")
	cmd.Flags().StringVar(&selector, "selector", "", "adopt the unowned instances carrying every one of these tags (labels on GCE): KEY=VALUE,KEY=VALUE")
	cmd.Flags().IntVar(&maxCount, "max", reconcile.DefaultAdoptMax, "refuse a selector that matches more instances than this")
	cmd.Flags().BoolVar(&yes, "yes", false, "tag the instances without asking")
	return cmd
}

// printAdoption writes the plan, or what was done. A plan already shown
// at the prompt is not shown again: only how it ended.
func (a *app) printAdoption(output string, plan *reconcile.Adoption, asked bool) error {
	switch output {
	case "json":
		return a.writeOutput("adoption", plan)
	case "markdown":
		return render.AdoptionMarkdown(a.stdout, plan)
	}
	if asked && (plan.Applied || plan.Declined || len(plan.Adopted) > 0) {
		return a.textOut(func(w io.Writer) error {
			_, err := fmt.Fprintln(w, render.AdoptionHeadline(plan))
			return err
		})
	}
	return a.textOut(func(w io.Writer) error { return render.AdoptionText(w, plan) })
}

// parseSelector reads KEY=VALUE,KEY=VALUE.
func parseSelector(s string) (map[string]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	out := map[string]string{}
	for _, pair := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--selector %q: each part must be KEY=VALUE, not %q", s, pair)
		}
		if old, dup := out[k]; dup && old != v {
			return nil, fmt.Errorf("--selector %q: %s is given twice", s, k)
		}
		out[k] = v
	}
	return out, nil
}

// splitIDs reads --id given several times or with commas.
func splitIDs(list []string) []string {
	var out []string
	for _, item := range list {
		for _, id := range strings.Split(item, ",") {
			if id = strings.TrimSpace(id); id != "" {
				out = append(out, id)
			}
		}
	}
	return out
}
