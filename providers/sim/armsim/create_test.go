// SPDX-License-Identifier: Apache-2.0

package armsim

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

func TestCreate(t *testing.T) {
	tests := []struct {
		name      string
		location  string
		size      string
		opts      []vmOption
		wantLoc   string
		wantZone  string // ARM's, "" for regional
		wantWorld string // the world's zone
		wantSpot  bool
		eviction  armcompute.VirtualMachineEvictionPolicyTypes
	}{
		{name: "zonal on demand", location: "eastus", size: t4, opts: []vmOption{inZone("2")},
			wantLoc: "eastus", wantZone: "2", wantWorld: "eastus-2"},
		{name: "regional goes to the first zone with room", location: "westus3", size: a100,
			wantLoc: "westus3", wantWorld: "westus3-1"},
		{name: "display-name location and lower-case size", location: "Sweden Central", size: strings.ToLower(h100), opts: []vmOption{inZone("3")},
			wantLoc: "swedencentral", wantZone: "3", wantWorld: "swedencentral-3"},
		{name: "spot evicted by deletion", location: "eastus2", size: t4, opts: []vmOption{inZone("1"), spot(armcompute.VirtualMachineEvictionPolicyTypesDelete)},
			wantLoc: "eastus2", wantZone: "1", wantWorld: "eastus2-1", wantSpot: true, eviction: armcompute.VirtualMachineEvictionPolicyTypesDelete},
		{name: "spot defaults to deallocation", location: "eastus2", size: t4, opts: []vmOption{func(vm *armcompute.VirtualMachine) {
			vm.Properties.Priority = to.Ptr(armcompute.VirtualMachinePriorityTypesSpot)
		}}, wantLoc: "eastus2", wantWorld: "eastus2-1", wantSpot: true, eviction: armcompute.VirtualMachineEvictionPolicyTypesDeallocate},
	}
	f := newFront(t, frontConfig{})
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := "vm-create-" + string(rune('a'+i))
			vm := f.mustCreate(t, name, vmRequest(tt.location, tt.size, tt.opts...))

			wantID := "/subscriptions/" + testSub + "/resourceGroups/" + testRG + "/providers/Microsoft.Compute/virtualMachines/" + name
			p := vm.Properties
			switch {
			case deref(vm.ID) != wantID:
				t.Errorf("id %q, want %q", deref(vm.ID), wantID)
			case deref(vm.Name) != name || deref(vm.Type) != "Microsoft.Compute/virtualMachines":
				t.Errorf("name %q type %q", deref(vm.Name), deref(vm.Type))
			case deref(vm.Location) != tt.wantLoc:
				t.Errorf("location %q, want %q", deref(vm.Location), tt.wantLoc)
			case deref(p.ProvisioningState) != "Succeeded":
				t.Errorf("provisioningState %q after the poller finished", deref(p.ProvisioningState))
			case deref(p.VMID) == "" || p.TimeCreated == nil:
				t.Errorf("vmId %q timeCreated %v", deref(p.VMID), p.TimeCreated)
			case !strings.EqualFold(string(deref(p.HardwareProfile.VMSize)), tt.size):
				t.Errorf("vmSize %q", deref(p.HardwareProfile.VMSize))
			case p.OSProfile.AdminPassword != nil:
				t.Errorf("adminPassword echoed")
			case deref(p.OSProfile.ComputerName) != name:
				t.Errorf("computerName %q, want the VM name", deref(p.OSProfile.ComputerName))
			case deref(p.StorageProfile.ImageReference.Offer) != "ubuntu-24_04-lts" || deref(p.StorageProfile.OSDisk.DiskSizeGB) != 256:
				t.Errorf("storage profile not echoed: %+v", p.StorageProfile)
			case deref(vm.Tags["gpufleet-fleet"]) != "demo":
				t.Errorf("tags %v", vm.Tags)
			}
			if got := zonesOf(vm); got != tt.wantZone {
				t.Errorf("zones %q, want %q", got, tt.wantZone)
			}
			if tt.wantSpot {
				if deref(p.Priority) != armcompute.VirtualMachinePriorityTypesSpot || deref(p.EvictionPolicy) != tt.eviction || deref(p.BillingProfile.MaxPrice) != -1 {
					t.Errorf("priority %q eviction %q billing %+v", deref(p.Priority), deref(p.EvictionPolicy), p.BillingProfile)
				}
			} else if p.Priority != nil || p.EvictionPolicy != nil {
				t.Errorf("regular VM shows priority %q eviction %q", deref(p.Priority), deref(p.EvictionPolicy))
			}

			got, err := f.get(t, name)
			if err != nil {
				t.Fatal(err)
			}
			if st := statuses(got); st["ProvisioningState"] != "succeeded" || st["PowerState"] != "running" {
				t.Errorf("instance view %v", st)
			}
			view, err := f.vms.InstanceView(context.Background(), testRG, name, nil)
			if err != nil {
				t.Fatal(err)
			}
			if deref(view.ComputerName) != name || len(view.Statuses) != 2 || deref(view.Statuses[1].Code) != "PowerState/running" {
				t.Errorf("instanceView: computer %q statuses %d", deref(view.ComputerName), len(view.Statuses))
			}
			inst, ok := f.world.Get(deref(p.VMID))
			if !ok {
				t.Fatalf("world has no instance %s", deref(p.VMID))
			}
			wantMarket := catalog.OnDemand
			if tt.wantSpot {
				wantMarket = catalog.Spot
			}
			if inst.Region != tt.wantLoc || inst.Zone != tt.wantWorld || inst.Market != wantMarket {
				t.Errorf("world has %s %s %s, want %s %s %s", inst.Region, inst.Zone, inst.Market, tt.wantLoc, tt.wantWorld, wantMarket)
			}
		})
	}
}

func zonesOf(vm armcompute.VirtualMachine) string {
	var out []string
	for _, z := range vm.Zones {
		out = append(out, deref(z))
	}
	return strings.Join(out, ",")
}

// One create is one PUT, the operation polls and the SDK's final GET.
func TestCreateRequestCounts(t *testing.T) {
	f := newFront(t, frontConfig{})
	f.mustCreate(t, "counted", vmRequest("eastus", t4, inZone("1")))
	calls := f.world.Calls()
	want := map[string]int{"azure put": 1, "azure operation": 1, "azure get": 1}
	for k, n := range want {
		if calls[k] != n {
			t.Errorf("%s: %d calls, want %d (all: %v)", k, calls[k], n, calls)
		}
	}
}

// While the operation runs the VM shows Creating, the poll carries
// Retry-After, and the poller finishes once the world's time has come.
func TestCreateInProgress(t *testing.T) {
	f := newFront(t, frontConfig{manual: true, world: sim.Config{OperationTime: 2 * time.Minute, PendingFor: 2 * time.Minute}})
	ctx := context.Background()
	poller, err := f.vms.BeginCreateOrUpdate(ctx, testRG, "slow", vmRequest("eastus", t4, inZone("1")), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := poller.Poll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if poller.Done() || resp.Header.Get("Retry-After") != "120" {
		t.Fatalf("done %v, Retry-After %q; want a running operation due in 120 s", poller.Done(), resp.Header.Get("Retry-After"))
	}
	vm, err := f.get(t, "slow")
	if err != nil {
		t.Fatal(err)
	}
	if st := statuses(vm); deref(vm.Properties.ProvisioningState) != "Creating" || st["ProvisioningState"] != "creating" || st["PowerState"] != "starting" {
		t.Fatalf("while creating: %q %v", deref(vm.Properties.ProvisioningState), st)
	}
	f.clock.Advance(2 * time.Minute)
	if _, err := poller.Poll(ctx); err != nil {
		t.Fatal(err)
	}
	if !poller.Done() {
		t.Fatal("operation still running after its time")
	}
	res, err := poller.Result(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if deref(res.Properties.ProvisioningState) != "Succeeded" {
		t.Fatalf("provisioningState %q", deref(res.Properties.ProvisioningState))
	}
}

// A repeated create of the same name returns the same VM; with
// If-None-Match: * it is refused with a 412 the caller can recognise. Either
// way there is still one VM.
func TestRepeatedCreate(t *testing.T) {
	tests := []struct {
		name        string
		ifNoneMatch *string
		wantCode    string
	}{
		{name: "PUT again is an update of the same VM"},
		{name: "If-None-Match * is refused", ifNoneMatch: to.Ptr("*"), wantCode: "PreconditionFailed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFront(t, frontConfig{})
			opts := &armcompute.VirtualMachinesClientBeginCreateOrUpdateOptions{IfNoneMatch: tt.ifNoneMatch}
			first, err := f.vms.BeginCreateOrUpdate(context.Background(), testRG, "once", vmRequest("eastus", t4, inZone("1")), opts)
			if err != nil {
				t.Fatal(err)
			}
			vm, err := first.PollUntilDone(context.Background(), pollFast)
			if err != nil {
				t.Fatal(err)
			}
			// ARM compares names case-insensitively.
			second, err := f.vms.BeginCreateOrUpdate(context.Background(), testRG, "ONCE", vmRequest("eastus", t4, inZone("1")), opts)
			if tt.wantCode != "" {
				responseError(t, err, tt.wantCode, http.StatusPreconditionFailed)
			} else {
				if err != nil {
					t.Fatal(err)
				}
				again, err := second.PollUntilDone(context.Background(), pollFast)
				if err != nil {
					t.Fatal(err)
				}
				if deref(again.Properties.VMID) != deref(vm.Properties.VMID) || deref(again.Name) != "once" {
					t.Fatalf("second PUT gave %s %s, want the first VM %s", deref(again.Name), deref(again.Properties.VMID), deref(vm.Properties.VMID))
				}
			}
			if n := len(f.world.List(catalog.Azure, nil)); n != 1 {
				t.Fatalf("%d VMs, want 1", n)
			}
		})
	}
}

func TestUpdate(t *testing.T) {
	f := newFront(t, frontConfig{})
	f.mustCreate(t, "upd", vmRequest("eastus", t4, inZone("1"), withTags(map[string]string{"keep": "1", "drop": "1"})))

	t.Run("tags are replaced", func(t *testing.T) {
		vm := f.mustCreate(t, "upd", vmRequest("eastus", t4, inZone("1"), withTags(map[string]string{"keep": "2", "new": "1"})))
		if len(vm.Tags) != 2 || deref(vm.Tags["keep"]) != "2" || deref(vm.Tags["new"]) != "1" {
			t.Fatalf("tags %v, want exactly keep=2 new=1", vm.Tags)
		}
	})

	changes := []struct {
		name     string
		vm       armcompute.VirtualMachine
		wantCode string
	}{
		{"vmSize", vmRequest("eastus", a100, inZone("1")), "PropertyChangeNotAllowed"},
		{"location", vmRequest("eastus2", t4, inZone("1")), "InvalidResourceLocation"},
		{"zones", vmRequest("eastus", t4, inZone("2")), "PropertyChangeNotAllowed"},
		{"priority", vmRequest("eastus", t4, inZone("1"), spot(armcompute.VirtualMachineEvictionPolicyTypesDelete)), "PropertyChangeNotAllowed"},
	}
	for _, tt := range changes {
		t.Run("changing "+tt.name+" is refused", func(t *testing.T) {
			_, err := f.vms.BeginCreateOrUpdate(context.Background(), testRG, "upd", tt.vm, nil)
			responseError(t, err, tt.wantCode, http.StatusConflict)
		})
	}
}

// A PUT while the VM is being deleted is refused, as Compute does.
func TestPutWhileDeleting(t *testing.T) {
	f := newFront(t, frontConfig{manual: true, world: sim.Config{OperationTime: time.Minute}})
	poller, err := f.vms.BeginCreateOrUpdate(context.Background(), testRG, "doomed", vmRequest("eastus", t4, inZone("1")), nil)
	if err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(time.Minute)
	if _, err := poller.Poll(context.Background()); err != nil || !poller.Done() {
		t.Fatalf("create did not finish: %v", err)
	}
	if _, err := f.vms.BeginDelete(context.Background(), testRG, "doomed", nil); err != nil {
		t.Fatal(err)
	}
	_, err = f.vms.BeginCreateOrUpdate(context.Background(), testRG, "doomed", vmRequest("eastus", t4, inZone("1")), nil)
	re := responseError(t, err, "OperationNotAllowed", http.StatusConflict)
	if !strings.Contains(re.Error(), "marked for deletion") {
		t.Fatalf("message: %v", re)
	}
}
