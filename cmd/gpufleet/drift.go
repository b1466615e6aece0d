// SPDX-License-Identifier: Apache-2.0

package main

import (
	"cmp"
	"context"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/gpufleet/gpufleet/reconcile"
	"github.com/gpufleet/gpufleet/reconcile/render"
	"github.com/gpufleet/gpufleet/reconcile/status"
	"github.com/gpufleet/gpufleet/schema"
)

// exitDrift is drift's exit status when something differs, as plan
// --detailed-exitcode's when there are changes.
const exitDrift = 2

type driftFlags struct {
	repo, output, catalogFile, simState string
	catalogExplicit, emulated           bool
	fleets                              []string
}

func (a *app) driftCommand() *cobra.Command {
	var f driftFlags
	cmd := &cobra.Command{
		Use:   "drift",
		Short: "Compare what the clouds run with the committed status",
		Long: `drift lists what every enabled cloud runs, as reconcile does before it
plans, and reports how it differs from the status committed in the
repository (status/<fleet>.json):

  missing  in the status, but terminated, preempted or gone in the cloud,
           by no action of gpufleet's
  extra    owned by gpufleet in the cloud, but not in the status
  changed  in both, with another state, type, zone, market or ownership tags
  foreign  in gpufleet's name space (a gpufleet- tag, or a name of the form
           gpufleet gives) without being owned by it, where the cloud's
           provider can list such instances

It changes nothing: no cloud, no file, no lock. The exit status is 0 when
nothing differs, 2 when something does and 1 on an error, as plan
--detailed-exitcode's.`,
		Example: `  gpufleet drift --repo fleets
  gpufleet drift --repo fleets --sim --fleet inference -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.catalogExplicit = cmd.Flags().Changed("catalog") || os.Getenv("GPUFLEET_CATALOG") != ""
			return a.drift(cmd.Context(), f)
		},
	}
	cmd.Flags().StringVar(&f.repo, "repo", envOr("GPUFLEET_REPO", "."), "fleet repository: a local checkout [GPUFLEET_REPO]")
	cmd.Flags().StringVarP(&f.output, "output", "o", "text", "output format: text, json or markdown")
	cmd.Flags().StringArrayVar(&f.fleets, "fleet", nil, "report only this fleet's drift; repeat for several")
	cmd.Flags().BoolVar(&f.emulated, "sim", false, "ask the embedded cloud emulator instead of real clouds")
	cmd.Flags().StringVar(&f.catalogFile, "catalog", envOr("GPUFLEET_CATALOG", defaultCatalogPath), "price catalog file; the embedded snapshot when it is missing or older [GPUFLEET_CATALOG]")
	cmd.Flags().StringVar(&f.simState, "sim-state", envOr("GPUFLEET_SIM_STATE", ".gpufleet/sim-state.json"), "the emulator's state file, with --sim [GPUFLEET_SIM_STATE]")
	return cmd
}

func (a *app) drift(ctx context.Context, f driftFlags) error {
	if err := outputFormat(f.output, "text", "json", "markdown"); err != nil {
		return err
	}
	cat, err := loadCatalog(cmp.Or(f.catalogFile, defaultCatalogPath), f.catalogExplicit)
	if err != nil {
		return err
	}
	repo, err := schema.LoadWithCatalog(f.repo, cat)
	if err != nil {
		return a.specErrors(f.repo, err)
	}
	if len(f.fleets) > 0 {
		if err := knownFleets(repo, f.fleets); err != nil {
			return err
		}
	}
	endpoints, closeClouds, err := a.cloudEndpoints(f.emulated, f.simState, cat)
	if err != nil {
		return err
	}
	defer closeClouds()
	d, err := reconcile.ObserveDrift(ctx, reconcile.DriftOptions{
		Dir: f.repo, Repo: repo, Connect: reconcile.ConnectTo(cat, endpoints), Now: now, Log: a.log,
	})
	if err != nil {
		return err
	}
	if len(f.fleets) > 0 {
		d = d.Only(f.fleets)
	}
	switch f.output {
	case "json":
		err = a.writeOutput("drift", driftOutput{Drift: *d})
	case "markdown":
		err = render.DriftMarkdown(a.stdout, d)
	default:
		err = a.textOut(func(w io.Writer) error { return render.DriftText(w, d) })
	}
	if err != nil {
		return err
	}
	if d.Count() > 0 {
		return exitCode(exitDrift)
	}
	return nil
}

// driftOutput is what drift says with -o json.
type driftOutput struct {
	status.Drift
}
