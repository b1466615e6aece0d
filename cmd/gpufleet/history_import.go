// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/spf13/cobra"

	"github.com/gpufleet/gpufleet/providers/aws"
	"github.com/gpufleet/gpufleet/providers/prices"
	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/providers/sim/ec2sim"
	"github.com/gpufleet/gpufleet/providers/sim/emulator"
	"github.com/gpufleet/gpufleet/reconcile/catalogs"
	"github.com/gpufleet/gpufleet/schema/catalog"
	"github.com/gpufleet/gpufleet/schema/catalog/history"
)

func (a *app) catalogHistoryCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "history",
		Short: "Fill the price history backtests replay",
		Long: `history keeps the price history gpufleet backtest replays. catalog refresh
appends to it the prices that changed; import fills in the past from a
cloud that keeps one: AWS, whose spot prices EC2 keeps for 90 days.`,
	}
	cmd.AddCommand(a.catalogHistoryImportCommand())
	return cmd
}

type historyImportFlags struct {
	awsSpot, emulated bool
	days              int
	regions           []string
	history           string
	historyExplicit   bool
}

func (a *app) catalogHistoryImportCommand() *cobra.Command {
	var f historyImportFlags
	cmd := &cobra.Command{
		Use:   "import",
		Short: "Import the last days of AWS spot prices into the price history",
		Long: `import reads EC2's spot price history (DescribeSpotPriceHistory, Linux/UNIX)
of the last --days, zone by zone, for every AWS spot type the catalog
sells in the regions asked for, and adds each change of price to the
history file under its zone's spot offer. A price the history has already
adds nothing, so an import can be repeated; the file is replaced in one
step, and only when every region was read. EC2 keeps 90 days.

Throttling (RequestLimitExceeded) and server errors are retried with
backoff by the SDK's standard retryer. GPUFLEET_AWS_ENDPOINT overrides
EC2's endpoint; --sim reads an emulated EC2 whose spot prices have a
seeded past, ending at the embedded catalog's prices on its date.`,
		Example: `  gpufleet catalog history import --aws-spot
  gpufleet catalog history import --aws-spot --days 30 --regions us-east-1,us-west-2
  gpufleet catalog history import --aws-spot --sim --days 7 --history /tmp/history.json`,
		Args: cobra.NoArgs,
		PreRun: func(cmd *cobra.Command, _ []string) {
			f.historyExplicit = cmd.Flags().Changed("history") || os.Getenv("GPUFLEET_HISTORY") != ""
		},
		RunE: func(cmd *cobra.Command, _ []string) error { return a.importHistory(cmd.Context(), f) },
	}
	cmd.Flags().BoolVar(&f.awsSpot, "aws-spot", false, "import AWS spot prices from EC2's spot price history, the one price history a cloud keeps")
	cmd.Flags().IntVar(&f.days, "days", prices.MaxSpotHistoryDays, "how many days back to import, 1 to 90")
	cmd.Flags().StringSliceVar(&f.regions, "regions", nil, "AWS regions to import, comma-separated (default every AWS region in the catalog)")
	cmd.Flags().StringVar(&f.history, "history", envOr("GPUFLEET_HISTORY", defaultHistoryPath), "price history file to add to (with --sim, it must be given) [GPUFLEET_HISTORY]")
	cmd.Flags().BoolVar(&f.emulated, "sim", false, "read an emulated EC2 with a seeded spot price history instead of the real one")
	return cmd
}

func (a *app) importHistory(ctx context.Context, f historyImportFlags) error {
	if !f.awsSpot {
		return errors.New("say what to import: --aws-spot, EC2's spot price history, is the one a cloud keeps")
	}
	if f.days < 1 || f.days > prices.MaxSpotHistoryDays {
		return fmt.Errorf("--days %d: EC2 keeps %d days of spot prices, so give 1 to %d", f.days, prices.MaxSpotHistoryDays, prices.MaxSpotHistoryDays)
	}
	if f.emulated && !f.historyExplicit {
		// The default file is the team's record of the clouds' prices.
		return fmt.Errorf("with --sim, name the file with --history: emulated prices never go into %s unasked", defaultHistoryPath)
	}
	h, err := history.Load(f.history)
	if err != nil {
		return err
	}

	opts := prices.AWSOptions{
		Options:      prices.Options{Regions: f.regions, Known: catalog.Default(), Log: a.log},
		SpotEndpoint: os.Getenv("GPUFLEET_AWS_ENDPOINT"),
	}
	if f.emulated {
		// The emulated clouds sell at the embedded catalog's prices, so the
		// past they keep ends on its date: their clock runs from there.
		cat := catalog.Default()
		emu, err := a.startEmulator(sim.Config{Seed: 1, Catalog: cat, Clock: runningClock{start: cat.FetchedAt, wall: time.Now()}},
			ruleFiles{}, emulator.Options{SpotHistory: &ec2sim.SpotHistory{Seed: 1}})
		if err != nil {
			return err
		}
		defer emu.Close(context.WithoutCancel(ctx))
		opts.SpotEndpoint, opts.Now = emu.Endpoints.EC2, emu.World.Now
	}
	if catalogs.Loopback(opts.SpotEndpoint) {
		opts.Credentials = credentials.NewStaticCredentialsProvider("gpufleet-emulator", "gpufleet-emulator", "")
		opts.HTTPClient = aws.LoopbackHTTPClient()
		opts.Retry = catalogs.EmulatorRetry
	}
	importer, err := prices.NewAWSSpotHistory(ctx, opts)
	if err != nil {
		return err
	}
	added, err := importer.Import(ctx, h, f.days)
	if err != nil {
		return fmt.Errorf("importing AWS spot prices, %w\nnothing was written: %s stays as it was", err, f.history)
	}
	total := 0
	for _, region := range importer.Regions() {
		fmt.Fprintf(a.stdout, "aws %-16s %6d spot prices added\n", region, added[region])
		total += added[region]
	}
	if total == 0 {
		fmt.Fprintf(a.stdout, "%s: no new spot prices\n", f.history)
		return nil
	}
	if err := h.Save(f.history); err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "Added %d AWS spot prices of the last %d days to %s\n", total, f.days, f.history)
	return nil
}

// runningClock is the wall clock's time since wall, from start.
type runningClock struct{ start, wall time.Time }

func (c runningClock) Now() time.Time { return c.start.Add(time.Since(c.wall)).UTC() }
