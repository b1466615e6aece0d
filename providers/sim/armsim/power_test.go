// SPDX-License-Identifier: Apache-2.0

package armsim

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// powerState is the PowerState a VM's instance view shows, read raw.
func (f *front) powerState(t *testing.T, name string) string {
	t.Helper()
	a := f.call(t, http.MethodGet, vmPath+name+"/instanceView?api-version="+APIVersion, nil)
	a.want(t, "instance view", http.StatusOK, "")
	statuses, _ := a.body["statuses"].([]any)
	for _, s := range statuses {
		if power, ok := strings.CutPrefix((armResponse{body: s.(map[string]any)}).get("code"), "PowerState/"); ok {
			return power
		}
	}
	return ""
}

// Each power action is answered 202 with Compute's polling headers; while
// its operation runs the instance view shows the transition, and once it
// is done where the action ends.
func TestPowerActions(t *testing.T) {
	const opTime = time.Minute
	f := newFront(t, frontConfig{manual: true, world: sim.Config{OperationTime: opTime, PendingFor: opTime}})
	if resp := rawRequest(t, http.MethodPut, f.url+vmPath+"pw?api-version="+APIVersion, body(t, mutate()), http.Header{"Content-Type": {"application/json"}}); resp.StatusCode != http.StatusCreated {
		t.Fatalf("PUT: %s", resp.Status)
	}
	f.clock.Advance(opTime)
	if got := f.powerState(t, "pw"); got != "running" {
		t.Fatalf("created VM is %q", got)
	}
	steps := []struct{ action, during, after string }{
		{"deallocate", "deallocating", "deallocated"},
		{"start", "starting", "running"},
		{"powerOff", "stopping", "stopped"},
		{"start", "starting", "running"},
		{"restart", "starting", "running"},
		{"deallocate", "deallocating", "deallocated"},
		// Already deallocated: the same again is a success.
		{"deallocate", "deallocating", "deallocated"},
	}
	for _, st := range steps {
		resp := rawRequest(t, http.MethodPost, f.url+vmPath+"pw/"+st.action+"?api-version="+APIVersion, nil, nil)
		op, monitor := resp.Header.Get("Azure-AsyncOperation"), resp.Header.Get("Location")
		if resp.StatusCode != http.StatusAccepted || op == "" || monitor != op+"&monitor=true" || resp.Header.Get("Retry-After") != "60" {
			t.Fatalf("%s: %s, headers %v", st.action, resp.Status, resp.Header)
		}
		if got := f.powerState(t, "pw"); got != st.during {
			t.Errorf("%s running: PowerState %q, want %q", st.action, got, st.during)
		}
		if got, retry := pollStatus(t, op); got != "InProgress" || retry != "60" {
			t.Errorf("%s running: operation %s, Retry-After %q", st.action, got, retry)
		}
		if resp := rawRequest(t, http.MethodGet, monitor, nil, nil); resp.StatusCode != http.StatusAccepted {
			t.Errorf("%s running: Location answers %s", st.action, resp.Status)
		}
		f.clock.Advance(opTime)
		if got := f.powerState(t, "pw"); got != st.after {
			t.Errorf("%s done: PowerState %q, want %q", st.action, got, st.after)
		}
		if got, retry := pollStatus(t, op); got != "Succeeded" || retry != "" {
			t.Errorf("%s done: operation %s, Retry-After %q", st.action, got, retry)
		}
		if resp := rawRequest(t, http.MethodGet, monitor, nil, nil); resp.StatusCode != http.StatusOK {
			t.Errorf("%s done: Location answers %s", st.action, resp.Status)
		}
	}
	if a := f.call(t, http.MethodGet, vmPath+"pw?api-version="+APIVersion, nil); a.get("properties.provisioningState") != "Succeeded" {
		t.Errorf("a deallocated VM reads %s", a.get("properties.provisioningState"))
	}
}

// An action asked for while the VM is being created runs once the
// creation is done, as Compute runs a VM's operations one at a time.
func TestPowerActionWaitsForTheCreate(t *testing.T) {
	const opTime = time.Minute
	f := newFront(t, frontConfig{manual: true, world: sim.Config{OperationTime: opTime, PendingFor: opTime}})
	rawRequest(t, http.MethodPut, f.url+vmPath+"early?api-version="+APIVersion, body(t, mutate()), http.Header{"Content-Type": {"application/json"}})
	resp := rawRequest(t, http.MethodPost, f.url+vmPath+"early/deallocate?api-version="+APIVersion, nil, nil)
	if resp.StatusCode != http.StatusAccepted || resp.Header.Get("Retry-After") != "120" {
		t.Fatalf("deallocate while creating: %s, Retry-After %q; want 202 and the create's time and its own", resp.Status, resp.Header.Get("Retry-After"))
	}
	for _, want := range []string{"starting", "deallocating", "deallocated"} {
		if got := f.powerState(t, "early"); got != want {
			t.Errorf("PowerState %q, want %q", got, want)
		}
		f.clock.Advance(opTime)
	}
}

// The SDK's own calls drive the actions to the end, and a VM created
// again under a deallocated one's name starts out running.
func TestPowerActionsThroughTheSDK(t *testing.T) {
	f := newFront(t, frontConfig{})
	f.mustCreate(t, "sdk", vmRequest("eastus", t4, inZone("1")))
	ctx := context.Background()
	actions := []struct {
		name string
		run  func() error
		want string
	}{
		{"deallocate", func() error { return pollDone(f.vms.BeginDeallocate(ctx, testRG, "sdk", nil)) }, "deallocated"},
		{"start", func() error { return pollDone(f.vms.BeginStart(ctx, testRG, "sdk", nil)) }, "running"},
		{"powerOff", func() error { return pollDone(f.vms.BeginPowerOff(ctx, testRG, "sdk", nil)) }, "stopped"},
		{"restart", func() error { return pollDone(f.vms.BeginRestart(ctx, testRG, "sdk", nil)) }, "running"},
		{"deallocate", func() error { return pollDone(f.vms.BeginDeallocate(ctx, testRG, "sdk", nil)) }, "deallocated"},
	}
	for _, a := range actions {
		if err := a.run(); err != nil {
			t.Fatalf("%s: %v", a.name, err)
		}
		vm, err := f.get(t, "sdk")
		if err != nil {
			t.Fatal(err)
		}
		if got := statuses(vm)["PowerState"]; got != a.want {
			t.Errorf("after %s: PowerState %q, want %q", a.name, got, a.want)
		}
	}
	_, err := f.vms.BeginPowerOff(ctx, testRG, "sdk", nil)
	re := responseError(t, err, "OperationNotAllowed", http.StatusConflict)
	if want := "Operation 'powerOff' is not allowed on VM 'sdk' since the VM is either deallocated or marked to be deallocated."; !strings.Contains(re.Error(), want) {
		t.Errorf("powerOff of a deallocated VM: %v", err)
	}
	f.delete(t, "sdk")
	f.mustCreate(t, "sdk", vmRequest("eastus", t4, inZone("1")))
	if vm, _ := f.get(t, "sdk"); statuses(vm)["PowerState"] != "running" {
		t.Errorf("a VM made again under the name is %q", statuses(vm)["PowerState"])
	}
}

// pollDone waits out the operation a Begin call started.
func pollDone[T any](p *runtime.Poller[T], err error) error {
	if err != nil {
		return err
	}
	_, err = p.PollUntilDone(context.Background(), pollFast)
	return err
}

// The actions are refused on what has none: a VM not there, one being
// deleted, a create that failed (the world cannot allocate it again), a
// start before the deallocation is done and a restart of a deallocated
// VM; they take POST only.
func TestPowerActionRefusals(t *testing.T) {
	f := newFront(t, frontConfig{manual: true, world: sim.Config{OperationTime: time.Minute, PendingFor: time.Minute}})
	path := func(name, action string) string { return vmPath + name + "/" + action + "?api-version=" + APIVersion }
	f.call(t, http.MethodPost, path("none", "start"), nil).want(t, "a VM not there", http.StatusNotFound, "ResourceNotFound")
	f.call(t, http.MethodGet, path("none", "start"), nil).want(t, "a GET", http.StatusMethodNotAllowed, "MethodNotAllowed")

	rawRequest(t, http.MethodPut, f.url+vmPath+"going?api-version="+APIVersion, body(t, mutate()), http.Header{"Content-Type": {"application/json"}})
	f.clock.Advance(time.Minute)
	rawRequest(t, http.MethodDelete, f.url+vmPath+"going?api-version="+APIVersion, nil, nil)
	a := f.call(t, http.MethodPost, path("going", "deallocate"), nil)
	a.want(t, "a VM being deleted", http.StatusConflict, "OperationNotAllowed")
	if want := "Operation 'deallocate' is not allowed on VM 'going' since the VM is marked for deletion."; !strings.Contains(a.message(), want) {
		t.Errorf("message %q", a.message())
	}

	// A deallocation must finish before the VM can be started, and a
	// deallocated VM is started, not restarted.
	rawRequest(t, http.MethodPut, f.url+vmPath+"parked?api-version="+APIVersion, body(t, mutate()), http.Header{"Content-Type": {"application/json"}})
	f.clock.Advance(time.Minute)
	f.call(t, http.MethodPost, path("parked", "deallocate"), nil).want(t, "deallocate", http.StatusAccepted, "")
	a = f.call(t, http.MethodPost, path("parked", "start"), nil)
	a.want(t, "start while deallocating", http.StatusConflict, "OperationNotAllowed")
	if want := "since the VM is being deallocated"; !strings.Contains(a.message(), want) {
		t.Errorf("message %q", a.message())
	}
	f.clock.Advance(time.Minute)
	f.call(t, http.MethodPost, path("parked", "restart"), nil).want(t, "restart of a deallocated VM", http.StatusConflict, "OperationNotAllowed")
	f.call(t, http.MethodPost, path("parked", "start"), nil).want(t, "start of a deallocated VM", http.StatusAccepted, "")

	f.world.SetCapacity(catalog.Azure, "eastus-1", t4, catalog.OnDemand, 0)
	rawRequest(t, http.MethodPut, f.url+vmPath+"failed?api-version="+APIVersion, body(t, vmRequest("eastus", t4, inZone("1"))), http.Header{"Content-Type": {"application/json"}})
	f.clock.Advance(time.Minute)
	f.call(t, http.MethodPost, path("failed", "start"), nil).want(t, "start of a failed VM", http.StatusConflict, "OperationNotAllowed")
	f.call(t, http.MethodPost, path("failed", "deallocate"), nil).want(t, "deallocate of a failed VM", http.StatusAccepted, "")
}

// A fault that denies an action names the action's own RBAC action, as
// ARM's AuthorizationFailed does.
func TestPowerActionDenied(t *testing.T) {
	f := newFront(t, frontConfig{})
	f.mustCreate(t, "denied", vmRequest("eastus", t4, inZone("1")))
	if err := f.world.AddFaults(&sim.Fault{Op: OpDeallocate, Kind: sim.FaultServerError, Code: "AuthorizationFailed", Times: 1}); err != nil {
		t.Fatal(err)
	}
	a := f.call(t, http.MethodPost, vmPath+"denied/deallocate?api-version="+APIVersion, nil)
	a.want(t, "a denied deallocate", http.StatusForbidden, "AuthorizationFailed")
	scope := vmRef{testSub, testRG, "denied"}.id()
	if want := "perform action 'Microsoft.Compute/virtualMachines/deallocate/action' over scope '" + scope + "'"; !strings.Contains(a.message(), want) {
		t.Errorf("message %q, want %q", a.message(), want)
	}
}

// A deallocated VM gives its zone's capacity back, so another of its size
// fits where there was room for one; starting it again is a placement
// that fails its operation while the other holds the room, and succeeds
// once the other is gone. A powered-off VM stays allocated.
func TestDeallocateFreesCapacity(t *testing.T) {
	f := newFront(t, frontConfig{})
	f.world.SetCapacity(catalog.Azure, "eastus-1", t4, catalog.OnDemand, 1)
	ctx := context.Background()
	f.mustCreate(t, "first", vmRequest("eastus", t4, inZone("1")))

	if err := pollDone(f.vms.BeginPowerOff(ctx, testRG, "first", nil)); err != nil {
		t.Fatalf("powerOff: %v", err)
	}
	_, err := f.create(t, "second", vmRequest("eastus", t4, inZone("1")))
	responseError(t, err, "ZonalAllocationFailed", 0)
	f.delete(t, "second")

	if err := pollDone(f.vms.BeginDeallocate(ctx, testRG, "first", nil)); err != nil {
		t.Fatalf("deallocate: %v", err)
	}
	f.mustCreate(t, "second", vmRequest("eastus", t4, inZone("1")))
	// Both are listed, the deallocated one as such.
	pager := f.vms.NewListPager(testRG, &armcompute.VirtualMachinesClientListOptions{Expand: to.Ptr(armcompute.ExpandTypeForListVMsInstanceView)})
	listed := map[string]string{}
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, vm := range page.Value {
			listed[deref(vm.Name)] = statuses(*vm)["PowerState"]
		}
	}
	if listed["first"] != "deallocated" || listed["second"] != "running" {
		t.Errorf("listed %v, want first deallocated and second running", listed)
	}
	err = pollDone(f.vms.BeginStart(ctx, testRG, "first", nil))
	re := responseError(t, err, "ZonalAllocationFailed", 0)
	if !strings.Contains(re.Error(), "We do not have sufficient capacity for the requested VM size in this zone") {
		t.Errorf("start without room: %v", err)
	}
	if vm, _ := f.get(t, "first"); statuses(vm)["PowerState"] != "deallocated" {
		t.Errorf("after a failed start the VM is %q, want deallocated", statuses(vm)["PowerState"])
	}

	f.delete(t, "second")
	if err := pollDone(f.vms.BeginStart(ctx, testRG, "first", nil)); err != nil {
		t.Fatalf("start once the room is free: %v", err)
	}
	if vm, _ := f.get(t, "first"); statuses(vm)["PowerState"] != "running" {
		t.Errorf("started VM is %q", statuses(vm)["PowerState"])
	}
	// Deleting a deallocated VM works as deleting a running one does.
	if err := pollDone(f.vms.BeginDeallocate(ctx, testRG, "first", nil)); err != nil {
		t.Fatalf("deallocate: %v", err)
	}
	f.delete(t, "first")
	if _, err := f.get(t, "first"); err == nil {
		t.Error("a deleted deallocated VM is still there")
	}
}

// A deallocated VM counts against no vCPU quota, so another fits under a
// family limit of one VM; starting the first then is refused at once with
// ARM's quota error naming the family.
func TestDeallocateFreesQuota(t *testing.T) {
	f := newFront(t, frontConfig{})
	const family = "standardNCASv3_T4Family"
	if err := f.world.SetQuotas(sim.QuotaSet{Base: sim.NoLimits, Quotas: []sim.QuotaLimit{{Cloud: catalog.Azure, Region: "eastus", Name: family, Limit: 4}}}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	f.mustCreate(t, "first", vmRequest("eastus", t4, inZone("1")))
	if err := pollDone(f.vms.BeginDeallocate(ctx, testRG, "first", nil)); err != nil {
		t.Fatalf("deallocate: %v", err)
	}
	if usages, _, err := f.usagesIn(t, "eastus"); err != nil || deref(usages[family].CurrentValue) != 0 || deref(usages["cores"].CurrentValue) != 0 {
		t.Errorf("usages of a deallocated VM: %v", err)
	}
	f.mustCreate(t, "second", vmRequest("eastus", t4, inZone("1")))
	_, err := f.vms.BeginStart(ctx, testRG, "first", nil)
	re := responseError(t, err, "OperationNotAllowed", http.StatusConflict)
	if want := "exceeding approved " + family + " Cores quota. Additional details - Deployment Model: Resource Manager, Location: eastus, Current Limit: 4, Current Usage: 4, Additional Required: 4"; !strings.Contains(re.Error(), want) {
		t.Errorf("start over quota: %v", err)
	}
	f.delete(t, "second")
	if err := pollDone(f.vms.BeginStart(ctx, testRG, "first", nil)); err != nil {
		t.Fatalf("start under quota: %v", err)
	}
}
