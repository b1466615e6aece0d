// SPDX-License-Identifier: Apache-2.0

package oci

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/oracle/oci-go-sdk/v65/common"
	"github.com/oracle/oci-go-sdk/v65/core"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
)

// TestDelete: an owned instance is terminated with its boot volume, once;
// one already going, or gone, is success without a call; one not
// gpufleet's, of another fleet or token, or in another compartment is
// refused and left running.
func TestDelete(t *testing.T) {
	b := newFakeBackend(t)
	ctx := context.Background()
	inst, err := b.provider.Create(ctx, request("f", 0))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.provider.Delete(ctx, inst); err != nil {
		t.Fatal(err)
	}
	terminates := b.oci.recorded("TerminateInstance")
	if len(terminates) != 1 || terminates[0].query["preserveBootVolume"] != "false" || terminates[0].path != "/20160918/instances/"+inst.ID {
		t.Fatalf("terminated with %+v", terminates)
	}
	if err := b.provider.Delete(ctx, inst); err != nil {
		t.Fatalf("a second Delete: %v", err)
	}
	gone := inst
	gone.ID = "ocid1.instance.oc1.us-ashburn-1.nosuch"
	if err := b.provider.Delete(ctx, gone); err != nil {
		t.Fatalf("Delete of an instance OCI does not know: %v", err)
	}
	if n := b.oci.calls("TerminateInstance"); n != 1 {
		t.Errorf("%d terminations, want 1", n)
	}

	foreign := b.oci.put(ashburn, testOffer.Zone, a10, core.InstanceLifecycleStateRunning, map[string]string{"team": "ml"})
	otherFleet := b.oci.put(ashburn, testOffer.Zone, a10, core.InstanceLifecycleStateRunning, owned("g", "t"))
	elsewhere := b.oci.put(ashburn, testOffer.Zone, a10, core.InstanceLifecycleStateRunning, owned("f", "t"))
	b.oci.mu.Lock()
	b.oci.instances[len(b.oci.instances)-1].CompartmentId = common.String("ocid1.compartment.oc1..another")
	b.oci.mu.Unlock()
	for name, target := range map[string]providers.Instance{
		"foreign":                    {ID: foreign, OfferKey: testOffer, Fleet: "f", Workload: "w", State: planner.StateRunning},
		"of another fleet":           {ID: otherFleet, OfferKey: testOffer, Fleet: "f", Workload: "w", State: planner.StateRunning},
		"of another token":           {ID: otherFleet, OfferKey: testOffer, Token: "other", State: planner.StateRunning},
		"in another compartment":     {ID: elsewhere, OfferKey: testOffer, Fleet: "f", Workload: "w", State: planner.StateRunning},
		"in a region not configured": {ID: foreign, OfferKey: planner.OfferKey{Cloud: Name, Region: "ap-tokyo-1"}},
		"without an id":              {OfferKey: testOffer},
	} {
		if err := b.provider.Delete(ctx, target); !errors.Is(err, providers.ErrInvalid) {
			t.Errorf("Delete of an instance %s: %v, want an invalid error", name, err)
		}
	}
	if n := b.oci.calls("TerminateInstance"); n != 1 {
		t.Errorf("refused deletes terminated %d instances", n-1)
	}

	b.oci.fail("GetInstance", 10, fakeFault{status: http.StatusUnauthorized, code: "NotAuthenticated", message: "no"})
	if err := b.provider.Delete(ctx, inst); !errors.Is(err, providers.ErrAuth) {
		t.Errorf("Delete with the read refused: %v, want an auth error", err)
	}
}
