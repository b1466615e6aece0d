// SPDX-License-Identifier: Apache-2.0

package main

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/spf13/cobra"

	"github.com/gpufleet/gpufleet/schema"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

func (a *app) validateCommand() *cobra.Command {
	var repo, output string
	cmd := &cobra.Command{
		Use:   "validate",
		Short: "Check a fleet repository against the schema and the organisation's policies",
		Long: `validate loads gpufleet.cue, fleets/ and policy/ of a repository and reports
every problem with its file, line, column and CUE path. It exits 0 with a
summary when the repository is valid, 1 otherwise.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := outputFormat(output, "text", "json"); err != nil {
				return err
			}
			// As plan checks them: against the refreshed catalog where
			// there is one.
			cat, err := loadCatalog(defaultCatalogPath, false)
			if err != nil {
				return err
			}
			r, err := schema.LoadWithCatalog(repo, cat)
			var problems schema.Errors
			if err != nil && !errors.As(err, &problems) {
				return err
			}
			report := newValidation(repo, r, problems)
			if output == "json" {
				if err := a.writeOutput("validation", report); err != nil {
					return err
				}
			} else {
				report.writeText(a)
			}
			if !report.Valid {
				return exitCode(1)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&repo, "repo", envOr("GPUFLEET_REPO", "."), "fleet repository directory [GPUFLEET_REPO]")
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	return cmd
}

type validation struct {
	Valid     bool            `json:"valid"`
	Repo      string          `json:"repo"`
	Fleets    int             `json:"fleets"`
	Workloads int             `json:"workloads"`
	Nodes     int             `json:"nodes"`
	GPUs      int             `json:"gpus"`
	ByModel   []modelDemand   `json:"byModel"`
	Errors    []*schema.Error `json:"errors"`
}

type modelDemand struct {
	Model string `json:"model"`
	Nodes int    `json:"nodes"`
	GPUs  int    `json:"gpus"`
}

func newValidation(dir string, r *schema.Repo, problems schema.Errors) validation {
	v := validation{Valid: len(problems) == 0, Repo: dir, ByModel: []modelDemand{}, Errors: problems}
	if v.Errors == nil {
		v.Errors = []*schema.Error{}
	}
	if r == nil {
		return v
	}
	byModel := map[string]*modelDemand{}
	for _, f := range r.Fleets {
		v.Fleets++
		for _, w := range f.Workloads {
			v.Workloads++
			v.Nodes += w.Nodes
			v.GPUs += w.Nodes * w.GPU.PerNode
			d := byModel[w.GPU.Model]
			if d == nil {
				d = &modelDemand{Model: w.GPU.Model}
				byModel[w.GPU.Model] = d
			}
			d.Nodes += w.Nodes
			d.GPUs += w.Nodes * w.GPU.PerNode
		}
	}
	order := catalog.Models()
	for _, d := range byModel {
		v.ByModel = append(v.ByModel, *d)
	}
	slices.SortFunc(v.ByModel, func(a, b modelDemand) int {
		return cmp.Compare(slices.Index(order, a.Model), slices.Index(order, b.Model))
	})
	return v
}

func (v validation) writeText(a *app) {
	if !v.Valid {
		for _, e := range v.Errors {
			fmt.Fprintln(a.stderr, e.Error())
		}
		noun := "errors"
		if len(v.Errors) == 1 {
			noun = "error"
		}
		fmt.Fprintf(a.stderr, "%s: %d %s\n", v.Repo, len(v.Errors), noun)
		return
	}
	fmt.Fprintf(a.stdout, "%s is valid: %d fleets, %d workloads, %d nodes, %d GPUs\n",
		v.Repo, v.Fleets, v.Workloads, v.Nodes, v.GPUs)
	if len(v.ByModel) == 0 {
		return
	}
	fmt.Fprintln(a.stdout)
	fmt.Fprintf(a.stdout, "%-10s %5s %5s\n", "GPU", "NODES", "GPUS")
	for _, d := range v.ByModel {
		fmt.Fprintf(a.stdout, "%-10s %5d %5d\n", d.Model, d.Nodes, d.GPUs)
	}
}
