// SPDX-License-Identifier: Apache-2.0

package armsim

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// Faults the SDK retries are survived with its retry policy (tiny delays
// here, the server's one-second Retry-After for throttling) and surface
// as *azcore.ResponseError when retries are off.
func TestRetriedFaults(t *testing.T) {
	tests := []struct {
		name       string
		fault      sim.Fault
		wantCode   string
		wantStatus int
	}{
		{"throttled", sim.Fault{Op: OpPut, Kind: sim.FaultThrottle, Times: 1}, "TooManyRequests", http.StatusTooManyRequests},
		{"server error", sim.Fault{Op: OpPut, Kind: sim.FaultServerError, Times: 1}, "InternalServerError", http.StatusInternalServerError},
		{"unavailable", sim.Fault{Op: OpPut, Kind: sim.FaultServerError, Code: "ServiceUnavailable", Times: 1}, "ServiceUnavailable", http.StatusServiceUnavailable},
		{"throttled poll", sim.Fault{Op: OpOperation, Kind: sim.FaultThrottle, Times: 1}, "TooManyRequests", http.StatusTooManyRequests},
	}
	for _, tt := range tests {
		t.Run(tt.name+" is survived", func(t *testing.T) {
			t.Parallel()
			f := newFront(t, frontConfig{})
			fault := tt.fault
			if err := f.world.AddFaults(&fault); err != nil {
				t.Fatal(err)
			}
			f.mustCreate(t, "retried", vmRequest("eastus", t4, inZone("1")))
			if fault.Fired != 1 {
				t.Fatalf("fault fired %d times", fault.Fired)
			}
			if n := f.world.Calls()["azure "+tt.fault.Op]; n != 2 {
				t.Fatalf("%d %s calls, want the failed one and its retry", n, tt.fault.Op)
			}
		})
		if tt.fault.Op != OpPut {
			continue
		}
		t.Run(tt.name+" surfaces without retries", func(t *testing.T) {
			t.Parallel()
			f := newFront(t, frontConfig{retry: &noRetry})
			fault := tt.fault
			if err := f.world.AddFaults(&fault); err != nil {
				t.Fatal(err)
			}
			_, err := f.vms.BeginCreateOrUpdate(context.Background(), testRG, "refused", vmRequest("eastus", t4, inZone("1")), nil)
			re := responseError(t, err, tt.wantCode, tt.wantStatus)
			if tt.fault.Kind == sim.FaultThrottle {
				h := re.RawResponse.Header
				if h.Get("Retry-After") != "1" || h.Get("retry-after-ms") != "" {
					t.Fatalf("Retry-After %q, retry-after-ms %q; want one whole second alone", h.Get("Retry-After"), h.Get("retry-after-ms"))
				}
			}
			if _, err := f.get(t, "refused"); err == nil {
				t.Fatal("a refused PUT created the VM")
			}
		})
	}
}

// A throttle wait under a second, which tests set to stay quick, is sent
// to the millisecond as well, in retry-after-ms, which azcore prefers;
// Retry-After stays in whole seconds.
func TestSubSecondThrottleWait(t *testing.T) {
	f := newFront(t, frontConfig{retry: &noRetry, options: Options{ThrottleRetryAfter: 250 * time.Millisecond}})
	if err := f.world.AddFaults(&sim.Fault{Op: OpPut, Kind: sim.FaultThrottle, Times: 1}); err != nil {
		t.Fatal(err)
	}
	_, err := f.vms.BeginCreateOrUpdate(context.Background(), testRG, "refused", vmRequest("eastus", t4, inZone("1")), nil)
	h := responseError(t, err, "TooManyRequests", http.StatusTooManyRequests).RawResponse.Header
	if h.Get("Retry-After") != "1" || h.Get("retry-after-ms") != "250" {
		t.Fatalf("Retry-After %q, retry-after-ms %q; want 1 and 250", h.Get("Retry-After"), h.Get("retry-after-ms"))
	}
}

// ARM accepts a create it cannot place and fails its operation; the VM
// stays, Failed, until deleted. A PUT of it again starts its creation
// over, which fails again while the cause lasts (a full zone) and
// succeeds once it is gone (a fault that struck once).
func TestStockOut(t *testing.T) {
	tests := []struct {
		name     string
		setup    func(*sim.World)
		opts     []vmOption
		wantCode string
		// once is a cause gone by the second PUT.
		once bool
	}{
		{name: "zonal", setup: func(w *sim.World) { w.SetCapacity(catalog.Azure, "eastus-1", t4, catalog.OnDemand, 0) },
			opts: []vmOption{inZone("1")}, wantCode: "ZonalAllocationFailed"},
		{name: "regional with every zone full", setup: func(w *sim.World) {
			for _, z := range []string{"eastus-1", "eastus-2", "eastus-3"} {
				w.SetCapacity(catalog.Azure, z, t4, catalog.OnDemand, 0)
			}
		}, wantCode: "AllocationFailed"},
		{name: "spot", setup: func(w *sim.World) { w.SetCapacity(catalog.Azure, "eastus-3", t4, catalog.Spot, 0) },
			opts: []vmOption{inZone("3"), spot(armcompute.VirtualMachineEvictionPolicyTypesDelete)}, wantCode: "ZonalAllocationFailed"},
		{name: "capacity fault", setup: func(w *sim.World) {
			w.AddFaults(&sim.Fault{Op: OpPut, Kind: sim.FaultCapacity, Times: 1})
		}, wantCode: "AllocationFailed", once: true},
		{name: "fail-later fault", setup: func(w *sim.World) {
			w.AddFaults(&sim.Fault{Op: OpPut, Kind: sim.FaultFailLater, Times: 1})
		}, opts: []vmOption{inZone("2")}, wantCode: "ZonalAllocationFailed", once: true},
		{name: "fail-later fault with its own code", setup: func(w *sim.World) {
			w.AddFaults(&sim.Fault{Op: OpPut, Kind: sim.FaultFailLater, Code: "OverconstrainedAllocationRequest", Times: 1})
		}, wantCode: "OverconstrainedAllocationRequest", once: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFront(t, frontConfig{})
			tt.setup(f.world)
			_, err := f.create(t, "unlucky", vmRequest("eastus", t4, tt.opts...))
			re := responseError(t, err, tt.wantCode, 0)
			if tt.wantCode != "OverconstrainedAllocationRequest" && !strings.Contains(re.Error(), "Allocation failed. We do not have sufficient capacity") {
				t.Fatalf("message: %v", re)
			}
			vm, err := f.get(t, "unlucky")
			if err != nil {
				t.Fatal(err)
			}
			if st := statuses(vm); deref(vm.Properties.ProvisioningState) != "Failed" || st["ProvisioningState"] != "failed/"+tt.wantCode {
				t.Fatalf("failed VM shows %q %v", deref(vm.Properties.ProvisioningState), st)
			}
			ops := len(f.world.Operations(catalog.Azure, sim.OperationPut))
			again, err := f.create(t, "unlucky", vmRequest("eastus", t4, tt.opts...))
			if n := len(f.world.Operations(catalog.Azure, sim.OperationPut)); n != ops+1 {
				t.Errorf("the second PUT started %d operations, want a new one", n-ops)
			}
			if tt.once {
				if err != nil {
					t.Fatalf("the second PUT, the cause gone: %v", err)
				}
				if deref(again.Properties.ProvisioningState) != "Succeeded" || deref(again.Properties.VMID) != deref(vm.Properties.VMID) {
					t.Errorf("created again %s with vmId %s, want Succeeded keeping %s",
						deref(again.Properties.ProvisioningState), deref(again.Properties.VMID), deref(vm.Properties.VMID))
				}
			} else {
				responseError(t, err, tt.wantCode, 0)
			}
			poller, err := f.vms.BeginDelete(context.Background(), testRG, "unlucky", nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := poller.PollUntilDone(context.Background(), pollFast); err != nil {
				t.Fatal(err)
			}
			if _, err := f.get(t, "unlucky"); err == nil {
				t.Fatal("failed VM survived its delete")
			}
		})
	}
}

// A regional VM is placed in a zone with room when the first is full.
func TestRegionalAvoidsFullZone(t *testing.T) {
	f := newFront(t, frontConfig{})
	f.world.SetCapacity(catalog.Azure, "eastus-1", t4, catalog.OnDemand, 0)
	vm := f.mustCreate(t, "placed", vmRequest("eastus", t4))
	inst, _ := f.world.Get(deref(vm.Properties.VMID))
	if inst == nil || inst.Zone != "eastus-2" || len(vm.Zones) != 0 {
		t.Fatalf("placed in %v, zones %v; want world zone eastus-2 and no ARM zones", inst, vm.Zones)
	}
}

// Quota is refused at once, in vCPUs of the size's family.
func TestQuota(t *testing.T) {
	tests := []struct {
		name     string
		setup    func(*sim.World)
		opts     []vmOption
		wantText []string
	}{
		{name: "family quota", setup: func(w *sim.World) { w.SetQuota(catalog.Azure, "eastus", "StandardNCADSA100v4Family", 0) },
			opts:     []vmOption{inZone("1")},
			wantText: []string{"exceeding approved StandardNCADSA100v4Family Cores quota", "Location: eastus", "Current Limit: 0", "Current Usage: 0", "Additional Required: 24"}},
		{name: "spot draws on low-priority quota", setup: func(w *sim.World) { w.SetQuota(catalog.Azure, "eastus", catalog.AzureLowPriorityCores, 0) },
			opts:     []vmOption{inZone("1"), spot(armcompute.VirtualMachineEvictionPolicyTypesDeallocate)},
			wantText: []string{"exceeding approved LowPriorityCores quota"}},
		{name: "quota fault", setup: func(w *sim.World) { w.AddFaults(&sim.Fault{Op: OpPut, Kind: sim.FaultQuota, Times: 1}) },
			opts:     []vmOption{inZone("1")},
			wantText: []string{"StandardNCADSA100v4Family Cores quota", "Additional Required: 24"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFront(t, frontConfig{})
			tt.setup(f.world)
			_, err := f.vms.BeginCreateOrUpdate(context.Background(), testRG, "big", vmRequest("eastus", a100, tt.opts...), nil)
			re := responseError(t, err, "OperationNotAllowed", http.StatusConflict)
			for _, want := range tt.wantText {
				if !strings.Contains(re.Error(), want) {
					t.Errorf("message lacks %q: %v", want, re)
				}
			}
			if _, err := f.get(t, "big"); err == nil {
				t.Fatal("a refused PUT created the VM")
			}
		})
	}
}

// Usage counts in the quota message: with room for 48 vCPUs, two 24-vCPU
// VMs fit and a third does not. The usages list shows the limit it ran
// into and the use that filled it.
func TestQuotaUsage(t *testing.T) {
	f := newFront(t, frontConfig{})
	f.world.SetQuota(catalog.Azure, "eastus", "StandardNCADSA100v4Family", 48)
	f.mustCreate(t, "one", vmRequest("eastus", a100, inZone("1")))
	f.mustCreate(t, "two", vmRequest("eastus", a100, inZone("2")))
	_, err := f.vms.BeginCreateOrUpdate(context.Background(), testRG, "three", vmRequest("eastus", a100, inZone("3")), nil)
	re := responseError(t, err, "OperationNotAllowed", http.StatusConflict)
	if !strings.Contains(re.Error(), "Operation could not be completed as it results in exceeding approved StandardNCADSA100v4Family Cores quota. Additional details - Deployment Model: Resource Manager, Location: eastus, Current Limit: 48, Current Usage: 48, Additional Required: 24, (Minimum) New Limit Required: 72.") {
		t.Fatalf("message: %v", re)
	}
	if u := useOf(f.mustUsages(t, "eastus")["StandardNCADSA100v4Family"]); u != (use{48, 48}) {
		t.Fatalf("usage after the refusal: %+v, want 48 of 48", u)
	}
}

func TestLatency(t *testing.T) {
	f := newFront(t, frontConfig{})
	f.mustCreate(t, "slow", vmRequest("eastus", t4, inZone("1")))
	f.world.AddFaults(&sim.Fault{Op: OpGet, Kind: sim.FaultLatency, Latency: sim.Duration(150 * time.Millisecond), Times: 1})
	start := time.Now()
	if _, err := f.get(t, "slow"); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 150*time.Millisecond {
		t.Fatalf("GET took %v, want at least the injected 150ms", took)
	}
}

// A delete that fails after it was accepted leaves the VM running.
func TestDeleteFailsLater(t *testing.T) {
	f := newFront(t, frontConfig{})
	f.mustCreate(t, "sticky", vmRequest("eastus", t4, inZone("1")))
	f.world.AddFaults(&sim.Fault{Op: OpDelete, Kind: sim.FaultFailLater, Times: 1})
	poller, err := f.vms.BeginDelete(context.Background(), testRG, "sticky", nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = poller.PollUntilDone(context.Background(), pollFast)
	responseError(t, err, "InternalExecutionError", 0)
	vm, err := f.get(t, "sticky")
	if err != nil {
		t.Fatal(err)
	}
	if st := statuses(vm); st["PowerState"] != "running" {
		t.Fatalf("after a failed delete: %v", st)
	}
}

// Spot eviction, by World.Preempt or by a preempt fault, as the emulator
// renders it: Delete shows Deleting until the world's window passes,
// Deallocate shows a deallocated VM.
func TestSpotEviction(t *testing.T) {
	tests := []struct {
		name      string
		policy    armcompute.VirtualMachineEvictionPolicyTypes
		byFault   bool
		wantState string
		wantPower string
		wantGone  bool
	}{
		{"delete policy", armcompute.VirtualMachineEvictionPolicyTypesDelete, false, "Deleting", "deallocating", true},
		{"deallocate policy", armcompute.VirtualMachineEvictionPolicyTypesDeallocate, false, "Succeeded", "deallocated", false},
		{"preempt fault", armcompute.VirtualMachineEvictionPolicyTypesDelete, true, "Deleting", "deallocating", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			window := 10 * time.Minute
			f := newFront(t, frontConfig{manual: true, world: sim.Config{PreemptedVisibleFor: window}})
			vm := f.mustCreate(t, "cheap", vmRequest("eastus", t4, inZone("1"), spot(tt.policy)))
			f.mustCreate(t, "steady", vmRequest("eastus", t4, inZone("1")))
			if tt.byFault {
				f.world.AddFaults(&sim.Fault{Op: OpGet, Kind: sim.FaultPreempt, Times: 1})
			} else if err := f.world.Preempt(deref(vm.Properties.VMID)); err != nil {
				t.Fatal(err)
			}
			got, err := f.get(t, "cheap")
			if err != nil {
				t.Fatal(err)
			}
			if st := statuses(got); deref(got.Properties.ProvisioningState) != tt.wantState || st["PowerState"] != tt.wantPower {
				t.Fatalf("evicted VM shows %q %v, want %s PowerState/%s", deref(got.Properties.ProvisioningState), st, tt.wantState, tt.wantPower)
			}
			if steady, _ := f.get(t, "steady"); statuses(steady)["PowerState"] != "running" {
				t.Fatal("the on-demand VM was evicted")
			}
			f.clock.Advance(window)
			_, err = f.get(t, "cheap")
			if tt.wantGone {
				responseError(t, err, "ResourceNotFound", http.StatusNotFound)
			}
		})
	}
}

// A max price under the current spot price is refused, as Azure does.
func TestSpotMaxPrice(t *testing.T) {
	f := newFront(t, frontConfig{})
	var price int64
	for _, o := range catalog.Default().Offers {
		if o.Cloud == catalog.Azure && o.Region == "eastus" && o.InstanceType == t4 && o.Market == catalog.Spot {
			price = o.PriceMicros
		}
	}
	if price <= 10_000 {
		t.Fatalf("the catalog's spot price of %s in eastus is %d µ$, want one above 0.01 USD", t4, price)
	}
	vm := vmRequest("eastus", t4, inZone("1"), spot(armcompute.VirtualMachineEvictionPolicyTypesDelete))
	vm.Properties.BillingProfile.MaxPrice = to.Ptr(0.01)
	_, err := f.vms.BeginCreateOrUpdate(context.Background(), testRG, "stingy", vm, nil)
	re := responseError(t, err, "OperationNotAllowed", http.StatusConflict)
	want := fmt.Sprintf("MaxPrice '0.01 USD' is lower than the current spot price '%s USD'", strconv.FormatFloat(float64(price)/1e6, 'f', -1, 64))
	if !strings.Contains(re.Error(), want) {
		t.Fatalf("message: %v, want %q", re, want)
	}
	vm.Properties.BillingProfile.MaxPrice = to.Ptr(float64(price) / 1e6 * 1.1)
	f.mustCreate(t, "stingy", vm)
}

// A VM whose zone had no room is created by a PUT once the zone has room
// again: the same VM, running, holding the capacity it failed to get.
func TestCreateAgainOnceThereIsRoom(t *testing.T) {
	f := newFront(t, frontConfig{})
	f.world.SetCapacity(catalog.Azure, "eastus-1", t4, catalog.OnDemand, 0)
	_, err := f.create(t, "waiting", vmRequest("eastus", t4, inZone("1")))
	responseError(t, err, "ZonalAllocationFailed", 0)
	failed, err := f.get(t, "waiting")
	if err != nil {
		t.Fatal(err)
	}
	f.world.SetCapacity(catalog.Azure, "eastus-1", t4, catalog.OnDemand, 1)
	poller, err := f.vms.BeginCreateOrUpdate(context.Background(), testRG, "waiting", vmRequest("eastus", t4, inZone("1")), nil)
	if err != nil {
		t.Fatal(err)
	}
	if poller.Done() {
		t.Error("the second PUT answered the failed operation, want a new one running")
	}
	if _, err := poller.PollUntilDone(context.Background(), pollFast); err != nil {
		t.Fatal(err)
	}
	vm, err := f.get(t, "waiting")
	if err != nil {
		t.Fatal(err)
	}
	if st := statuses(vm); deref(vm.Properties.ProvisioningState) != "Succeeded" || st["PowerState"] != "running" ||
		deref(vm.Properties.VMID) != deref(failed.Properties.VMID) {
		t.Errorf("created again: %s %v vmId %s, want Succeeded, running, vmId %s",
			deref(vm.Properties.ProvisioningState), st, deref(vm.Properties.VMID), deref(failed.Properties.VMID))
	}
	// The zone's one place is taken now.
	_, err = f.create(t, "next", vmRequest("eastus", t4, inZone("1")))
	responseError(t, err, "ZonalAllocationFailed", 0)
}
