package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/planner/catalog"
	"github.com/gpufleet/gpufleet/schema"
)

func (a *app) planCommand() *cobra.Command {
	var repo, observedFile, catalogFile, output string
	var detailed bool
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "Plan the cheapest placement of a repository's fleets, offline, against the price catalog",
		Long: `plan loads a repository, places every fleet at the lowest cost the catalog
allows, and shows where each node goes, what it costs, why, and the actions
that would get there from what runs now (--observed, a JSON list of
instances; nothing runs when absent).

With --detailed-exitcode the exit status is 0 when there is nothing to do,
1 on an error and 2 when there are changes, as Terraform does.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := outputFormat(output, "text", "json", "markdown"); err != nil {
				return err
			}
			r, err := schema.Load(repo)
			if err != nil {
				return a.specErrors(repo, err)
			}
			cat := catalog.Default()
			if catalogFile != "" {
				if cat, err = readCatalog(catalogFile); err != nil {
					return err
				}
			}
			var observed []planner.Instance
			if observedFile != "" {
				if observed, err = readObserved(observedFile); err != nil {
					return err
				}
			}
			report, err := planReport(r, cat, observed, nil)
			if err != nil {
				return err
			}
			if err := a.writeReport(report, output); err != nil {
				return err
			}
			if creates, deletes := report.Changes.Counts(); detailed && (creates+deletes > 0 || len(report.Changes.Refused) > 0) {
				return exitCode(2)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&repo, "repo", envOr("GPUFLEET_REPO", "."), "fleet repository directory [GPUFLEET_REPO]")
	cmd.Flags().StringVar(&observedFile, "observed", "", "JSON file listing the instances that run now")
	cmd.Flags().StringVar(&catalogFile, "catalog", envOr("GPUFLEET_CATALOG", ""), "price catalog file; the embedded snapshot when empty [GPUFLEET_CATALOG]")
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text, json or markdown")
	cmd.Flags().BoolVar(&detailed, "detailed-exitcode", false, "exit 2 when there are changes, 0 when there are none")
	return cmd
}

// planReport plans a loaded repository against a catalog and what runs.
func planReport(r *schema.Repo, cat *catalog.Catalog, observed []planner.Instance, blocked []planner.OfferKey) (*planner.Report, error) {
	in := planner.NewInput(r, cat)
	in.Observed = observed
	in.Blocked = blocked
	plan, err := planner.Solve(in)
	if err != nil {
		return nil, err
	}
	changes := planner.Diff(plan, observed, planner.DiffOptions{
		Revision:     planner.SpecRevisions(r.Fleets),
		MaxDeletions: r.Config.Defaults.MaxDeletions,
		Prune:        r.Config.Defaults.Prune,
	})
	return &planner.Report{Plan: plan, Changes: changes, CurrentMicros: planner.CurrentCost(observed, in.Offers)}, nil
}

func (a *app) writeReport(report *planner.Report, output string) error {
	switch output {
	case "json":
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(report)
	case "markdown":
		return report.WriteMarkdown(a.stdout)
	default:
		return report.WriteText(a.stdout)
	}
}

// specErrors prints a repository's problems as validate does and asks for
// exit status 1.
func (a *app) specErrors(repo string, err error) error {
	var problems schema.Errors
	if !errors.As(err, &problems) {
		return err
	}
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

func readObserved(name string) ([]planner.Instance, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	var observed []planner.Instance
	if err := json.Unmarshal(data, &observed); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return observed, nil
}
