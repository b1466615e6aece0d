package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/spf13/cobra"

	"github.com/gpufleet/gpufleet/providers/aws"
	"github.com/gpufleet/gpufleet/providers/outbound"
	"github.com/gpufleet/gpufleet/providers/prices"
	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/providers/sim/emulator"
	"github.com/gpufleet/gpufleet/schema/atomicfile"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// defaultCatalogPath is where a refreshed catalog is kept.
const defaultCatalogPath = ".gpufleet/catalog.json"

// emulatorAPIKey is what the GCP loader sends the emulator, which takes
// any key: the real one, from GPUFLEET_GCP_API_KEY, never goes there.
const emulatorAPIKey = "gpufleet-emulator"

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
	cmd.Flags().StringSliceVar(&f.clouds, "cloud", nil, "cloud to refresh: aws, azure or gcp; repeat for several (default all)")
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
	start, err := prices.Freshest(f.output)
	if err != nil {
		return err
	}

	endpoints := priceEndpoints{
		awsPricing:  os.Getenv("GPUFLEET_AWS_PRICING_ENDPOINT"),
		ec2:         os.Getenv("GPUFLEET_AWS_ENDPOINT"),
		azurePrices: os.Getenv("GPUFLEET_AZURE_PRICES_ENDPOINT"),
		gcpBilling:  os.Getenv("GPUFLEET_GCP_BILLING_ENDPOINT"),
	}
	if f.emulated {
		emu, err := a.startEmulator(sim.Config{Seed: 1}, ruleFiles{faults: f.faults}, emulator.Options{})
		if err != nil {
			return err
		}
		defer emu.Close(context.WithoutCancel(ctx))
		endpoints = priceEndpoints{awsPricing: emu.Endpoints.AWSPricing, ec2: emu.Endpoints.EC2, azurePrices: emu.Endpoints.AzurePrices, gcpBilling: emu.Endpoints.GCPBilling}
	}

	var skipped prices.Tally
	opts := prices.Options{
		Known:     catalog.Default(),
		Log:       a.log,
		AllowHTTP: outbound.AllowHTTP(os.Getenv),
		OnDrop:    skipped.Add,
	}
	loaders, err := newLoaders(ctx, clouds, regions, opts, endpoints)
	if err != nil {
		return err
	}

	// Every cloud is read to the end, so that one failure does not hide
	// another; then all or nothing is written.
	results := make([]*catalog.Catalog, len(loaders))
	errs := make([]error, len(loaders))
	var wg sync.WaitGroup
	for i, l := range loaders {
		wg.Go(func() {
			results[i], errs[i] = l.Load(ctx)
			if errs[i] != nil {
				errs[i] = fmt.Errorf("refreshing %s prices, %w", l.Cloud(), errs[i])
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w\nnothing was written: %s keeps the prices it had", err, f.output)
	}

	merged, err := prices.Merge(start, results...)
	if err != nil {
		return err
	}
	if f.emulated {
		// Emulated prices must never pass for the clouds' own.
		merged.Source = catalog.EmulatedSource(merged.Source)
	}
	for i, l := range loaders {
		fmt.Fprintf(a.stdout, "%-6s %4d offers in %d regions; %s\n", l.Cloud(), len(results[i].Offers), len(results[i].Regions), skipped.Summary(l.Cloud()))
	}
	if err := merged.Validate(); err != nil {
		return fmt.Errorf("the refreshed catalog is invalid, nothing was written: %w", err)
	}
	var buf bytes.Buffer
	if err := merged.Write(&buf); err != nil {
		return err
	}
	if err := atomicfile.Write(f.output, buf.Bytes()); err != nil {
		return fmt.Errorf("writing %s, %w", f.output, err)
	}
	fmt.Fprintf(a.stdout, "Wrote %s: %s, %d offers, prices as of %s\n", f.output, merged.Source, len(merged.Offers), merged.FetchedAt.Format(time.RFC3339))
	// Emulated prices go into a history only when asked: the default one
	// is the team's record of the clouds' prices.
	if f.emulated && !f.historyExplicit {
		return nil
	}
	return appendHistory(a.stdout, f.history, merged)
}

// refreshScope checks the clouds and regions asked for and sorts the
// regions by cloud. Without --cloud, --regions picks the clouds.
func refreshScope(cloudFlags, regionFlags []string) ([]string, map[string][]string, error) {
	known := catalog.Default()
	var clouds []string
	for _, c := range cloudFlags {
		if !slices.Contains(catalog.Clouds, c) {
			return nil, nil, fmt.Errorf("--cloud must be aws, azure or gcp, not %q", c)
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
		for _, c := range catalog.Clouds {
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

type priceEndpoints struct {
	awsPricing, ec2, azurePrices, gcpBilling string
}

// newLoaders builds a loader per cloud. An endpoint on loopback is the
// emulator: it gets throwaway credentials and a short backoff, so real
// credentials never reach it and a test does not wait.
func newLoaders(ctx context.Context, clouds []string, regions map[string][]string, opts prices.Options, ep priceEndpoints) ([]prices.Loader, error) {
	var loaders []prices.Loader
	for _, c := range clouds {
		o := opts
		o.Regions = regions[c]
		var (
			l   prices.Loader
			err error
		)
		switch c {
		case catalog.AWS:
			o.Endpoint = ep.awsPricing
			awsOpts := prices.AWSOptions{Options: o, SpotEndpoint: ep.ec2}
			if loopback(ep.awsPricing) != loopback(ep.ec2) {
				return nil, errors.New("point both GPUFLEET_AWS_PRICING_ENDPOINT and GPUFLEET_AWS_ENDPOINT at the emulator, or neither: one set of credentials serves both")
			}
			// The SDK signs with the real credentials for any endpoint
			// beyond loopback.
			for _, e := range []struct{ name, url string }{{"GPUFLEET_AWS_PRICING_ENDPOINT", ep.awsPricing}, {"GPUFLEET_AWS_ENDPOINT", ep.ec2}} {
				if _, err := outbound.CheckURL(e.url, opts.AllowHTTP); e.url != "" && err != nil {
					return nil, fmt.Errorf("%s=%q %w", e.name, e.url, err)
				}
			}
			if loopback(ep.awsPricing) {
				awsOpts.Credentials = credentials.NewStaticCredentialsProvider("gpufleet-emulator", "gpufleet-emulator", "")
				// The SDK races its own request bodies against a server
				// as quick as the emulator; this client sidesteps it.
				awsOpts.HTTPClient = aws.LoopbackHTTPClient()
				awsOpts.Retry = emulatorRetry
			}
			l, err = prices.NewAWS(ctx, awsOpts)
		case catalog.Azure:
			o.Endpoint = ep.azurePrices
			if loopback(ep.azurePrices) {
				o.Retry = emulatorRetry
			}
			l, err = prices.NewAzure(o)
		case catalog.GCP:
			o.Endpoint = ep.gcpBilling
			gcpOpts := prices.GCPOptions{Options: o}
			if loopback(ep.gcpBilling) {
				gcpOpts.Retry = emulatorRetry
				gcpOpts.APIKey = emulatorAPIKey
			}
			l, err = prices.NewGCP(gcpOpts)
		}
		if err != nil {
			return nil, err
		}
		loaders = append(loaders, l)
	}
	return loaders, nil
}

var emulatorRetry = prices.Retry{MinWait: 10 * time.Millisecond, MaxWait: 100 * time.Millisecond}

// loopback reports whether an endpoint is on this machine.
func loopback(endpoint string) bool {
	u, err := url.Parse(endpoint)
	if endpoint == "" || err != nil {
		return false
	}
	if u.Hostname() == "localhost" {
		return true
	}
	ip := net.ParseIP(u.Hostname())
	return ip != nil && ip.IsLoopback()
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
	fmt.Fprintln(tw, "MODEL\tAWS\tAZURE\tGCP\tCHEAPEST PER GPU-HOUR")
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
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\n", m.Model, m.Offers[catalog.AWS], m.Offers[catalog.Azure], m.Offers[catalog.GCP], cheapest)
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
