// SPDX-License-Identifier: Apache-2.0

package sim

import (
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/schema/catalog"
)

// A stopped instance holds no capacity: another takes its place, and its
// start meets the stock-out; a delete of it that fails leaves it stopped,
// still holding nothing.
func TestAStoppedInstanceHoldsNothing(t *testing.T) {
	clock := NewManualClock(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	w, err := New(Config{Clock: clock, OperationTime: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	spec := LaunchSpec{Cloud: catalog.Azure, Zone: "eastus-1", InstanceType: "Standard_NC4as_T4_v3", Market: catalog.OnDemand, Scope: "rg", Name: "a"}
	w.SetCapacity(spec.Cloud, spec.Zone, spec.InstanceType, spec.Market, 1)
	first, err := w.Launch(spec)
	if err != nil {
		t.Fatal(err)
	}
	id := first.Instance.ID
	if _, err := w.Stop(id); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Start(id); kindOf(err) != KindIncorrectState {
		t.Errorf("a start while stopping: %v, want incorrect state", err)
	}
	clock.Advance(time.Minute)
	if inst, _ := w.Get(id); inst.State != StateStopped {
		t.Fatalf("after the operation time the instance is %s", inst.State)
	}
	spec.Name = "b"
	second, err := w.Launch(spec)
	if err != nil {
		t.Fatalf("a launch in the room the stopped instance left: %v", err)
	}
	if _, err := w.Start(id); kindOf(err) != KindCapacity {
		t.Errorf("a start with no room: %v, want capacity", err)
	}
	if _, err := w.StartDelete(id, "", &Error{Kind: KindServerError}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Minute)
	if inst, ok := w.Get(id); !ok || inst.State != StateStopped {
		t.Errorf("after a failed delete the instance is %+v, want stopped", inst)
	}
	if _, err := w.StartDelete(second.Instance.ID, "", nil); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Minute)
	if inst, err := w.Start(id); err != nil || inst.State != StateRunning {
		t.Errorf("a start with room again (launches take no time): %+v, %v", inst, err)
	}
}
