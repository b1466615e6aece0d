// SPDX-License-Identifier: Apache-2.0

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
	// Concurrency bounds parallel calls. GCE lists a whole project's
	// instances in one aggregated call (see List), so only Capacity, which
	// reads each region's quotas and each zone's machine types, spreads
	// its calls. Zero means 8.
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

	instances    *compute.InstancesClient
	operations   *compute.ZoneOperationsClient
	regionOps    *compute.RegionOperationsClient
	policies     *compute.ResourcePoliciesClient
	regionsAPI   *compute.RegionsClient
	projects     *compute.ProjectsClient
	machineTypes *compute.MachineTypesClient

	// lists counts the machine type lists Capacity runs, which may
	// outlive it (see zoneOffering).
	lists sync.WaitGroup

	// deleting holds the "zone/name" of instances this process is
	// deleting. A spot VM that GCE is stopping or has stopped is preempted
	// unless we asked for it, and GCE's own view does not say who did.
	mu       sync.Mutex
	deleting map[string]bool
}

var (
	_ providers.Provider         = (*Provider)(nil)
	_ providers.BatchCreator     = (*Provider)(nil)
	_ providers.PlacementGrouper = (*Provider)(nil)
)

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
	p := &Provider{
		cfg:      *cfg,
		cat:      cat,
		opts:     opts,
		regions:  map[string]bool{},
		deleting: map[string]bool{},
	}
	// Each client is closed again if a later one cannot be made.
	var made []interface{ Close() error }
	client := func(what string, err error, c interface{ Close() error }) error {
		if err != nil {
			for _, c := range made {
				c.Close()
			}
			return fmt.Errorf("gcp: creating the %s client, %w", what, err)
		}
		made = append(made, c)
		return nil
	}
	var err error
	p.instances, err = compute.NewInstancesRESTClient(ctx, clientOpts...)
	if err := client("instances", err, p.instances); err != nil {
		return nil, err
	}
	p.operations, err = compute.NewZoneOperationsRESTClient(ctx, clientOpts...)
	if err := client("zone operations", err, p.operations); err != nil {
		return nil, err
	}
	p.regionOps, err = compute.NewRegionOperationsRESTClient(ctx, clientOpts...)
	if err := client("region operations", err, p.regionOps); err != nil {
		return nil, err
	}
	p.policies, err = compute.NewResourcePoliciesRESTClient(ctx, clientOpts...)
	if err := client("resource policies", err, p.policies); err != nil {
		return nil, err
	}
	p.regionsAPI, err = compute.NewRegionsRESTClient(ctx, clientOpts...)
	if err := client("regions", err, p.regionsAPI); err != nil {
		return nil, err
	}
	p.projects, err = compute.NewProjectsRESTClient(ctx, clientOpts...)
	if err := client("projects", err, p.projects); err != nil {
		return nil, err
	}
	p.machineTypes, err = compute.NewMachineTypesRESTClient(ctx, clientOpts...)
	if err := client("machine types", err, p.machineTypes); err != nil {
		return nil, err
	}
	for _, r := range cfg.Regions {
		p.regions[r] = true
	}
	return p, nil
}

// Close releases the SDK clients' connections, once any list Capacity gave
// up on has ended its request.
func (p *Provider) Close() error {
	p.lists.Wait()
	return errors.Join(p.instances.Close(), p.operations.Close(), p.regionOps.Close(), p.policies.Close(), p.regionsAPI.Close(), p.projects.Close(), p.machineTypes.Close())
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
