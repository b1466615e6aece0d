// SPDX-License-Identifier: Apache-2.0

package main

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers/clouds"
	"github.com/gpufleet/gpufleet/schema"
)

type capacityFlags struct {
	repo, output, catalogFile, simState string
	catalogExplicit, emulated           bool
}

func (a *app) capacityCommand() *cobra.Command {
	var f capacityFlags
	cmd := &cobra.Command{
		Use:   "capacity",
		Short: "Show the clouds' quotas and zone offerings for the types the fleets use",
		Long: `capacity asks every enabled cloud for the quotas the fleets' instance
types count against (use and limit, per region or across all regions) and
for the types each zone offers, as reconcile does before it plans. What a
cloud would not say is listed as a warning, with the permission it lacks.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.catalogExplicit = cmd.Flags().Changed("catalog") || os.Getenv("GPUFLEET_CATALOG") != ""
			return a.capacity(cmd.Context(), f)
		},
	}
	cmd.Flags().StringVar(&f.repo, "repo", envOr("GPUFLEET_REPO", "."), "fleet repository: a local checkout [GPUFLEET_REPO]")
	cmd.Flags().StringVarP(&f.output, "output", "o", "text", "output format: text or json")
	cmd.Flags().BoolVar(&f.emulated, "sim", false, "ask the embedded cloud emulator instead of real clouds")
	cmd.Flags().StringVar(&f.catalogFile, "catalog", envOr("GPUFLEET_CATALOG", defaultCatalogPath), "price catalog file; the embedded snapshot when it is missing or older [GPUFLEET_CATALOG]")
	cmd.Flags().StringVar(&f.simState, "sim-state", envOr("GPUFLEET_SIM_STATE", ".gpufleet/sim-state.json"), "the emulator's state file, with --sim [GPUFLEET_SIM_STATE]")
	return cmd
}

// capacityView is what capacity prints.
type capacityView struct {
	Quotas    []planner.Quota `json:"quotas"`
	Offerings []zoneTypes     `json:"offerings"`
	Warnings  []string        `json:"warnings,omitempty"`
}

type zoneTypes struct {
	Cloud string   `json:"cloud"`
	Zone  string   `json:"zone"`
	Types []string `json:"types"`
}

func (a *app) capacity(ctx context.Context, f capacityFlags) error {
	if err := outputFormat(f.output, "text", "json"); err != nil {
		return err
	}
	repo, err := schema.Load(f.repo)
	if err != nil {
		return a.specErrors(f.repo, err)
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
	set, err := clouds.New(ctx, repo.Config, cat, endpoints)
	if err != nil {
		return err
	}
	defer set.Close()

	// The types the fleets could use, and the quotas those count against.
	input := planner.NewInput(repo, cat)
	usable := map[string]bool{}  // cloud/type
	counted := map[string]bool{} // cloud/quota
	for _, o := range input.Offers {
		if !usedByFleets(repo, o) {
			continue
		}
		usable[o.Cloud+"/"+o.InstanceType] = true
		for _, q := range o.Quotas {
			counted[o.Cloud+"/"+q.Quota] = true
		}
	}
	var view capacityView
	for _, cloud := range repo.Config.Clouds.Enabled() {
		c, err := set.Providers[cloud].Capacity(ctx)
		if err != nil {
			return err
		}
		for _, q := range c.Quotas {
			if counted[cloud+"/"+q.Name] {
				view.Quotas = append(view.Quotas, q)
			}
		}
		for _, z := range c.Offerings {
			zt := zoneTypes{Cloud: cloud, Zone: z.Zone, Types: []string{}}
			for _, t := range z.Types {
				if usable[cloud+"/"+t] {
					zt.Types = append(zt.Types, t)
				}
			}
			view.Offerings = append(view.Offerings, zt)
		}
		for _, w := range c.Warnings {
			view.Warnings = append(view.Warnings, cloud+": "+w)
		}
	}
	if f.output == "json" {
		return a.writeOutput("capacity", view)
	}
	return a.printCapacity(view)
}

// usedByFleets reports whether some workload could run on the offer's
// type: its GPU model and count, in a cloud it may use.
func usedByFleets(repo *schema.Repo, o planner.Offer) bool {
	for _, f := range repo.Fleets {
		for _, w := range f.Workloads {
			if w.GPU.Model == o.GPUModel && w.GPU.PerNode == o.GPUs && slices.Contains(w.Placement.Clouds, o.Cloud) {
				return true
			}
		}
	}
	return false
}

func (a *app) printCapacity(v capacityView) error {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CLOUD\tREGION\tQUOTA\tDESCRIPTION\tUSED\tLIMIT\tUNIT")
	for _, q := range v.Quotas {
		used := "-"
		if q.Used != planner.UsedUnknown {
			used = fmt.Sprint(q.Used)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\n", q.Cloud, cmp.Or(q.Region, "(all)"), q.Name, q.Description, used, q.Limit, q.Unit)
	}
	tw.Flush()
	fmt.Fprintln(&b, "\nZones, and the types of the fleets each offers:")
	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, z := range v.Offerings {
		types := strings.Join(z.Types, ", ")
		if types == "" {
			types = "none of them"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", z.Cloud, z.Zone, types)
	}
	tw.Flush()
	if len(v.Warnings) > 0 {
		fmt.Fprintln(&b, "\nWarnings:")
		for _, w := range v.Warnings {
			fmt.Fprintf(&b, "  - %s\n", w)
		}
	}
	_, err := fmt.Fprint(a.stdout, b.String())
	return err
}
