// SPDX-License-Identifier: Apache-2.0

package azure

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	azcloud "github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	azfake "github.com/Azure/azure-sdk-for-go/sdk/azcore/fake"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/providers/conformance"
	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/providers/sim/armsim"
	"github.com/gpufleet/gpufleet/schema"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

const (
	testSub = "00000000-1111-2222-3333-444444444444"
	// testRG is the emulator's fixture resource group, which has a
	// network in every region: gpu-<region>, and gpu in eastus.
	testRG = "gpufleet"
	t4     = "Standard_NC4as_T4_v3"
)

var (
	onDemandT4 = planner.OfferKey{Cloud: catalog.Azure, Region: "eastus", Zone: "eastus-1", InstanceType: t4, Market: catalog.OnDemand}
	spotT4     = planner.OfferKey{Cloud: catalog.Azure, Region: "eastus", Zone: "eastus-2", InstanceType: t4, Market: catalog.Spot}
)

// testRetry keeps azcore's retries with test-sized waits; MaxRetryDelay
// stays above the front's one-second Retry-After, or azcore would give up
// on a throttled call instead of waiting.
var testRetry = policy.RetryOptions{MaxRetries: 4, RetryDelay: time.Millisecond, MaxRetryDelay: 2 * time.Second}

// env is a provider on an emulated ARM over loopback HTTP.
type env struct {
	world    *sim.World
	url      string
	provider *Provider
	// raw is a bare armcompute client on the same front, for what the
	// provider must not do itself (foreign VMs).
	raw *armcompute.VirtualMachinesClient
}

type envConfig struct {
	front armsim.Options
	retry *policy.RetryOptions
	edit  func(*schema.Azure)
	// catalog, when set, replaces the default catalog, for the world and
	// the provider alike.
	catalog *catalog.Catalog
}

func newEnv(t *testing.T, ec envConfig) *env {
	t.Helper()
	cat := ec.catalog
	if cat == nil {
		cat = catalog.Default()
	}
	world, err := sim.New(sim.Config{
		Catalog: cat,
		// Room for the paging case's thousand VMs beside the others.
		Capacity: 5000,
		Quota:    1 << 20,
	})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(armsim.New(world, ec.front))
	t.Cleanup(ts.Close)
	cfg := testConfig()
	if ec.edit != nil {
		ec.edit(cfg)
	}
	retry := testRetry
	if ec.retry != nil {
		retry = *ec.retry
	}
	p, err := New(context.Background(), cfg, cat, Options{
		Endpoint:      ts.URL,
		Credential:    &azfake.TokenCredential{},
		PollFrequency: 5 * time.Millisecond,
		Retry:         retry,
	})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := armcompute.NewVirtualMachinesClient(testSub, &azfake.TokenCredential{}, &arm.ClientOptions{
		ClientOptions: policy.ClientOptions{
			Cloud: azcloud.Configuration{Services: map[azcloud.ServiceName]azcloud.ServiceConfiguration{
				azcloud.ResourceManager: {Endpoint: ts.URL, Audience: "https://management.core.windows.net/"},
			}},
			InsecureAllowCredentialWithHTTP: true,
			Retry:                           testRetry,
		},
		DisableRPRegistration: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	return &env{world: world, url: ts.URL, provider: p, raw: raw}
}

// holdIdentity gives the subscription a user-assigned identity, which
// the emulator, as ARM, requires of a VM that names it.
func (e *env) holdIdentity(t *testing.T, id string) {
	t.Helper()
	if err := e.world.SetAccount(sim.Account{Identities: []string{id}}); err != nil {
		t.Fatal(err)
	}
}

func testConfig() *schema.Azure {
	cfg := &schema.Azure{Enabled: true, Subscription: testSub, ResourceGroup: testRG, Regions: []string{"eastus", "westus3"}}
	cfg.Launch.Image = "microsoft-dsvm:ubuntu-hpc:2204:latest"
	cfg.Launch.DiskGB = 200
	cfg.Launch.AdminUsername = "gpufleet"
	cfg.Launch.SSHPublicKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGpufleettest gpufleet@test"
	cfg.Launch.SubnetByRegion = map[string]string{
		"eastus":  "/subscriptions/" + testSub + "/resourceGroups/" + testRG + "/providers/Microsoft.Network/virtualNetworks/gpu/subnets/nodes",
		"westus3": "/subscriptions/" + testSub + "/resourceGroups/" + testRG + "/providers/Microsoft.Network/virtualNetworks/gpu-westus3/subnets/nodes",
	}
	return cfg
}

func TestConformance(t *testing.T) {
	e := newEnv(t, envConfig{})
	conformance.Run(t, conformance.Harness{
		Provider:    e.provider,
		Offer:       onDemandT4,
		Spot:        spotT4,
		World:       e.world,
		Seed:        e.seed,
		Foreign:     e.foreign,
		Alive:       e.alive,
		CreateCalls: []string{"azure " + armsim.OpPut},
		DeleteCalls: []string{"azure " + armsim.OpDelete},
	})
}

// seed puts n owned VMs straight into the world, as the front would have
// stored them after a PUT: the resource group's scope, the lower-cased
// name ARM matches on, and the names and placement the front echoes.
func (e *env) seed(ctx context.Context, fleet string, n int) error {
	scope := strings.ToLower("/subscriptions/" + testSub + "/resourceGroups/" + testRG)
	for i := range n {
		// InstanceName keeps the token's first 16 hex digits: vary those.
		token := fmt.Sprintf("gf1-%016x%016x", i, 0)
		name := providers.InstanceName(fleet, "w", token)
		_, err := e.world.Launch(sim.LaunchSpec{
			Cloud: catalog.Azure, Zone: "eastus-3", InstanceType: t4, Market: catalog.OnDemand,
			Name: name, Scope: scope,
			Tags: providers.OwnershipTags(providers.CreateRequest{Token: token, Fleet: fleet, Workload: "w"}),
			Properties: map[string]string{
				"name": name, "resourceGroup": testRG, "subscription": testSub, "location": "eastus", "zone": "3",
			},
		})
		if err != nil {
			return fmt.Errorf("seeding VM %d, %w", i, err)
		}
	}
	return nil
}

// foreign creates, through the bare client, a VM in a configured region
// that carries none of gpufleet's tags.
func (e *env) foreign(ctx context.Context) (string, error) {
	const name = "someone-elses-vm"
	vm := e.provider.launch.vmFor(name, "1", providers.CreateRequest{Offer: onDemandT4})
	vm.Tags = map[string]*string{}
	poller, err := e.raw.BeginCreateOrUpdate(ctx, testRG, name, vm, nil)
	if err != nil {
		return "", err
	}
	_, err = poller.PollUntilDone(ctx, &runtime.PollUntilDoneOptions{Frequency: 5 * time.Millisecond})
	return name, err
}

func (e *env) alive(ctx context.Context, name string) (bool, error) {
	_, err := e.raw.Get(ctx, testRG, name, nil)
	if isStatus(err, http.StatusNotFound) {
		return false, nil
	}
	return err == nil, err
}
