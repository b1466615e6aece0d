// SPDX-License-Identifier: Apache-2.0

package catalogs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/gpufleet/gpufleet/providers/aws"
	"github.com/gpufleet/gpufleet/providers/outbound"
	"github.com/gpufleet/gpufleet/providers/prices"
	"github.com/gpufleet/gpufleet/schema/atomicfile"
	"github.com/gpufleet/gpufleet/schema/catalog"
	"github.com/gpufleet/gpufleet/schema/catalog/history"
)

// emulatorAPIKey is what the GCP and Lambda loaders send the emulator,
// which takes any key: the real ones, from GPUFLEET_GCP_API_KEY and
// LAMBDA_API_KEY, never go there.
const emulatorAPIKey = "gpufleet-emulator"

// Options say what a refresh reads and where it writes.
type Options struct {
	// Clouds to read, in catalog.Clouds order; empty means none, which is
	// an error.
	Clouds []string
	// Regions limits the regions read per cloud; a cloud without an entry
	// is read in every region.
	Regions map[string][]string
	// Path is the catalog file: the refresh starts from it (or from the
	// embedded snapshot when it is missing or older, as prices.Freshest
	// says) and replaces it.
	Path string
	// History, when set, is the price history file the prices that
	// changed are appended to.
	History string
	// Endpoints point the loaders at the emulator, or elsewhere.
	Endpoints Endpoints
	// Emulated marks the catalog's Source as the emulator's, so emulated
	// prices never pass for the clouds' own.
	Emulated bool
	// AllowHTTP lets an endpoint beyond loopback be plain http.
	AllowHTTP bool
	// Now is the clock the prices are dated by; nil means time.Now.
	Now func() time.Time
	Log *slog.Logger
}

// CloudResult is what a refresh read of one cloud.
type CloudResult struct {
	Cloud   string
	Offers  int
	Regions int
	// Dropped counts the price rows refused, by reason (the prices.Reason
	// constants).
	Dropped map[string]int
	// Skipped says the same for people: "3 rows skipped: 2 currency CNY,
	// 1 price below floor", or "no rows skipped".
	Skipped string
}

// DroppedRows is how many price rows the cloud's loader refused.
func (c CloudResult) DroppedRows() int {
	n := 0
	for _, v := range c.Dropped {
		n += v
	}
	return n
}

// Result is what a refresh wrote.
type Result struct {
	// Catalog is the merged catalog, as written to Path.
	Catalog *catalog.Catalog
	Path    string
	Clouds  []CloudResult
	// History is the history file appended to, "" for none, and
	// HistoryChanged how many prices changed in it.
	History        string
	HistoryChanged int
}

// Refresh runs every loader asked for and, only if all of them succeeded
// and their merge is a valid catalog, writes it to opts.Path in one step
// and appends its prices to opts.History. On an error before the write
// the file is as it was and Refresh returns no Result; an error appending
// to the history comes with the Result of the write that preceded it.
func Refresh(ctx context.Context, opts Options) (*Result, error) {
	if len(opts.Clouds) == 0 {
		return nil, errors.New("refreshing prices, no cloud to read")
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	start, err := prices.Freshest(opts.Path)
	if err != nil {
		return nil, err
	}
	dropped := map[string]map[string]int{}
	var droppedMu sync.Mutex
	var tally prices.Tally
	lopts := prices.Options{
		Known:     catalog.Default(),
		Log:       opts.Log,
		AllowHTTP: opts.AllowHTTP,
		Now:       opts.Now,
		OnDrop: func(d prices.Drop) {
			tally.Add(d)
			droppedMu.Lock()
			defer droppedMu.Unlock()
			if dropped[d.Cloud] == nil {
				dropped[d.Cloud] = map[string]int{}
			}
			dropped[d.Cloud][d.Reason]++
		},
	}
	loaders, err := NewLoaders(ctx, opts.Clouds, opts.Regions, lopts, opts.Endpoints)
	if err != nil {
		return nil, err
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
		return nil, fmt.Errorf("%w\nnothing was written: %s keeps the prices it had", err, opts.Path)
	}

	merged, err := prices.Merge(start, results...)
	if err != nil {
		return nil, err
	}
	if opts.Emulated {
		merged.Source = catalog.EmulatedSource(merged.Source)
	}
	if err := merged.Validate(); err != nil {
		return nil, fmt.Errorf("the refreshed catalog is invalid, nothing was written: %w", err)
	}
	var buf bytes.Buffer
	if err := merged.Write(&buf); err != nil {
		return nil, err
	}
	if err := atomicfile.Write(opts.Path, buf.Bytes()); err != nil {
		return nil, fmt.Errorf("writing %s, %w", opts.Path, err)
	}
	res := &Result{Catalog: merged, Path: opts.Path, History: opts.History}
	for i, l := range loaders {
		res.Clouds = append(res.Clouds, CloudResult{Cloud: l.Cloud(), Offers: len(results[i].Offers), Regions: len(results[i].Regions), Dropped: maps.Clone(dropped[l.Cloud()]), Skipped: tally.Summary(l.Cloud())})
	}
	if opts.History == "" {
		return res, nil
	}
	h, err := history.Load(opts.History)
	if err != nil {
		return res, fmt.Errorf("%s was written, but not the price history, %w", opts.Path, err)
	}
	if res.HistoryChanged = record(h, start, results); res.HistoryChanged > 0 {
		if err := h.Save(opts.History); err != nil {
			return res, fmt.Errorf("%s was written, but not the price history, %w", opts.Path, err)
		}
	}
	return res, nil
}

// record appends to a history the prices of a refresh: each cloud's fresh
// prices as of when they were read, and the prices kept from start as of
// start's date. The merged catalog is as old as its oldest part, so
// recording it at its own date would put a fresh price at the old date,
// over the point already there, and a partial refresh would never add a
// point.
func record(h *history.History, start *catalog.Catalog, fresh []*catalog.Catalog) int {
	type place struct{ cloud, region string }
	covered := map[place]bool{}
	for _, f := range fresh {
		for _, r := range f.Regions {
			covered[place{r.Cloud, r.Name}] = true
		}
	}
	kept := &catalog.Catalog{}
	for _, o := range start.Offers {
		if !covered[place{o.Cloud, o.Region}] {
			kept.Offers = append(kept.Offers, o)
		}
	}
	changed := h.Record(kept, start.FetchedAt)
	for _, f := range fresh {
		changed += h.Record(f, f.FetchedAt)
	}
	return changed
}

// NewLoaders builds a loader per cloud. An endpoint on loopback is the
// emulator: it gets throwaway credentials and a short backoff, so real
// credentials never reach it and a test does not wait.
func NewLoaders(ctx context.Context, clouds []string, regions map[string][]string, opts prices.Options, ep Endpoints) ([]prices.Loader, error) {
	var loaders []prices.Loader
	for _, c := range clouds {
		if !slices.Contains(catalog.Clouds, c) {
			return nil, fmt.Errorf("refreshing prices, no cloud %q", c)
		}
		o := opts
		o.Regions = regions[c]
		var (
			l   prices.Loader
			err error
		)
		switch c {
		case catalog.AWS:
			o.Endpoint = ep.AWSPricing
			awsOpts := prices.AWSOptions{Options: o, SpotEndpoint: ep.EC2}
			if Loopback(ep.AWSPricing) != Loopback(ep.EC2) {
				return nil, errors.New("point both GPUFLEET_AWS_PRICING_ENDPOINT and GPUFLEET_AWS_ENDPOINT at the emulator, or neither: one set of credentials serves both")
			}
			// The SDK signs with the real credentials for any endpoint
			// beyond loopback.
			for _, e := range []struct{ name, url string }{{"GPUFLEET_AWS_PRICING_ENDPOINT", ep.AWSPricing}, {"GPUFLEET_AWS_ENDPOINT", ep.EC2}} {
				if _, err := outbound.CheckURL(e.url, opts.AllowHTTP); e.url != "" && err != nil {
					return nil, fmt.Errorf("%s=%q %w", e.name, e.url, err)
				}
			}
			if Loopback(ep.AWSPricing) {
				awsOpts.Credentials = credentials.NewStaticCredentialsProvider("gpufleet-emulator", "gpufleet-emulator", "")
				// The SDK races its own request bodies against a server
				// as quick as the emulator; this client sidesteps it.
				awsOpts.HTTPClient = aws.LoopbackHTTPClient()
				awsOpts.Retry = EmulatorRetry
			}
			l, err = prices.NewAWS(ctx, awsOpts)
		case catalog.Azure:
			o.Endpoint = ep.AzurePrices
			if Loopback(ep.AzurePrices) {
				o.Retry = EmulatorRetry
			}
			l, err = prices.NewAzure(o)
		case catalog.GCP:
			o.Endpoint = ep.GCPBilling
			gcpOpts := prices.GCPOptions{Options: o}
			if Loopback(ep.GCPBilling) {
				gcpOpts.Retry = EmulatorRetry
				gcpOpts.APIKey = emulatorAPIKey
			}
			l, err = prices.NewGCP(gcpOpts)
		case catalog.Lambda:
			o.Endpoint = ep.Lambda
			lambdaOpts := prices.LambdaOptions{Options: o}
			if Loopback(ep.Lambda) {
				lambdaOpts.Retry = EmulatorRetry
				lambdaOpts.APIKey = emulatorAPIKey
			}
			l, err = prices.NewLambda(lambdaOpts)
		case catalog.OCI:
			return nil, errors.New("refreshing prices, OCI's are not read live: its offers keep the public prices of the snapshot")
		default:
			return nil, fmt.Errorf("refreshing prices, cloud %q has no price loader", c)
		}
		if err != nil {
			return nil, err
		}
		loaders = append(loaders, l)
	}
	return loaders, nil
}
