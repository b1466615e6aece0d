// SPDX-License-Identifier: Apache-2.0

package lambda

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-retryablehttp"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/providers/outbound"
	"github.com/gpufleet/gpufleet/schema"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// Name is the provider's cloud.
const Name = catalog.Lambda

// APIKeyEnv names the variable the API key is read from. The key is never
// in the repository, and never in a log or an error.
const APIKeyEnv = "LAMBDA_API_KEY"

// DefaultEndpoint is Lambda Cloud's API.
const DefaultEndpoint = "https://cloud.lambda.ai/api/v1"

// apiPath is where the API's methods are under an endpoint given as an
// origin alone, as the emulator's is.
const apiPath = "/api/v1"

// Options tunes a Provider. The zero value talks to Lambda Cloud with the
// key in LAMBDA_API_KEY.
type Options struct {
	// Endpoint replaces DefaultEndpoint, e.g. with the emulator's URL. An
	// origin without a path gets /api/v1. It must be https, or http on
	// loopback unless AllowHTTP.
	Endpoint  string
	AllowHTTP bool
	// APIKey, when set, is the key instead of LAMBDA_API_KEY's: for tests,
	// and for the emulator, which takes any.
	APIKey string
	// HTTPClient, when set, carries the requests through its Transport
	// (tests give one that trusts their certificate).
	HTTPClient *http.Client
	// Timeout bounds one attempt of a request. Zero means 30 seconds.
	Timeout time.Duration
	// RetryMax is how many times a throttled or failed request is tried
	// again. Zero means 4.
	RetryMax int
	// RetryWaitMin and RetryWaitMax bound the backoff between attempts,
	// which doubles from the first; a Retry-After is honoured up to the
	// second. Zero means 1 second and 30 seconds: Lambda's launch limit
	// gives a token back every twelve seconds.
	RetryWaitMin, RetryWaitMax time.Duration
}

func (o Options) withDefaults() Options {
	if o.Timeout <= 0 {
		o.Timeout = outbound.DefaultTimeout
	}
	if o.RetryMax <= 0 {
		o.RetryMax = 4
	}
	if o.RetryWaitMin <= 0 {
		o.RetryWaitMin = time.Second
	}
	if o.RetryWaitMax <= 0 {
		o.RetryWaitMax = 30 * time.Second
	}
	o.RetryWaitMax = max(o.RetryWaitMax, o.RetryWaitMin)
	return o
}

// Provider places GPU instances on Lambda Cloud in one account.
type Provider struct {
	cfg     schema.Lambda
	cat     *catalog.Catalog
	opts    Options
	regions map[string]bool

	base   *url.URL
	key    string
	client *retryablehttp.Client

	// sshKeyChecked is set once the account is seen to have the SSH key
	// launches name; a failed check is made again at the next create.
	mu            sync.Mutex
	sshKeyChecked bool
	// keyMu lets one create at a time look for the SSH key, and add it,
	// so two cannot both find it missing and both add it.
	keyMu sync.Mutex
}

var (
	_ providers.Provider    = (*Provider)(nil)
	_ providers.Preflighter = (*Provider)(nil)
)

// New sets up the provider for the regions of cfg. It makes no request:
// a key the API refuses fails the first call, naming LAMBDA_API_KEY.
func New(ctx context.Context, cfg *schema.Lambda, cat *catalog.Catalog, opts Options) (*Provider, error) {
	if cfg == nil {
		return nil, errors.New("lambda: not configured")
	}
	if len(cfg.Regions) == 0 {
		return nil, errors.New("lambda: no regions configured")
	}
	if cat == nil {
		return nil, errors.New("lambda: no catalog")
	}
	opts = opts.withDefaults()
	key := cmp.Or(opts.APIKey, os.Getenv(APIKeyEnv))
	if strings.TrimSpace(key) == "" {
		return nil, fmt.Errorf("lambda: no API key: set %s to a key of the account (Lambda Cloud console, API keys)", APIKeyEnv)
	}
	endpoint := cmp.Or(opts.Endpoint, DefaultEndpoint)
	base, err := outbound.CheckURL(endpoint, opts.AllowHTTP)
	if err != nil {
		return nil, fmt.Errorf("lambda: the endpoint %q %w", endpoint, err)
	}
	if base.Path == "" || base.Path == "/" {
		base.Path = apiPath
	}
	base.Path = strings.TrimSuffix(base.Path, "/")
	p := &Provider{
		cfg:     *cfg,
		cat:     cat,
		opts:    opts,
		regions: map[string]bool{},
		base:    base,
		key:     key,
	}
	p.client = p.newClient()
	for _, r := range cfg.Regions {
		p.regions[r] = true
	}
	return p, nil
}

// Name is "lambda".
func (p *Provider) Name() string { return Name }

// zoneOf is a region's one zone: the catalog's, which names it as the
// region, or the region's own name for a region the catalog lacks.
func (p *Provider) zoneOf(region string) string {
	if r, ok := p.cat.Region(Name, region); ok && len(r.Zones) > 0 {
		return r.Zones[0]
	}
	return region
}

// Offers are the catalog's on-demand offers in the configured regions,
// Lambda Cloud having no spot market, with the API's word on capacity: an
// offer whose type Lambda does not list now, or lists without room in the
// offer's region, has Available 0, which the planner reads as no
// capacity; any other is unlimited, as the API says no more than "some".
// A failed read fails the call, and the reconciler plans with the catalog.
func (p *Provider) Offers(ctx context.Context) ([]planner.Offer, error) {
	types, err := p.instanceTypes(ctx, "offers")
	if err != nil {
		return nil, err
	}
	offers := slices.DeleteFunc(planner.Expand(p.cat, map[string][]string{Name: p.cfg.Regions}), func(o planner.Offer) bool {
		return o.Market != catalog.OnDemand
	})
	for i := range offers {
		o := &offers[i]
		if !types.hasRoom(o.InstanceType, o.Region) {
			o.Available = 0
		}
	}
	return offers, nil
}
