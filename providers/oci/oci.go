// SPDX-License-Identifier: Apache-2.0

package oci

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/oracle/oci-go-sdk/v65/common"
	"github.com/oracle/oci-go-sdk/v65/core"
	"github.com/oracle/oci-go-sdk/v65/identity"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/providers/outbound"
	"github.com/gpufleet/gpufleet/schema"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// Name is the provider's cloud.
const Name = catalog.OCI

// Options tunes a Provider. The zero value talks to OCI with the SDK's
// own credentials.
type Options struct {
	// Endpoint, when set, is an emulator's origin (http://127.0.0.1:8088)
	// that serves every region: each request goes there with the regional
	// host it was meant for (iaas.us-ashburn-1.oraclecloud.com) as its
	// Host, so that what is signed is what OCI would see. It must be
	// https, or http on loopback unless AllowHTTP.
	Endpoint  string
	AllowHTTP bool
	// ConfigurationProvider gives the tenancy, user and signing key; nil
	// means common.DefaultConfigProvider(), the SDK's standard chain. The
	// emulator gets EmulatorConfigProvider's throwaway key, so real
	// credentials never go there.
	ConfigurationProvider common.ConfigurationProvider
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
	// second. Zero means 1 second and 30 seconds.
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

// Provider places GPU instances on OCI in one compartment.
type Provider struct {
	cfg  schema.OCI
	cat  *catalog.Catalog
	opts Options
	// regions are the configured regions, each once, in their order.
	regions []string
	clients map[string]*regionClients
	// credentials says where the signing key came from, for an error
	// that reports it refused.
	credentials string
}

// regionClients are one region's SDK clients, and what is read of the
// region once.
type regionClients struct {
	compute  core.ComputeClient
	identity identity.IdentityClient

	// ads are the region's availability domains, read at first use; a
	// failed read is made again next time. mu is held while reading, so
	// that creates arriving together read them once.
	mu  sync.Mutex
	ads []identity.AvailabilityDomain
}

var (
	_ providers.Provider    = (*Provider)(nil)
	_ providers.Preflighter = (*Provider)(nil)
)

// New sets up the provider for the compartment and regions of cfg. It
// reads the credentials' configuration but makes no request: credentials
// OCI refuses fail the first call, saying where they were read from.
func New(ctx context.Context, cfg *schema.OCI, cat *catalog.Catalog, opts Options) (*Provider, error) {
	switch {
	case cfg == nil:
		return nil, errors.New("oci: not configured")
	case cfg.Compartment == "":
		return nil, errors.New("oci: no compartment configured (clouds.oci.compartment)")
	case len(cfg.Regions) == 0:
		return nil, errors.New("oci: no regions configured")
	case cat == nil:
		return nil, errors.New("oci: no catalog")
	}
	opts = opts.withDefaults()
	var origin *url.URL
	if opts.Endpoint != "" {
		u, err := outbound.CheckURL(opts.Endpoint, opts.AllowHTTP)
		if err != nil {
			return nil, fmt.Errorf("oci: the endpoint %q %w", opts.Endpoint, err)
		}
		if (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
			return nil, fmt.Errorf("oci: the endpoint %q is not an origin: the regional hosts' paths go to it as they are", opts.Endpoint)
		}
		origin = &url.URL{Scheme: u.Scheme, Host: u.Host}
	}
	p := &Provider{cfg: *cfg, cat: cat, opts: opts, clients: map[string]*regionClients{}, credentials: defaultCredentials}
	provider := opts.ConfigurationProvider
	if provider == nil {
		provider = common.DefaultConfigProvider()
	} else {
		p.credentials = "the configuration provider gpufleet was given"
	}
	if ok, err := common.IsConfigurationProviderValid(provider); !ok {
		return nil, fmt.Errorf("oci: no usable credentials in %s: %v", p.credentials, err)
	}
	for _, region := range cfg.Regions {
		if slices.Contains(p.regions, region) {
			continue
		}
		c, err := p.newRegionClients(provider, region, origin)
		if err != nil {
			return nil, fmt.Errorf("oci: setting up region %s, %w", region, err)
		}
		p.regions = append(p.regions, region)
		p.clients[region] = c
	}
	return p, nil
}

// defaultCredentials is where the SDK's standard chain reads credentials
// from, as an error that they were refused names it.
const defaultCredentials = "~/.oci/config's DEFAULT profile (or the file OCI_CONFIG_FILE names), or the variables TF_VAR_tenancy_ocid, TF_VAR_user_ocid, TF_VAR_fingerprint, TF_VAR_private_key_path and TF_VAR_region"

// Name is "oci".
func (p *Provider) Name() string { return Name }

// client returns a region's clients, or an invalid error for a region not
// configured.
func (p *Provider) client(op string, offer planner.OfferKey, region string) (*regionClients, error) {
	c, ok := p.clients[region]
	if !ok {
		return nil, &providers.Error{Kind: providers.KindInvalid, Cloud: Name, Op: op, Offer: offer,
			Message: fmt.Sprintf("region %q is not configured", region)}
	}
	return c, nil
}

// Offers are the catalog's on-demand offers in the configured regions:
// gpufleet launches OCI's GPU shapes on demand only (the catalog has no
// preemptible prices), and the compute API publishes neither prices nor
// stock, so the catalog is all there is.
func (p *Provider) Offers(ctx context.Context) ([]planner.Offer, error) {
	return slices.DeleteFunc(planner.Expand(p.cat, map[string][]string{Name: p.regions}), func(o planner.Offer) bool {
		return o.Market != catalog.OnDemand
	}), nil
}
