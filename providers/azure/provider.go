// SPDX-License-Identifier: Apache-2.0

package azure

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/schema"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// Options tunes a Provider. The zero value talks to Azure's public cloud
// with the credentials of azidentity's DefaultAzureCredential chain
// (AZURE_* variables, workload identity, managed identity, az login…).
type Options struct {
	// Endpoint replaces the Resource Manager endpoint, to point the
	// provider at the emulator. Plain http is allowed on loopback only,
	// so a bearer token never crosses a network in clear.
	Endpoint string
	// Credential replaces the standard chain, for the emulator only (an
	// azcore/fake.TokenCredential); it requires Endpoint.
	Credential azcore.TokenCredential
	// PollFrequency is how often a create or delete is polled when ARM
	// sends no Retry-After. Zero means 10 s. azcore refuses less than one
	// second outside tests.
	PollFrequency time.Duration
	// Retry bounds azcore's retries of 408, 429 and 5xx answers; zero
	// fields take the defaults below. azcore honours Retry-After, but
	// gives up at once when it asks for longer than MaxRetryDelay: the
	// call then fails as throttled and the reconciler tries again on its
	// next run.
	Retry policy.RetryOptions
	// Concurrency is accepted for symmetry with the other clouds, where it
	// bounds the regions listed at once. Azure lists a resource group in
	// one paged listing that spans every region, and Capacity reads its
	// regions one after another, so nothing here runs concurrently and it
	// has no effect.
	Concurrency int
}

// Retry defaults. Every ARM call is bounded in attempts (five) and in
// time: at most 5 tries of 15 s and 4 waits of 15 s, a little over two
// minutes.
const (
	defaultMaxRetries    = 4
	defaultRetryDelay    = time.Second
	defaultMaxRetryDelay = 15 * time.Second
	defaultTryTimeout    = 15 * time.Second
	defaultPollFrequency = 10 * time.Second
)

// Provider manages gpufleet's VMs in one resource group of one
// subscription.
type Provider struct {
	cfg     *schema.Azure
	cat     *catalog.Catalog
	regions []string
	vms     *armcompute.VirtualMachinesClient
	// usages and skus read what Capacity reports.
	usages *armcompute.UsageClient
	skus   *armcompute.ResourceSKUsClient
	// ppgs keeps the proximity placement groups of zone gangs.
	ppgs *armcompute.ProximityPlacementGroupsClient
	poll time.Duration
	// launch is cfg.Launch read once; launchErr, when set, is why it
	// cannot be used, reported by Create (List and Offers do not need it).
	launch    launchSpec
	launchErr error
}

var _ providers.Provider = (*Provider)(nil)

// New builds a provider for cfg. It makes no API call: credentials are
// first used, and checked, by the first request.
func New(ctx context.Context, cfg *schema.Azure, cat *catalog.Catalog, opts Options) (*Provider, error) {
	if cfg == nil || cat == nil {
		return nil, errors.New("azure: a config and a catalog are required")
	}
	if cfg.Subscription == "" || cfg.ResourceGroup == "" {
		return nil, errors.New("azure: subscription and resourceGroup are required")
	}
	if opts.PollFrequency < 0 {
		return nil, fmt.Errorf("azure: poll frequency %s is negative", opts.PollFrequency)
	}
	clientOpts, err := clientOptions(opts)
	if err != nil {
		return nil, err
	}
	cred := opts.Credential
	if cred == nil {
		cred, err = azidentity.NewDefaultAzureCredential(nil)
		if err != nil {
			return nil, fmt.Errorf("azure: setting up the default credential chain, %w", err)
		}
	}
	vms, err := armcompute.NewVirtualMachinesClient(cfg.Subscription, credential{cred}, clientOpts)
	if err != nil {
		return nil, fmt.Errorf("azure: creating the compute client, %w", err)
	}
	usages, err := armcompute.NewUsageClient(cfg.Subscription, credential{cred}, clientOpts)
	if err != nil {
		return nil, fmt.Errorf("azure: creating the usage client, %w", err)
	}
	skus, err := armcompute.NewResourceSKUsClient(cfg.Subscription, credential{cred}, clientOpts)
	if err != nil {
		return nil, fmt.Errorf("azure: creating the resource SKUs client, %w", err)
	}
	ppgs, err := armcompute.NewProximityPlacementGroupsClient(cfg.Subscription, credential{cred}, clientOpts)
	if err != nil {
		return nil, fmt.Errorf("azure: creating the proximity placement groups client, %w", err)
	}
	regions := slices.Clone(cfg.Regions)
	if len(regions) == 0 {
		// As the config loader does: no list means every region the
		// catalog knows.
		for _, r := range cat.RegionsOf(catalog.Azure) {
			regions = append(regions, r.Name)
		}
	}
	p := &Provider{
		cfg:     cfg,
		cat:     cat,
		regions: regions,
		vms:     vms,
		usages:  usages,
		skus:    skus,
		ppgs:    ppgs,
		poll:    opts.PollFrequency,
	}
	if p.poll == 0 {
		p.poll = defaultPollFrequency
	}
	p.launch, p.launchErr = readLaunch(cfg)
	return p, nil
}

// clientOptions turns Options into armcompute's client options.
func clientOptions(opts Options) (*arm.ClientOptions, error) {
	retry := opts.Retry
	if retry.MaxRetries == 0 {
		retry.MaxRetries = defaultMaxRetries
	}
	if retry.RetryDelay == 0 {
		retry.RetryDelay = defaultRetryDelay
	}
	if retry.MaxRetryDelay == 0 {
		retry.MaxRetryDelay = defaultMaxRetryDelay
	}
	if retry.TryTimeout == 0 {
		retry.TryTimeout = defaultTryTimeout
	}
	co := &arm.ClientOptions{ClientOptions: policy.ClientOptions{Retry: retry}}
	if opts.Endpoint == "" {
		if opts.Credential != nil {
			return nil, errors.New("azure: a credential override is for the emulator and needs an Endpoint; real Azure takes credentials from the standard chain")
		}
		return co, nil
	}
	u, err := url.Parse(opts.Endpoint)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("azure: endpoint %q is not an http(s) URL", opts.Endpoint)
	}
	if u.Scheme == "http" {
		if !loopback(u.Hostname()) {
			return nil, fmt.Errorf("azure: endpoint %q: plain http is allowed on loopback only", opts.Endpoint)
		}
		co.InsecureAllowCredentialWithHTTP = true
	}
	co.Cloud = cloud.Configuration{Services: map[cloud.ServiceName]cloud.ServiceConfiguration{
		cloud.ResourceManager: {Endpoint: opts.Endpoint, Audience: cloud.AzurePublic.Services[cloud.ResourceManager].Audience},
	}}
	// An endpoint of our own has no resource providers to register.
	co.DisableRPRegistration = true
	return co, nil
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Name is the cloud's name.
func (p *Provider) Name() string { return catalog.Azure }

// Offers returns the catalog's offers in the configured regions. Azure's
// API has no live signal worth adding: spot prices come from the retail
// price list, which the catalog already holds.
func (p *Provider) Offers(ctx context.Context) ([]planner.Offer, error) {
	return planner.Expand(p.cat, map[string][]string{catalog.Azure: p.regions}), nil
}

// configured reports whether a location is one of the provider's regions.
func (p *Provider) configured(location string) bool {
	return slices.Contains(p.regions, normalizeLocation(location))
}
