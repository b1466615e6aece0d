package gcp

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	compute "cloud.google.com/go/compute/apiv1"
	"google.golang.org/api/option"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/schema"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// Name is the provider's cloud.
const Name = catalog.GCP

// Options tunes a Provider. The zero value talks to the real Compute Engine
// with Application Default Credentials.
type Options struct {
	// Endpoint replaces the Compute Engine endpoint, e.g. with the
	// emulator's URL; the clients append /compute/v1/….
	Endpoint string
	// ClientOptions are passed to the SDK clients after Endpoint. Without
	// any the clients find credentials through Application Default
	// Credentials (GOOGLE_APPLICATION_CREDENTIALS, gcloud's ADC file, the
	// metadata server); the emulator passes option.WithoutAuthentication().
	ClientOptions []option.ClientOption
	// OperationPoll is the pause between looks at an unfinished operation.
	// zoneOperations.wait already blocks on the server until the operation
	// is done or about two minutes pass, so the pause only spaces out calls
	// when the server answers early. Zero means 2 seconds.
	OperationPoll time.Duration
	// OperationTimeout bounds how long a create or delete waits for its
	// operation. Zero means 15 minutes.
	OperationTimeout time.Duration
	// RetryAttempts bounds the attempts of one API call, the first
	// included. Zero means 5.
	RetryAttempts int
	// RetryTime bounds how long one API call keeps retrying. Zero means 2
	// minutes.
	RetryTime time.Duration
	// RetryBase is the first backoff; each retry doubles it, with jitter,
	// up to RetryMax. Zero means 1 second and 30 seconds.
	RetryBase, RetryMax time.Duration
	// Concurrency bounds parallel calls across regions in the providers
	// that make one call per region. GCE lists a whole project in one
	// aggregated call (see List), so this provider has nothing to spread
	// and accepts it only for a uniform configuration. Zero means 8.
	Concurrency int
}

func (o Options) withDefaults() Options {
	if o.OperationPoll <= 0 {
		o.OperationPoll = 2 * time.Second
	}
	if o.OperationTimeout <= 0 {
		o.OperationTimeout = 15 * time.Minute
	}
	if o.RetryAttempts <= 0 {
		o.RetryAttempts = 5
	}
	if o.RetryTime <= 0 {
		o.RetryTime = 2 * time.Minute
	}
	if o.RetryBase <= 0 {
		o.RetryBase = time.Second
	}
	if o.RetryMax <= 0 {
		o.RetryMax = 30 * time.Second
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 8
	}
	return o
}

// Provider places GPU VMs on Compute Engine in one project.
type Provider struct {
	cfg     schema.GCP
	cat     *catalog.Catalog
	opts    Options
	regions map[string]bool

	instances  *compute.InstancesClient
	operations *compute.ZoneOperationsClient

	// deleting holds the "zone/name" of instances this process is
	// deleting. A spot VM that GCE is stopping or has stopped is preempted
	// unless we asked for it, and GCE's own view does not say who did.
	mu       sync.Mutex
	deleting map[string]bool
}

var _ providers.Provider = (*Provider)(nil)

// New connects to Compute Engine for the project and regions of cfg. Call
// Close when done.
func New(ctx context.Context, cfg *schema.GCP, cat *catalog.Catalog, opts Options) (*Provider, error) {
	if cfg == nil || cfg.Project == "" {
		return nil, errors.New("gcp: no project configured")
	}
	if len(cfg.Regions) == 0 {
		return nil, errors.New("gcp: no regions configured")
	}
	if cat == nil {
		return nil, errors.New("gcp: no catalog")
	}
	opts = opts.withDefaults()
	var clientOpts []option.ClientOption
	if opts.Endpoint != "" {
		clientOpts = append(clientOpts, option.WithEndpoint(opts.Endpoint))
	}
	clientOpts = append(clientOpts, opts.ClientOptions...)
	instances, err := compute.NewInstancesRESTClient(ctx, clientOpts...)
	if err != nil {
		return nil, fmt.Errorf("gcp: creating the instances client, %w", err)
	}
	operations, err := compute.NewZoneOperationsRESTClient(ctx, clientOpts...)
	if err != nil {
		instances.Close()
		return nil, fmt.Errorf("gcp: creating the zone operations client, %w", err)
	}
	p := &Provider{
		cfg:        *cfg,
		cat:        cat,
		opts:       opts,
		regions:    map[string]bool{},
		instances:  instances,
		operations: operations,
		deleting:   map[string]bool{},
	}
	for _, r := range cfg.Regions {
		p.regions[r] = true
	}
	return p, nil
}

// Close releases the SDK clients' connections.
func (p *Provider) Close() error {
	return errors.Join(p.instances.Close(), p.operations.Close())
}

// Name is "gcp".
func (p *Provider) Name() string { return Name }

// Offers expands the catalog over the configured regions. Compute Engine
// publishes no live price or stock signal in its API, so the catalog is
// all there is.
func (p *Provider) Offers(ctx context.Context) ([]planner.Offer, error) {
	return planner.Expand(p.cat, map[string][]string{Name: p.cfg.Regions}), nil
}

func (p *Provider) markDeleting(key string, on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if on {
		p.deleting[key] = true
	} else {
		delete(p.deleting, key)
	}
}

func (p *Provider) isDeleting(key string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.deleting[key]
}
