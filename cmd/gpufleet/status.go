// SPDX-License-Identifier: Apache-2.0

package main

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/gpufleet/gpufleet/reconcile/status"
	"github.com/gpufleet/gpufleet/schema"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

func (a *app) statusCommand() *cobra.Command {
	var repo, output string
	var fleets []string
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show what the last reconcile recorded of each fleet, from the repository alone",
		Long: `status prints the status the last reconcile committed to the repository:
each fleet's readiness, its workloads' nodes desired, running and pending, what
they cost and where they run. No cloud is contacted.`,
		Example: `  gpufleet status
  gpufleet status --repo fleets --fleet inference -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := outputFormat(output, "text", "json"); err != nil {
				return err
			}
			dir := "status"
			if r, err := schema.Load(repo); err == nil {
				dir = r.Config.Status.Dir
			}
			root, err := status.OpenRoot(repo, dir)
			if err != nil {
				return fmt.Errorf("reading the status of %s, %w", repo, err)
			}
			defer root.Close()
			all, err := status.ReadFleets(root, dir)
			if err != nil {
				return err
			}
			for _, name := range fleets {
				if all[name] == nil {
					return fmt.Errorf("%s/%s has no status of fleet %q (it has %v)", repo, dir, name, slices.Sorted(maps.Keys(all)))
				}
			}
			out := statusOutput{Repo: repo, Fleets: []*status.FleetStatus{}}
			for _, name := range slices.Sorted(maps.Keys(all)) {
				if len(fleets) == 0 || slices.Contains(fleets, name) {
					out.Fleets = append(out.Fleets, all[name])
				}
			}
			if output == "json" {
				return a.writeOutput("status", out)
			}
			return a.printStatus(out)
		},
	}
	cmd.Flags().StringVar(&repo, "repo", envOr("GPUFLEET_REPO", "."), "fleet repository directory [GPUFLEET_REPO]")
	cmd.Flags().StringArrayVar(&fleets, "fleet", nil, "show only this fleet; repeat for several")
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	return cmd
}

func (a *app) printStatus(out statusOutput) error {
	if len(out.Fleets) == 0 {
		fmt.Fprintf(a.stdout, "%s has no status yet: gpufleet reconcile writes it\n", out.Repo)
		return nil
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FLEET\tWORKLOAD\tREADY\tDESIRED\tRUNNING\tPENDING\t$/H\tOBSERVED")
	for _, st := range out.Fleets {
		fmt.Fprintf(tw, "%s\t\t%s\t\t\t\t%s\t%s\n", st.Fleet, readyOf(st), catalog.Money(st.CostMicros), st.Observed.UTC().Format("2006-01-02 15:04 MST"))
		for _, w := range st.Workloads {
			fmt.Fprintf(tw, "\t%s\t\t%d\t%d\t%d\t\t\n", w.Name, w.Desired, w.Running, w.Pending)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, st := range out.Fleets {
		for _, c := range st.Conditions {
			if c.Type != status.Ready && c.Status && c.Message != "" {
				fmt.Fprintf(a.stdout, "%s: %s (%s): %s\n", st.Fleet, c.Type, c.Reason, c.Message)
			}
		}
	}
	return nil
}

func readyOf(st *status.FleetStatus) string {
	for _, c := range st.Conditions {
		if c.Type == status.Ready {
			if c.Status {
				return "yes"
			}
			return "no: " + cmp.Or(c.Reason, "unknown")
		}
	}
	return "unknown"
}
