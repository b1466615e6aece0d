// SPDX-License-Identifier: Apache-2.0

package gcp

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"path"
	"slices"
	"strconv"
	"testing"
	"time"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/api/option"
	"google.golang.org/protobuf/proto"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/providers/conformance"
	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/providers/sim/gcesim"
	"github.com/gpufleet/gpufleet/schema"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

const (
	testProject = "gpufleet-test"
	testZone    = "us-central1-a"
	testType    = "g2-standard-4"
)

var (
	onDemand = planner.OfferKey{Cloud: Name, Region: "us-central1", Zone: testZone, InstanceType: testType, Market: catalog.OnDemand}
	spot     = planner.OfferKey{Cloud: Name, Region: "us-central1", Zone: testZone, InstanceType: testType, Market: catalog.Spot}
)

// backend is a provider over the GCE front on loopback.
type backend struct {
	provider *Provider
	world    *sim.World
	// url is the front's, for SDK clients of the tests' own.
	url string
}

// testConfig is a project in two regions with every launch setting filled.
func testConfig() *schema.GCP {
	cfg := &schema.GCP{Enabled: true, Project: testProject, Regions: []string{"us-central1", "europe-west4"}}
	cfg.Launch.Image = "projects/debian-cloud/global/images/family/debian-12"
	cfg.Launch.Network = "global/networks/default"
	cfg.Launch.DiskGB = 200
	cfg.Launch.SubnetByRegion = map[string]string{"us-central1": "regions/us-central1/subnetworks/gpu"}
	cfg.Launch.ServiceAccount = "nodes@gpufleet-test.iam.gserviceaccount.com"
	return cfg
}

// newBackend starts a world, its GCE front on loopback and a provider
// whose retries and polls take milliseconds. The zero sim.Config finishes
// operations at once. wrap, when set, wraps the front, to look at requests.
func newBackend(t *testing.T, world sim.Config, wrap func(http.Handler) http.Handler) backend {
	t.Helper()
	return newBackendWith(t, testConfig(), world, wrap)
}

// newBackendWith is newBackend with a provider configured by cfg.
func newBackendWith(t *testing.T, cfg *schema.GCP, world sim.Config, wrap func(http.Handler) http.Handler) backend {
	t.Helper()
	// Enough capacity and quota for the paging case's 1,001 instances.
	world.Capacity = max(world.Capacity, 2000)
	world.Quota = max(world.Quota, 100000)
	w, err := sim.New(world)
	if err != nil {
		t.Fatal(err)
	}
	// The nodes' service account is one the project has, as GCE requires.
	if cfg.Launch.ServiceAccount != "" {
		if err := w.SetAccount(sim.Account{ServiceAccounts: []string{cfg.Launch.ServiceAccount}}); err != nil {
			t.Fatal(err)
		}
	}
	var front http.Handler = gcesim.New(w, gcesim.Options{})
	if wrap != nil {
		front = wrap(front)
	}
	ts := httptest.NewServer(front)
	t.Cleanup(ts.Close)
	makeSubnetworks(t, ts.URL, cfg)
	p, err := New(context.Background(), cfg, w.Catalog(), Options{
		Endpoint:      ts.URL,
		ClientOptions: []option.ClientOption{option.WithoutAuthentication()},
		OperationPoll: 5 * time.Millisecond,
		RetryBase:     time.Millisecond,
		RetryMax:      10 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return backend{provider: p, world: w, url: ts.URL}
}

// makeSubnetworks makes the subnetworks cfg names, on its network, as an
// operator would have: the emulator refuses instances on subnetworks that
// do not exist. Their ranges are in 10.128.0.0/9, clear of the ranges of
// the default network's own subnetworks. The front makes a subnetwork
// when it answers the insert, so nothing waits for the operation.
func makeSubnetworks(t *testing.T, endpoint string, cfg *schema.GCP) {
	t.Helper()
	ctx := context.Background()
	client, err := compute.NewSubnetworksRESTClient(ctx, option.WithEndpoint(endpoint), option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	i := 0
	for _, region := range slices.Sorted(maps.Keys(cfg.Launch.SubnetByRegion)) {
		name := path.Base(cfg.Launch.SubnetByRegion[region])
		_, err := client.Insert(ctx, &computepb.InsertSubnetworkRequest{Project: cfg.Project, Region: region, SubnetworkResource: &computepb.Subnetwork{
			Name:        proto.String(name),
			Network:     proto.String(cmp.Or(cfg.Launch.Network, "global/networks/default")),
			IpCidrRange: proto.String(fmt.Sprintf("10.%d.0.0/20", 240+i)),
		}})
		if err != nil {
			t.Fatalf("making subnetwork %s in %s: %v", name, region, err)
		}
		i++
	}
}

func TestConformance(t *testing.T) {
	b := newBackend(t, sim.Config{}, nil)
	conformance.Run(t, conformance.Harness{
		Provider:    b.provider,
		Offer:       onDemand,
		Spot:        spot,
		World:       b.world,
		Seed:        b.seed,
		Foreign:     b.foreign,
		Alive:       b.alive,
		CreateCalls: []string{"gcp " + gcesim.OpInsert},
		DeleteCalls: []string{"gcp " + gcesim.OpDelete},
	})
}

// seed launches owned instances straight into the world, as the front
// would after an insert: the scope and name it looks instances up by, and
// the scheduling it renders. They are spread over the region's zones, so
// that the capacity the suite restores in the offer's zone (1,000) still
// leaves room for the cases that run after.
func (b backend) seed(ctx context.Context, fleet string, n int) error {
	// Only the zones that sell the type: the world refuses it elsewhere.
	zones := b.world.OfferedZones(Name, onDemand.Region, testType)
	if len(zones) == 0 {
		return fmt.Errorf("no zone of %s offers %s", onDemand.Region, testType)
	}
	for i := range n {
		offer := onDemand
		offer.Zone = zones[i%len(zones)]
		token := planner.Token(fleet, "w", offer, "seed", i)
		req := providers.CreateRequest{Token: token, Offer: offer, Fleet: fleet, Workload: "w"}
		_, err := b.world.Launch(sim.LaunchSpec{
			Cloud:        Name,
			Zone:         offer.Zone,
			InstanceType: testType,
			Market:       catalog.OnDemand,
			Scope:        "projects/" + testProject + "/zones/" + offer.Zone,
			Name:         providers.InstanceName(fleet, "w", token),
			Tags:         providers.OwnershipTags(req),
			Properties:   map[string]string{"provisioningModel": "STANDARD", "onHostMaintenance": "TERMINATE"},
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// foreign inserts a VM without labels through the raw SDK client.
func (b backend) foreign(ctx context.Context) (string, error) {
	name := "not-ours-" + strconv.Itoa(b.world.Rand(1_000_000))
	op, err := b.provider.instances.Insert(ctx, &computepb.InsertInstanceRequest{
		Project: testProject,
		Zone:    testZone,
		InstanceResource: &computepb.Instance{
			Name:        proto.String(name),
			MachineType: proto.String("zones/" + testZone + "/machineTypes/" + testType),
			Disks: []*computepb.AttachedDisk{{Boot: proto.Bool(true), InitializeParams: &computepb.AttachedDiskInitializeParams{
				SourceImage: proto.String("projects/debian-cloud/global/images/family/debian-12"),
			}}},
		},
	})
	if err != nil {
		return "", err
	}
	if e := op.Proto().GetError(); e != nil {
		return "", operationError("create", op.Proto())
	}
	return name, nil
}

func (b backend) alive(ctx context.Context, name string) (bool, error) {
	_, err := b.provider.get(ctx, testZone, name)
	if err == nil {
		return true, nil
	}
	if classify("get", err).Kind == providers.KindNotFound {
		return false, nil
	}
	return false, err
}
