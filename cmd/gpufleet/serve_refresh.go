// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gpufleet/gpufleet/providers/clouds"
	"github.com/gpufleet/gpufleet/providers/outbound"
	"github.com/gpufleet/gpufleet/providers/prices"
	"github.com/gpufleet/gpufleet/reconcile/agent"
	"github.com/gpufleet/gpufleet/reconcile/catalogs"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// defaultCatalogRefresh is how often serve refreshes the prices when it
// can read some cloud's: the clouds change prices a few times a day at
// most, and a refresh reads every region's price list.
const defaultCatalogRefresh = 6 * time.Hour

// priceSources are the price APIs serve can read, and why it leaves the
// others out.
type priceSources struct {
	clouds    []string
	endpoints catalogs.Endpoints
	// emulated says the prices are the embedded emulator's (--sim).
	emulated bool
	// credentialed says some cloud has credentials in the environment,
	// or the prices are an emulator's: refreshing is then on by default.
	credentialed bool
	skipped      []string
}

// servePriceSources finds the price APIs serve can read: with --sim the
// embedded emulator's; otherwise each cloud's whose price API an
// endpoint names on loopback (an emulator), or whose credentials are in
// the environment. Azure's retail prices need no account; GCP's billing
// catalog needs an API key; a cloud whose compute API is an emulator
// without its price API named is left out, for the emulator's clouds
// sell at the emulator's prices, not the clouds'.
func servePriceSources(emu *catalogs.Endpoints, getenv func(string) string) priceSources {
	if emu != nil {
		return priceSources{clouds: prices.Clouds, endpoints: *emu, emulated: true, credentialed: true}
	}
	ep := catalogs.Endpoints{
		AWSPricing:  getenv("GPUFLEET_AWS_PRICING_ENDPOINT"),
		EC2:         getenv("GPUFLEET_AWS_ENDPOINT"),
		AzurePrices: getenv("GPUFLEET_AZURE_PRICES_ENDPOINT"),
		GCPBilling:  getenv("GPUFLEET_GCP_BILLING_ENDPOINT"),
		Lambda:      getenv("GPUFLEET_LAMBDA_ENDPOINT"),
	}
	compute := clouds.Endpoints{AWS: getenv("GPUFLEET_AWS_ENDPOINT"), Azure: getenv("GPUFLEET_AZURE_ENDPOINT"), GCP: getenv("GPUFLEET_GCP_ENDPOINT"), Lambda: getenv("GPUFLEET_LAMBDA_ENDPOINT"), OCI: getenv("GPUFLEET_OCI_ENDPOINT")}
	s := priceSources{endpoints: ep}
	add := func(cloud, priceEnv, priceEndpoint, computeEndpoint string, credentialed bool, missing string) {
		switch {
		case catalogs.Loopback(priceEndpoint):
			s.clouds = append(s.clouds, cloud)
			s.credentialed = true
		case catalogs.Loopback(computeEndpoint):
			s.skipped = append(s.skipped, fmt.Sprintf("%s: its API is an emulator, and %s does not name the emulator's price API", cloud, priceEnv))
		case missing != "":
			s.skipped = append(s.skipped, cloud+": "+missing)
			s.credentialed = s.credentialed || credentialed
		default:
			s.clouds = append(s.clouds, cloud)
			s.credentialed = s.credentialed || credentialed
		}
	}
	awsMissing := ""
	if !awsCredentials(getenv) {
		awsMissing = "no AWS credentials in the environment or the shared credentials files (give --catalog-refresh to read them from an instance role)"
	}
	add(catalog.AWS, "GPUFLEET_AWS_PRICING_ENDPOINT", ep.AWSPricing, compute.AWS, awsMissing == "", awsMissing)
	add(catalog.Azure, "GPUFLEET_AZURE_PRICES_ENDPOINT", ep.AzurePrices, compute.Azure, azureCredentials(getenv), "")
	gcpMissing := ""
	if getenv(prices.GCPAPIKeyEnv) == "" {
		gcpMissing = "the Cloud Billing Catalog needs an API key in " + prices.GCPAPIKeyEnv
	}
	add(catalog.GCP, "GPUFLEET_GCP_BILLING_ENDPOINT", ep.GCPBilling, compute.GCP, gcpMissing == "" || getenv("GOOGLE_APPLICATION_CREDENTIALS") != "", gcpMissing)
	// Lambda's prices are in the same API as its instances, behind the
	// same key.
	lambdaMissing := ""
	if getenv(prices.LambdaAPIKeyEnv) == "" {
		lambdaMissing = "its instance types need an API key in " + prices.LambdaAPIKeyEnv
	}
	add(catalog.Lambda, "GPUFLEET_LAMBDA_ENDPOINT", ep.Lambda, "", lambdaMissing == "", lambdaMissing)
	return s
}

// awsCredentials reports whether the SDK's chain has credentials it can
// find without asking the network: the instance metadata service would
// make every start wait on a timeout off EC2.
func awsCredentials(getenv func(string) string) bool {
	for _, name := range []string{"AWS_ACCESS_KEY_ID", "AWS_PROFILE", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"} {
		if getenv(name) != "" {
			return true
		}
	}
	files := []string{getenv("AWS_SHARED_CREDENTIALS_FILE"), getenv("AWS_CONFIG_FILE")}
	if home := getenv("HOME"); home != "" {
		files = append(files, filepath.Join(home, ".aws", "credentials"), filepath.Join(home, ".aws", "config"))
	}
	for _, f := range files {
		if f == "" {
			continue
		}
		if _, err := os.Stat(f); err == nil {
			return true
		}
	}
	return false
}

// azureCredentials reports whether the environment names an Azure
// identity, as azidentity's environment and workload credentials read it.
func azureCredentials(getenv func(string) string) bool {
	return getenv("AZURE_CLIENT_ID") != "" || getenv("AZURE_TENANT_ID") != "" || getenv("AZURE_SUBSCRIPTION_ID") != ""
}

// catalogRefresher sets up serve's refreshes: how often (0 for never)
// and what one does. given is --catalog-refresh (or its environment
// variable) when set, nil otherwise.
func (a *app) catalogRefresher(given *time.Duration, src priceSources, path string) (agent.Refresher, time.Duration, error) {
	every := defaultCatalogRefresh
	switch {
	case given != nil && *given < 0:
		return nil, 0, fmt.Errorf("--catalog-refresh is %s: how often to refresh the prices, or 0 for never", *given)
	case given != nil && *given == 0:
		a.log.Info("prices are not refreshed: --catalog-refresh is 0; plans use the catalog as it is", "catalog", path)
		return nil, 0, nil
	case given != nil:
		every = *given
	}
	if len(src.clouds) == 0 {
		why := strings.Join(src.skipped, "; ")
		if given != nil {
			return nil, 0, fmt.Errorf("--catalog-refresh is %s, but no cloud's prices can be read: %s", every, why)
		}
		a.log.Info("prices are not refreshed: no cloud's prices can be read; plans use the catalog as it is", "catalog", path, "why", why)
		return nil, 0, nil
	}
	if given == nil && !src.credentialed {
		a.log.Info("prices are not refreshed: no cloud's credentials are in the environment; --catalog-refresh turns it on", "catalog", path)
		return nil, 0, nil
	}
	for _, why := range src.skipped {
		a.log.Info("a cloud's prices are not refreshed", "why", why)
	}
	history := envOr("GPUFLEET_HISTORY", defaultHistoryPath)
	// As with catalog refresh --sim: emulated prices go into a history
	// only when one is named.
	if src.emulated && os.Getenv("GPUFLEET_HISTORY") == "" {
		history = ""
	}
	opts := catalogs.Options{
		Clouds:    src.clouds,
		Path:      path,
		History:   history,
		Endpoints: src.endpoints,
		Emulated:  src.emulated,
		AllowHTTP: outbound.AllowHTTP(os.Getenv),
		Log:       a.log,
	}
	refresh := func(ctx context.Context) (*catalog.Catalog, error) {
		res, err := catalogs.Refresh(ctx, opts)
		if res == nil {
			return nil, err
		}
		for _, c := range res.Clouds {
			a.log.Info("prices read", "cloud", c.Cloud, "offers", c.Offers, "regions", c.Regions, "dropped rows", c.DroppedRows())
		}
		if res.HistoryChanged > 0 {
			a.log.Info("price history appended", "history", res.History, "changed prices", res.HistoryChanged)
		}
		return res.Catalog, err
	}
	return refresh, every, nil
}
