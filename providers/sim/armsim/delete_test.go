// SPDX-License-Identifier: Apache-2.0

package armsim

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/providers/sim"
)

func TestDelete(t *testing.T) {
	tests := []struct {
		name   string
		create bool
		times  int
	}{
		{name: "an existing VM is gone after the poller", create: true, times: 1},
		{name: "deleting twice succeeds twice", create: true, times: 2},
		{name: "deleting an absent VM succeeds", times: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFront(t, frontConfig{})
			if tt.create {
				f.mustCreate(t, "gone", vmRequest("eastus", t4, inZone("1")))
			}
			for i := range tt.times {
				poller, err := f.vms.BeginDelete(context.Background(), testRG, "gone", nil)
				if err != nil {
					t.Fatalf("delete %d: %v", i+1, err)
				}
				if _, err := poller.PollUntilDone(context.Background(), pollFast); err != nil {
					t.Fatalf("delete %d: %v", i+1, err)
				}
			}
			_, err := f.get(t, "gone")
			re := responseError(t, err, "ResourceNotFound", http.StatusNotFound)
			if !strings.Contains(re.Error(), "The Resource 'Microsoft.Compute/virtualMachines/gone' under resource group '"+testRG+"' was not found.") {
				t.Fatalf("message: %v", re)
			}
			if n := len(f.world.Instances()); n != 0 {
				t.Fatalf("world still has %d instances", n)
			}
		})
	}
}

// A VM being deleted shows Deleting; a second DELETE meanwhile is accepted
// too, and both pollers finish when the world's time has come.
func TestDeleteInProgress(t *testing.T) {
	f := newFront(t, frontConfig{manual: true, world: sim.Config{OperationTime: 30 * time.Second}})
	ctx := context.Background()
	create, err := f.vms.BeginCreateOrUpdate(ctx, testRG, "slow", vmRequest("eastus", t4, inZone("1")), nil)
	if err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(30 * time.Second)
	if _, err := create.Poll(ctx); err != nil || !create.Done() {
		t.Fatalf("create not done: %v", err)
	}
	first, err := f.vms.BeginDelete(ctx, testRG, "slow", nil)
	if err != nil {
		t.Fatal(err)
	}
	second, err := f.vms.BeginDelete(ctx, testRG, "slow", nil)
	if err != nil {
		t.Fatal(err)
	}
	vm, err := f.get(t, "slow")
	if err != nil {
		t.Fatal(err)
	}
	if st := statuses(vm); deref(vm.Properties.ProvisioningState) != "Deleting" || st["ProvisioningState"] != "deleting" || st["PowerState"] != "deallocating" {
		t.Fatalf("while deleting: %q %v", deref(vm.Properties.ProvisioningState), st)
	}
	f.clock.Advance(30 * time.Second)
	for _, p := range []interface {
		Poll(context.Context) (*http.Response, error)
		Done() bool
	}{first, second} {
		if _, err := p.Poll(ctx); err != nil || !p.Done() {
			t.Fatalf("delete not done: %v", err)
		}
	}
	if _, err := f.get(t, "slow"); err == nil {
		t.Fatal("VM still there")
	}
}
