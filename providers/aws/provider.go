// SPDX-License-Identifier: Apache-2.0

package aws

import (
	"context"
	"fmt"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/servicequotas"

	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/schema"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// Defaults for the zero Options.
const (
	defaultMaxAttempts = 5
	defaultMaxBackoff  = 20 * time.Second
	defaultCallTimeout = 2 * time.Minute
	defaultConcurrency = 8
)

// Options tune the provider; the zero value is what production uses.
type Options struct {
	// Endpoint replaces EC2's and Service Quotas' endpoints in every
	// region, to point the provider at an emulator, which serves both.
	Endpoint string
	// Credentials replace the SDK's credential chain. For emulators only:
	// real accounts are reached through the standard chain (environment,
	// AWS_PROFILE, SSO, instance metadata).
	Credentials awssdk.CredentialsProvider
	// HTTPClient replaces the SDK's HTTP client. Tests against a loopback
	// emulator pass LoopbackHTTPClient, which sidesteps an SDK race that
	// only a server that quick can trigger; production keeps the SDK's.
	HTTPClient awssdk.HTTPClient
	// MaxAttempts bounds the attempts of one API call, retries included.
	// Zero means 5.
	MaxAttempts int
	// MaxBackoff bounds the wait between two attempts. Zero means 20 s.
	MaxBackoff time.Duration
	// CallTimeout bounds one API call with all its retries. Zero means two
	// minutes.
	CallTimeout time.Duration
	// Concurrency bounds how many regions are queried at once. Zero
	// means 8.
	Concurrency int
}

// Provider is the EC2 provider.
type Provider struct {
	cfg     *schema.AWS
	cat     *catalog.Catalog
	opts    Options
	clients map[string]*ec2.Client // by region
	// quotas are the regions' Service Quotas clients, built like the EC2
	// ones: same configuration, credentials, retries and endpoint.
	quotas map[string]*servicequotas.Client
	roots  rootDevices
}

var _ providers.Provider = (*Provider)(nil)

// New builds a provider for the configured regions. It reads the SDK's
// shared configuration but makes no API call: credentials are resolved on
// first use.
func New(ctx context.Context, cfg *schema.AWS, cat *catalog.Catalog, opts Options) (*Provider, error) {
	if cfg == nil || len(cfg.Regions) == 0 {
		return nil, fmt.Errorf("aws: no regions configured")
	}
	if cat == nil {
		return nil, fmt.Errorf("aws: no catalog")
	}
	if opts.MaxAttempts <= 0 {
		opts.MaxAttempts = defaultMaxAttempts
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = defaultMaxBackoff
	}
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = defaultCallTimeout
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = defaultConcurrency
	}

	load := []func(*config.LoadOptions) error{
		config.WithRetryer(func() awssdk.Retryer { return newRetryer(opts) }),
	}
	if opts.Credentials != nil {
		load = append(load, config.WithCredentialsProvider(opts.Credentials))
	}
	sdkConfig, err := config.LoadDefaultConfig(ctx, load...)
	if err != nil {
		return nil, fmt.Errorf("aws: loading the SDK configuration, %w", err)
	}
	if sdkConfig.Credentials != nil {
		// Marks a failure to find credentials, so it is classified as an
		// auth error rather than an outage.
		sdkConfig.Credentials = markedCredentials{sdkConfig.Credentials}
	}

	p := &Provider{cfg: cfg, cat: cat, opts: opts, clients: map[string]*ec2.Client{}, quotas: map[string]*servicequotas.Client{}}
	for _, region := range cfg.Regions {
		if _, dup := p.clients[region]; dup {
			continue
		}
		p.clients[region] = ec2.NewFromConfig(sdkConfig, func(o *ec2.Options) {
			o.Region = region
			if opts.Endpoint != "" {
				o.BaseEndpoint = awssdk.String(opts.Endpoint)
			}
			// Set on the client rather than loaded with the configuration,
			// which would try to apply AWS_CA_BUNDLE to a client it cannot
			// reach into.
			if opts.HTTPClient != nil {
				o.HTTPClient = opts.HTTPClient
			}
		})
		p.quotas[region] = servicequotas.NewFromConfig(sdkConfig, func(o *servicequotas.Options) {
			o.Region = region
			if opts.Endpoint != "" {
				o.BaseEndpoint = awssdk.String(opts.Endpoint)
			}
			if opts.HTTPClient != nil {
				o.HTTPClient = opts.HTTPClient
			}
		})
	}
	return p, nil
}

// Name is "aws".
func (p *Provider) Name() string { return catalog.AWS }

// client returns the region's EC2 client, or an invalid-request error for a
// region the provider was not configured with.
func (p *Provider) client(op, region string) (*ec2.Client, error) {
	c, ok := p.clients[region]
	if !ok {
		return nil, &providers.Error{Kind: providers.KindInvalid, Cloud: catalog.AWS, Op: op,
			Message: fmt.Sprintf("region %q is not configured", region)}
	}
	return c, nil
}

// call bounds one API call, retries included, in time.
func (p *Provider) call(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, p.opts.CallTimeout)
}

// markedCredentials wraps the credential chain so that its failures can be
// told apart from the API's.
type markedCredentials struct{ next awssdk.CredentialsProvider }

func (m markedCredentials) Retrieve(ctx context.Context) (awssdk.Credentials, error) {
	creds, err := m.next.Retrieve(ctx)
	if err != nil {
		return creds, &credentialsError{err: err}
	}
	return creds, nil
}

type credentialsError struct{ err error }

func (e *credentialsError) Error() string { return "no usable AWS credentials: " + e.err.Error() }
func (e *credentialsError) Unwrap() error { return e.err }
