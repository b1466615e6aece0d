// SPDX-License-Identifier: Apache-2.0

package azure

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	azfake "github.com/Azure/azure-sdk-for-go/sdk/azcore/fake"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/providers/sim/armsim"
	"github.com/gpufleet/gpufleet/schema"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

func request(offer planner.OfferKey, fleet string, slot int) providers.CreateRequest {
	return providers.CreateRequest{
		Token: planner.Token(fleet, "w", offer, "rev1", slot), Offer: offer, Fleet: fleet, Workload: "w",
		Labels: map[string]string{"team": "ml"},
	}
}

// rawCreate PUTs a VM through the bare client and waits for it, as
// another process (or an earlier, crashed run) would have.
func (e *env) rawCreate(t *testing.T, name string, vm armcompute.VirtualMachine) error {
	t.Helper()
	poller, err := e.raw.BeginCreateOrUpdate(context.Background(), testRG, name, vm, nil)
	if err != nil {
		return err
	}
	_, err = poller.PollUntilDone(context.Background(), &runtime.PollUntilDoneOptions{Frequency: 5 * time.Millisecond})
	return err
}

// leftovers lists the world's VMs that carry a token.
func (e *env) leftovers(token string) []*sim.Instance {
	return e.world.List(catalog.Azure, func(i *sim.Instance) bool { return i.Tags[providers.TagToken] == token })
}

func wantKind(t *testing.T, err error, kind providers.Kind) *providers.Error {
	t.Helper()
	var pe *providers.Error
	if !errors.As(err, &pe) || pe.Kind != kind {
		t.Fatalf("got %v, want a %s error", err, kind)
	}
	return pe
}

func TestCreateSendsLaunchSettings(t *testing.T) {
	e := newEnv(t, envConfig{})
	ctx := context.Background()
	req := request(spotT4, "demo", 0)
	inst, err := e.provider.Create(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if inst.ID != providers.InstanceName("demo", "w", req.Token) || inst.OfferKey != spotT4 || inst.State != planner.StateRunning {
		t.Errorf("created %+v", inst)
	}
	got, err := e.raw.Get(ctx, testRG, inst.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := got.Properties
	switch {
	case deref(p.StorageProfile.ImageReference.Offer) != "ubuntu-hpc" || deref(p.StorageProfile.OSDisk.DiskSizeGB) != 200:
		t.Errorf("storage %+v %+v", p.StorageProfile.ImageReference, p.StorageProfile.OSDisk)
	case deref(p.StorageProfile.OSDisk.DeleteOption) != armcompute.DiskDeleteOptionTypesDelete:
		t.Errorf("the disk outlives the VM")
	case len(p.OSProfile.LinuxConfiguration.SSH.PublicKeys) != 1 || !strings.HasPrefix(deref(p.OSProfile.LinuxConfiguration.SSH.PublicKeys[0].KeyData), "ssh-ed25519 "):
		t.Errorf("ssh %+v", p.OSProfile.LinuxConfiguration.SSH)
	case !strings.HasSuffix(deref(p.NetworkProfile.NetworkInterfaceConfigurations[0].Properties.IPConfigurations[0].Properties.Subnet.ID), "/subnets/nodes"):
		t.Errorf("subnet not sent")
	case deref(p.EvictionPolicy) != armcompute.VirtualMachineEvictionPolicyTypesDelete || deref(p.BillingProfile.MaxPrice) != -1:
		t.Errorf("spot settings %v %+v", deref(p.EvictionPolicy), p.BillingProfile)
	case deref(got.Tags["team"]) != "ml" || deref(got.Tags[providers.TagToken]) != req.Token:
		t.Errorf("tags %v", tagValues(got.Tags))
	}
}

func TestCreateRefusesANameTakenByAnother(t *testing.T) {
	e := newEnv(t, envConfig{})
	mine := request(onDemandT4, "demo", 0)
	name := providers.InstanceName(mine.Fleet, mine.Workload, mine.Token)
	// Same fleet, workload and first 16 hex digits, another token: the
	// name collides though the create is another.
	other := mine
	other.Token = mine.Token[:20] + strings.Repeat("f", len(mine.Token)-20)
	if err := e.rawCreate(t, name, e.provider.launch.vmFor(name, "1", other)); err != nil {
		t.Fatal(err)
	}
	_, err := e.provider.Create(context.Background(), mine)
	pe := wantKind(t, err, providers.KindInvalid)
	if pe.Code != "PreconditionFailed" {
		t.Errorf("code %q", pe.Code)
	}
	if n := len(e.leftovers(other.Token)); n != 1 {
		t.Errorf("the other create's VM was changed or removed (%d left)", n)
	}
}

func TestCreateAfterAFailedAttempt(t *testing.T) {
	e := newEnv(t, envConfig{})
	ctx := context.Background()
	req := request(onDemandT4, "demo", 0)
	name := providers.InstanceName(req.Fleet, req.Workload, req.Token)
	// An earlier run's create failed after ARM accepted it, and the run
	// died before cleaning up: the VM is there, Failed.
	if err := e.world.AddFaults(&sim.Fault{Cloud: catalog.Azure, Op: armsim.OpPut, Kind: sim.FaultFailLater, Code: "ZonalAllocationFailed", Times: 1}); err != nil {
		t.Fatal(err)
	}
	if err := e.rawCreate(t, name, e.provider.launch.vmFor(name, "1", req)); err == nil {
		t.Fatal("the injected failure did not fail the create")
	}
	if left := e.leftovers(req.Token); len(left) != 1 || left[0].State != sim.StateFailed {
		t.Fatalf("setup: want one failed VM, have %v", left)
	}

	_, err := e.provider.Create(ctx, req)
	pe := wantKind(t, err, providers.KindCapacity)
	if pe.Code != "ZonalAllocationFailed" || pe.Offer != onDemandT4 {
		t.Errorf("error %+v", pe)
	}
	if left := e.leftovers(req.Token); len(left) != 0 {
		t.Fatalf("the failed VM is still there: %v", left)
	}
	inst, err := e.provider.Create(ctx, req)
	if err != nil || inst.ID != name || !inst.State.Live() {
		t.Fatalf("the token is not free again: %+v %v", inst, err)
	}
}

func TestFailureAfterAcceptanceLeavesNothing(t *testing.T) {
	for _, code := range []string{"AllocationFailed", "OverconstrainedAllocationRequest", "SkuNotAvailable"} {
		t.Run(code, func(t *testing.T) {
			e := newEnv(t, envConfig{})
			if err := e.world.AddFaults(&sim.Fault{Cloud: catalog.Azure, Op: armsim.OpPut, Kind: sim.FaultFailLater, Code: code, Times: 1}); err != nil {
				t.Fatal(err)
			}
			req := request(onDemandT4, "demo", 0)
			_, err := e.provider.Create(context.Background(), req)
			if pe := wantKind(t, err, providers.KindCapacity); pe.Code != code {
				t.Errorf("code %q", pe.Code)
			}
			if left := e.leftovers(req.Token); len(left) != 0 {
				t.Errorf("left behind: %v", left)
			}
		})
	}
}

// The emulator's own stock-outs reach the provider as ARM sends them: a
// size a zone does not offer refuses the PUT at once (SkuNotAvailable), a
// zone with no room accepts it and fails its operation
// (ZonalAllocationFailed); both are capacity errors of the offer.
func TestStockOutsAsARMAnswersThem(t *testing.T) {
	tests := []struct {
		name      string
		setup     func(*sim.World)
		wantCode  string
		wantPolls bool
	}{
		{"size not offered", func(w *sim.World) { w.SetOffered(catalog.Azure, onDemandT4.Zone, t4, false) }, "SkuNotAvailable", false},
		{"zone full", func(w *sim.World) { w.SetCapacity(catalog.Azure, onDemandT4.Zone, t4, catalog.OnDemand, 0) }, "ZonalAllocationFailed", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, envConfig{})
			tt.setup(e.world)
			req := request(onDemandT4, "demo", 0)
			_, err := e.provider.Create(context.Background(), req)
			if pe := wantKind(t, err, providers.KindCapacity); pe.Code != tt.wantCode || pe.Offer != onDemandT4 {
				t.Errorf("code %q offer %v", pe.Code, pe.Offer)
			}
			if polled := e.world.Calls()["azure "+armsim.OpOperation] > 0; polled != tt.wantPolls {
				t.Errorf("operation polled: %v, want %v", polled, tt.wantPolls)
			}
			if left := e.leftovers(req.Token); len(left) != 0 {
				t.Errorf("left behind: %v", left)
			}
		})
	}
}

func TestThrottlingPastMaxRetryDelay(t *testing.T) {
	// ARM asks for 3 s; the provider will wait at most 2: azcore gives up
	// at once, and the create fails as throttled for the next run.
	e := newEnv(t, envConfig{front: armsim.Options{ThrottleRetryAfter: 3 * time.Second}})
	if err := e.world.AddFaults(&sim.Fault{Cloud: catalog.Azure, Op: armsim.OpPut, Kind: sim.FaultThrottle, Times: 1}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := e.provider.Create(context.Background(), request(onDemandT4, "demo", 0))
	if pe := wantKind(t, err, providers.KindThrottled); !providers.Retryable(pe) {
		t.Error("throttling is not retryable")
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("took %s: azcore waited", took)
	}
	if n := e.world.Calls()["azure put"]; n != 1 {
		t.Errorf("%d PUTs", n)
	}
}

func TestServerErrorsAreRetried(t *testing.T) {
	e := newEnv(t, envConfig{})
	if err := e.world.AddFaults(&sim.Fault{Cloud: catalog.Azure, Op: armsim.OpPut, Kind: sim.FaultServerError, Times: 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.provider.Create(context.Background(), request(onDemandT4, "demo", 0)); err != nil {
		t.Fatal(err)
	}
	if n := e.world.Calls()["azure put"]; n != 3 {
		t.Errorf("%d PUTs, want 3", n)
	}
}

func TestRetriesAreBounded(t *testing.T) {
	retry := policy.RetryOptions{MaxRetries: 2, RetryDelay: time.Millisecond, MaxRetryDelay: 2 * time.Millisecond}
	e := newEnv(t, envConfig{retry: &retry})
	if err := e.world.AddFaults(&sim.Fault{Cloud: catalog.Azure, Kind: sim.FaultServerError, Times: 100}); err != nil {
		t.Fatal(err)
	}
	_, err := e.provider.List(context.Background(), providers.Selector{})
	wantKind(t, err, providers.KindUnavailable)
	if n := e.world.Calls()["azure list"]; n != 3 {
		t.Errorf("%d list calls, want 3 (MaxRetries 2)", n)
	}
}

func TestCreateChecksTheRequest(t *testing.T) {
	e := newEnv(t, envConfig{})
	tests := []struct {
		name string
		edit func(*providers.CreateRequest)
	}{
		{"another cloud", func(r *providers.CreateRequest) { r.Offer.Cloud = "gcp" }},
		{"a region not configured", func(r *providers.CreateRequest) {
			r.Offer.Region, r.Offer.Zone = "westeurope", "westeurope-1"
		}},
		{"a zone of another region", func(r *providers.CreateRequest) { r.Offer.Zone = "westus3-1" }},
		{"no token", func(r *providers.CreateRequest) { r.Token = "" }},
		{"no size", func(r *providers.CreateRequest) { r.Offer.InstanceType = "" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := request(onDemandT4, "demo", 0)
			tt.edit(&req)
			_, err := e.provider.Create(context.Background(), req)
			wantKind(t, err, providers.KindInvalid)
		})
	}
	if n := e.world.Calls()["azure put"]; n != 0 {
		t.Errorf("%d PUTs for requests refused up front", n)
	}
}

// A config naming what the subscription does not have — a resource group,
// a subnet, a subnet in another region — fails as a config error with
// ARM's code, not as a missing VM or a stock-out the planner would route
// around.
func TestMissingReferencesAreConfigErrors(t *testing.T) {
	tests := []struct {
		name     string
		edit     func(*schema.Azure)
		wantCode string
	}{
		{"no such resource group", func(c *schema.Azure) { c.ResourceGroup = "absent" }, "ResourceGroupNotFound"},
		{"no such subnet", func(c *schema.Azure) {
			c.Launch.SubnetByRegion["eastus"] = strings.Replace(c.Launch.SubnetByRegion["eastus"], "/subnets/nodes", "/subnets/absent", 1)
		}, "InvalidResourceReference"},
		{"a subnet in another region", func(c *schema.Azure) { c.Launch.SubnetByRegion["eastus"] = c.Launch.SubnetByRegion["westus3"] }, "InvalidResourceReference"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, envConfig{edit: tt.edit})
			_, err := e.provider.Create(context.Background(), request(onDemandT4, "demo", 0))
			if pe := wantKind(t, err, providers.KindInvalid); pe.Code != tt.wantCode {
				t.Errorf("code %q, want %q: %v", pe.Code, tt.wantCode, err)
			}
		})
	}
}

func TestBadLaunchSettingsFailCreateOnly(t *testing.T) {
	e := newEnv(t, envConfig{edit: func(c *schema.Azure) { c.Launch.Image = "ubuntu" }})
	if _, err := e.provider.List(context.Background(), providers.Selector{}); err != nil {
		t.Fatalf("List: %v", err)
	}
	_, err := e.provider.Create(context.Background(), request(onDemandT4, "demo", 0))
	if pe := wantKind(t, err, providers.KindInvalid); !strings.Contains(pe.Message, "launch.image") {
		t.Errorf("message %q", pe.Message)
	}
}

func TestListKeepsConfiguredRegionsAndFleet(t *testing.T) {
	e := newEnv(t, envConfig{})
	ctx := context.Background()
	mine, err := e.provider.Create(ctx, request(onDemandT4, "demo", 0))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.provider.Create(ctx, request(onDemandT4, "other", 0)); err != nil {
		t.Fatal(err)
	}
	// An owned VM in a region this provider does not manage (another
	// gpufleet config sharing the resource group, say).
	far := request(planner.OfferKey{Cloud: catalog.Azure, Region: "westeurope", Zone: "westeurope-1", InstanceType: "Standard_NC24ads_A100_v4", Market: catalog.OnDemand}, "demo", 1)
	farName := providers.InstanceName(far.Fleet, far.Workload, far.Token)
	if err := e.rawCreate(t, farName, e.provider.launch.vmFor(farName, "1", far)); err != nil {
		t.Fatal(err)
	}

	got, err := e.provider.List(ctx, providers.Selector{Fleet: "demo"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != mine {
		t.Errorf("listed %+v\nwant only %+v", got, mine)
	}
	all, err := e.provider.List(ctx, providers.Selector{})
	if err != nil || len(all) != 2 {
		t.Errorf("listed %d of every fleet, want 2 (%v)", len(all), err)
	}
}

func TestDeleteRefusesAnotherFleetsVM(t *testing.T) {
	e := newEnv(t, envConfig{})
	ctx := context.Background()
	inst, err := e.provider.Create(ctx, request(onDemandT4, "demo", 0))
	if err != nil {
		t.Fatal(err)
	}
	stale := inst
	stale.Fleet = "someone-else"
	wantKind(t, e.provider.Delete(ctx, stale), providers.KindInvalid)
	if alive, err := e.alive(ctx, inst.ID); !alive || err != nil {
		t.Fatalf("the VM is gone (%v)", err)
	}
	if err := e.provider.Delete(ctx, inst); err != nil {
		t.Fatal(err)
	}
	if alive, _ := e.alive(ctx, inst.ID); alive {
		t.Error("the VM outlived its delete")
	}
	wantKind(t, e.provider.Delete(ctx, providers.Instance{}), providers.KindInvalid)
}

func TestCredentialFailureIsAuth(t *testing.T) {
	e := newEnv(t, envConfig{})
	cred := &azfake.TokenCredential{}
	cred.SetError(errors.New("no credential in the chain could get a token"))
	p, err := New(context.Background(), testConfig(), catalog.Default(), Options{Endpoint: e.url, Credential: cred, PollFrequency: 5 * time.Millisecond, Retry: testRetry})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.List(context.Background(), providers.Selector{})
	wantKind(t, err, providers.KindAuth)
	_, err = p.Create(context.Background(), request(onDemandT4, "demo", 0))
	wantKind(t, err, providers.KindAuth)
	if n := e.world.Calls()["azure list"] + e.world.Calls()["azure put"]; n != 0 {
		t.Errorf("%d calls reached ARM without a token", n)
	}
}

// A regional offer (no zone) makes a VM ARM places itself; it is read
// back with an empty zone, not a made-up one.
func TestListRegionalVM(t *testing.T) {
	e := newEnv(t, envConfig{})
	req := request(planner.OfferKey{Cloud: catalog.Azure, Region: "westus3", InstanceType: "Standard_NC24ads_A100_v4", Market: catalog.OnDemand}, "demo", 0)
	inst, err := e.provider.Create(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if inst.Zone != "" || inst.Region != "westus3" {
		t.Errorf("regional VM read as %s", inst.OfferKey)
	}
	got, _ := e.raw.Get(context.Background(), testRG, inst.ID, &armcompute.VirtualMachinesClientGetOptions{Expand: to.Ptr(armcompute.InstanceViewTypesInstanceView)})
	if len(got.Zones) != 0 {
		t.Errorf("zones %v", got.Zones)
	}
}
