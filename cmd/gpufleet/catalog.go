// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpufleet/gpufleet/providers/outbound"
	"github.com/gpufleet/gpufleet/providers/prices"
	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/providers/sim/emulator"
	"github.com/gpufleet/gpufleet/reconcile/catalogs"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// defaultCatalogPath is where a refreshed catalog is kept.
const defaultCatalogPath = ".gpufleet/catalog.json"

func (a *app) catalogCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "catalog",
		Short: "Refresh and show the price catalog plans are made with",
		Long: `catalog keeps the prices gpufleet plans with. The binary embeds a dated
snapshot; refresh reads each cloud's own price API and writes a newer
catalog, which plans use while it is not older than the snapshot.`,
	}
	cmd.AddCommand(a.catalogRefreshCommand(), a.catalogShowCommand(), a.catalogHistoryCommand())
	return cmd
}

type refreshFlags struct {
	clouds, regions []string
	output, faults  string
	// format is what -o was given: refused, with where the file goes.
	format   string
	emulated bool
	// history is the price history file a refresh appends to.
	history         string
	historyExplicit bool
}

func (a *app) catalogRefreshCommand() *cobra.Command {
	var f refreshFlags
	cmd := &cobra.Command{
		Use:   "refresh",
		Short: "Read current prices from the clouds' price APIs into the catalog file",
		Long: `refresh reads on-demand and spot prices from the AWS Price List and EC2
spot price history, the Azure Retail Prices API and the GCP Cloud Billing
Catalog (which needs an API key in GPUFLEET_GCP_API_KEY), and merges them
over the catalog file, or over the embedded snapshot when the file is
missing or older. The file is replaced in one step, and only when every
cloud asked for was read: a refresh that fails leaves the previous file as
it was.

The price APIs' endpoints can be overridden with GPUFLEET_AWS_PRICING_ENDPOINT,
GPUFLEET_AWS_ENDPOINT (EC2, for spot prices), GPUFLEET_AZURE_PRICES_ENDPOINT
and GPUFLEET_GCP_BILLING_ENDPOINT.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.refreshCatalog(cmd.Context(), f)
		},
	}
	cmd.Flags().StringSliceVar(&f.clouds, "cloud", nil, "cloud to refresh: "+cloudNames()+"; repeat for several (default all)")
	cmd.Flags().StringSliceVar(&f.regions, "regions", nil, "regions to refresh, comma-separated (default every region in the catalog)")
	cmd.Flags().StringVar(&f.output, "catalog", envOr("GPUFLEET_CATALOG", defaultCatalogPath), "catalog file to write [GPUFLEET_CATALOG]")
	// -o is an output format everywhere else; as a file here it misled.
	cmd.Flags().StringVarP(&f.format, "output", "o", "", "")
	cmd.Flags().MarkHidden("output")
	cmd.Flags().BoolVar(&f.emulated, "sim", false, "read the embedded emulator's price APIs instead of the real ones")
	cmd.Flags().StringVar(&f.faults, "faults", "", "with --sim, a JSON file of faults to inject into the emulator")
	cmd.Flags().StringVar(&f.history, "history", envOr("GPUFLEET_HISTORY", defaultHistoryPath), "price history file to append the prices that changed to (with --sim, only when given) [GPUFLEET_HISTORY]")
	cmd.PreRun = func(cmd *cobra.Command, _ []string) {
		f.historyExplicit = cmd.Flags().Changed("history") || os.Getenv("GPUFLEET_HISTORY") != ""
	}
	return cmd
}

// refreshCatalog runs every loader asked for and writes the merged catalog
// only if all of them succeeded.
func (a *app) refreshCatalog(ctx context.Context, f refreshFlags) error {
	if f.format != "" {
		return fmt.Errorf("-o is the output format in gpufleet; the catalog file to write is --catalog %s", f.format)
	}
	clouds, regions, err := refreshScope(f.clouds, f.regions)
	if err != nil {
		return err
	}
	if f.faults != "" && !f.emulated {
		return errors.New("--faults needs --sim")
	}
	opts := catalogs.Options{
		Clouds:    clouds,
		Regions:   regions,
		Path:      f.output,
		History:   f.history,
		Endpoints: catalogs.EndpointsFromEnv(),
		Emulated:  f.emulated,
		AllowHTTP: outbound.AllowHTTP(os.Getenv),
		Log:       a.log,
	}
	// Emulated prices go into a history only when asked: the default one
	// is the team's record of the clouds' prices.
	if f.emulated && !f.historyExplicit {
		opts.History = ""
	}
	if f.emulated {
		emu, err := a.startEmulator(sim.Config{Seed: 1}, ruleFiles{faults: f.faults}, emulator.Options{})
		if err != nil {
			return err
		}
		defer emu.Close(context.WithoutCancel(ctx))
		opts.Endpoints = emulatorPrices(emu)
	}
	res, err := catalogs.Refresh(ctx, opts)
	if res != nil {
		writeRefreshSummary(a.stdout, res)
	}
	return err
}

// emulatorPrices are the price endpoints of an emulator.
func emulatorPrices(emu *emulator.Emulator) catalogs.Endpoints {
	return catalogs.Endpoints{AWSPricing: emu.Endpoints.AWSPricing, EC2: emu.Endpoints.EC2, AzurePrices: emu.Endpoints.AzurePrices, GCPBilling: emu.Endpoints.GCPBilling, Lambda: emu.Endpoints.Lambda}
}

// writeRefreshSummary says what a refresh read of each cloud, what it
// wrote, and what it appended to the history.
func writeRefreshSummary(w io.Writer, res *catalogs.Result) {
	for _, c := range res.Clouds {
		fmt.Fprintf(w, "%-6s %4d offers in %d regions; %s\n", c.Cloud, c.Offers, c.Regions, c.Skipped)
	}
	var read []string
	for _, c := range res.Clouds {
		read = append(read, c.Cloud)
	}
	cat := res.Catalog
	fmt.Fprintf(w, "Wrote %s: %s, %d offers, prices as of %s", res.Path, cat.Source, len(cat.Offers), cat.PricedAt(read...).Format(time.RFC3339))
	if at := cat.PricedAt(read...); !at.Equal(cat.FetchedAt) {
		// The clouds it read are fresh; what it kept is as old as it was.
		fmt.Fprintf(w, ", and %s for the offers it kept", cat.FetchedAt.Format(time.RFC3339))
	}
	fmt.Fprintln(w)
	switch {
	case res.History == "":
	case res.HistoryChanged == 0:
		fmt.Fprintf(w, "%s: no price changed\n", res.History)
	default:
		fmt.Fprintf(w, "Appended %d changed prices to %s\n", res.HistoryChanged, res.History)
	}
}

// refreshScope checks the clouds and regions asked for and sorts the
// regions by cloud. Without --cloud, --regions picks the clouds.
func refreshScope(cloudFlags, regionFlags []string) ([]string, map[string][]string, error) {
	known := catalog.Default()
	var clouds []string
	for _, c := range cloudFlags {
		if !slices.Contains(catalog.Clouds, c) {
			return nil, nil, fmt.Errorf("--cloud must be %s, not %q", cloudNames(), c)
		}
		if !slices.Contains(prices.Clouds, c) {
			return nil, nil, fmt.Errorf("--cloud %s: gpufleet reads no %s prices live; its offers keep the embedded catalog's public prices", c, c)
		}
		if !slices.Contains(clouds, c) {
			clouds = append(clouds, c)
		}
	}
	regions := map[string][]string{}
	for _, r := range regionFlags {
		r = strings.TrimSpace(r)
		// Any region the clouds have, not only those the catalog prices:
		// a refresh is how a region gets its first prices.
		of := prices.RegionClouds(r, known)
		live := slices.DeleteFunc(slices.Clone(of), func(c string) bool { return !slices.Contains(prices.Clouds, c) })
		if len(of) > 0 && len(live) == 0 {
			return nil, nil, fmt.Errorf("--regions: %q is a region of %s, whose prices gpufleet reads from the embedded catalog only", r, strings.Join(of, " and "))
		}
		of = live
		var asked []string
		for _, c := range of {
			if len(cloudFlags) == 0 || slices.Contains(clouds, c) {
				regions[c] = append(regions[c], r)
				asked = append(asked, c)
			}
		}
		switch {
		case len(of) > 0 && len(asked) == 0:
			return nil, nil, fmt.Errorf("--regions: %q is a region of %s, which --cloud leaves out", r, strings.Join(of, " and "))
		case len(of) == 0:
			return nil, nil, fmt.Errorf("--regions: %w", prices.UnknownRegion(r, cmpSlice(clouds, catalog.Clouds), known))
		}
	}
	if len(clouds) == 0 {
		for _, c := range prices.Clouds {
			if len(regionFlags) == 0 || len(regions[c]) > 0 {
				clouds = append(clouds, c)
			}
		}
	}
	if len(regionFlags) > 0 {
		for _, c := range clouds {
			if len(regions[c]) == 0 {
				return nil, nil, fmt.Errorf("--regions names no %s region", c)
			}
		}
	}
	// Merged in a fixed order, whatever order they were asked in.
	slices.SortFunc(clouds, func(x, y string) int { return slices.Index(catalog.Clouds, x) - slices.Index(catalog.Clouds, y) })
	return clouds, regions, nil
}

func cmpSlice(s, fallback []string) []string {
	if len(s) > 0 {
		return s
	}
	return fallback
}

func (a *app) catalogShowCommand() *cobra.Command {
	var path, output string
	cmd := &cobra.Command{
		Use:   "show",
		Short: "Say where the prices come from, how old they are, and the cheapest offer of each GPU",
		Long: `show summarises a catalog: its source, its age, how many offers each cloud
has of each GPU model, and the cheapest offer of each model per GPU-hour.
Without --catalog it shows the catalog plans use: the refreshed file if
it is not older than the embedded snapshot, else the snapshot.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := outputFormat(output, "text", "json"); err != nil {
				return err
			}
			explicit := cmd.Flags().Changed("catalog") || os.Getenv("GPUFLEET_CATALOG") != ""
			cat, from, err := showCatalog(path, explicit)
			if err != nil {
				return err
			}
			summary := summarise(cat, from, time.Now())
			if output == "json" {
				return a.writeOutput("catalog", summary)
			}
			return summary.writeText(a.stdout)
		},
	}
	cmd.Flags().StringVar(&path, "catalog", envOr("GPUFLEET_CATALOG", defaultCatalogPath), "catalog file [GPUFLEET_CATALOG]")
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	return cmd
}

// showCatalog reads the catalog to show: the file named, or the one plans
// would use.
func showCatalog(path string, explicit bool) (*catalog.Catalog, string, error) {
	if explicit {
		f, err := os.Open(path)
		if err != nil {
			return nil, "", err
		}
		defer f.Close()
		cat, err := catalog.Read(f)
		if err != nil {
			return nil, "", fmt.Errorf("%s: %w", path, err)
		}
		return cat, path, nil
	}
	cat, err := prices.Freshest(path)
	if err != nil {
		return nil, "", err
	}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) || cat.FetchedAt.Equal(catalog.Default().FetchedAt) && cat.Source == "snapshot" {
		return cat, "embedded snapshot", nil
	}
	return cat, path, nil
}

type catalogSummary struct {
	From       string         `json:"from"`
	Source     string         `json:"source"`
	FetchedAt  time.Time      `json:"fetchedAt"`
	AgeSeconds int64          `json:"ageSeconds"`
	Regions    int            `json:"regions"`
	Offers     int            `json:"offers"`
	Clouds     map[string]int `json:"clouds"`
	Models     []modelSummary `json:"models"`
	// OlderThanSnapshot is set when plans use the embedded snapshot
	// instead of this catalog.
	OlderThanSnapshot bool `json:"olderThanSnapshot,omitempty"`
	age               time.Duration
}

type modelSummary struct {
	Model    string         `json:"model"`
	Offers   map[string]int `json:"offers"`
	Cheapest *catalog.Offer `json:"cheapest,omitempty"`
	// PerGPUMicros is the cheapest offer's price per GPU-hour.
	PerGPUMicros int64 `json:"perGPUMicros,omitempty"`
}

func summarise(cat *catalog.Catalog, from string, now time.Time) catalogSummary {
	s := catalogSummary{
		From: from, Source: cat.Source, FetchedAt: cat.FetchedAt, age: cat.Age(now),
		Regions: len(cat.Regions), Offers: len(cat.Offers), Clouds: map[string]int{},
		OlderThanSnapshot: cat.FetchedAt.Before(catalog.Default().FetchedAt),
	}
	s.AgeSeconds = int64(s.age / time.Second)
	byModel := map[string]*modelSummary{}
	for _, o := range cat.Offers {
		s.Clouds[o.Cloud]++
		m := byModel[o.GPUModel]
		if m == nil {
			m = &modelSummary{Model: o.GPUModel, Offers: map[string]int{}}
			byModel[o.GPUModel] = m
		}
		m.Offers[o.Cloud]++
		if o.PriceMicros <= 0 || o.GPUs <= 0 {
			continue
		}
		// Per GPU-hour, compared without division; the first of equals
		// in catalog order wins, so the choice is stable.
		if c := m.Cheapest; c == nil || o.PriceMicros*int64(c.GPUs) < c.PriceMicros*int64(o.GPUs) {
			offer := o
			m.Cheapest = &offer
		}
	}
	models := catalog.Models()
	for name := range byModel {
		if !slices.Contains(models, name) {
			models = append(models, name)
		}
	}
	for _, name := range models {
		if m, ok := byModel[name]; ok {
			if m.Cheapest != nil {
				m.PerGPUMicros = m.Cheapest.PriceMicros / int64(m.Cheapest.GPUs)
			}
			s.Models = append(s.Models, *m)
		}
	}
	return s
}

func (s catalogSummary) writeText(w io.Writer) error {
	fmt.Fprintf(w, "Catalog:  %s\n", s.From)
	fmt.Fprintf(w, "Source:   %s\n", s.Source)
	fmt.Fprintf(w, "Fetched:  %s (%s ago)\n", s.FetchedAt.Format(time.RFC3339), formatAge(s.age))
	var counts []string
	for _, c := range catalog.Clouds {
		counts = append(counts, fmt.Sprintf("%s %d", c, s.Clouds[c]))
	}
	fmt.Fprintf(w, "Offers:   %d in %d regions (%s)\n", s.Offers, s.Regions, strings.Join(counts, ", "))
	if s.OlderThanSnapshot {
		fmt.Fprintf(w, "Note:     older than the embedded snapshot of %s, which plans use instead\n", catalog.Default().FetchedAt.Format(time.DateOnly))
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "MODEL\t%s\tCHEAPEST PER GPU-HOUR\n", strings.ToUpper(strings.Join(catalog.Clouds, "\t")))
	for _, m := range s.Models {
		cheapest := "-"
		if o := m.Cheapest; o != nil {
			where := strings.Join(slices.DeleteFunc([]string{o.Cloud, o.Region, o.Zone, o.InstanceType, string(o.Market)}, func(p string) bool { return p == "" }), " ")
			gpus := "1 GPU"
			if o.GPUs != 1 {
				gpus = fmt.Sprintf("%d GPUs", o.GPUs)
			}
			cheapest = fmt.Sprintf("%s/GPU-h: %s at %s/h for %s", catalog.Money(m.PerGPUMicros), where, catalog.Money(o.PriceMicros), gpus)
		}
		fmt.Fprintf(tw, "%s\t", m.Model)
		for _, c := range catalog.Clouds {
			fmt.Fprintf(tw, "%d\t", m.Offers[c])
		}
		fmt.Fprintf(tw, "%s\n", cheapest)
	}
	return tw.Flush()
}

// formatAge writes a duration the way a person says how old something is.
func formatAge(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
	}
	return fmt.Sprintf("%dd%02dh", int(d/(24*time.Hour)), int(d%(24*time.Hour)/time.Hour))
}

// cloudNames lists the clouds as a sentence does: "aws, azure, gcp or
// lambda".
func cloudNames() string {
	n := len(catalog.Clouds)
	return strings.Join(catalog.Clouds[:n-1], ", ") + " or " + catalog.Clouds[n-1]
}
