// SPDX-License-Identifier: Apache-2.0

package oci

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/oracle/oci-go-sdk/v65/core"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
)

func owned(fleet, token string) map[string]string {
	return map[string]string{providers.TagFleet: fleet, providers.TagWorkload: "w", providers.TagToken: token, providers.TagBootstrap: "abcdef012345", "team": "ml"}
}

// TestList: every page of every region is read; only instances carrying
// gpufleet's tags are listed, terminated ones not at all, with their
// zone read back from the availability domain's name, their region the
// client's, and their state mapped.
func TestList(t *testing.T) {
	b := newFakeBackend(t)
	running := b.oci.put(ashburn, "US-ASHBURN-AD-1", a10, core.InstanceLifecycleStateRunning, owned("f", "t1"))
	for i := range 7 {
		b.oci.put(ashburn, "US-ASHBURN-AD-2", a10, core.InstanceLifecycleStateProvisioning, owned("f", "p"+string(rune('a'+i))))
	}
	going := b.oci.put(ashburn, "US-ASHBURN-AD-1", a10, core.InstanceLifecycleStateTerminating, owned("f", "t2"))
	b.oci.put(ashburn, "US-ASHBURN-AD-1", a10, core.InstanceLifecycleStateTerminated, owned("f", "t3"))
	stopped := b.oci.put(frankfurt, "EU-FRANKFURT-1-AD-1", a10, core.InstanceLifecycleStateStopped, owned("f", "t4"))
	b.oci.put(frankfurt, "EU-FRANKFURT-1-AD-1", a10, core.InstanceLifecycleStateRunning, map[string]string{"team": "ml"})
	b.oci.put(frankfurt, "EU-FRANKFURT-1-AD-1", a10, core.InstanceLifecycleStateRunning, owned("other", "t5"))

	got, err := b.provider.List(context.Background(), providers.Selector{Fleet: "f"})
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]providers.Instance{}
	for _, inst := range got {
		byID[inst.ID] = inst
	}
	if len(got) != 10 || len(byID) != 10 {
		t.Fatalf("listed %d instances (%d distinct), want 10: %+v", len(got), len(byID), got)
	}
	want := providers.Instance{ID: running, OfferKey: testOffer, Fleet: "f", Workload: "w", Token: "t1", Bootstrap: "abcdef012345",
		State: planner.StateRunning, LaunchedAt: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)}
	if byID[running] != want {
		t.Errorf("listed %+v, want %+v", byID[running], want)
	}
	if byID[going].State != planner.StateTerminated {
		t.Errorf("a terminating instance is %s", byID[going].State)
	}
	if s := byID[stopped]; s.State != planner.StateStopping || s.Region != frankfurt || s.Zone != "EU-FRANKFURT-1-AD-1" {
		t.Errorf("a stopped instance in Frankfurt is listed as %+v", s)
	}
	// The region's instances came in pages of three.
	if n := b.oci.calls("ListInstances"); n != 4+1 {
		t.Errorf("%d list calls, want 5", n)
	}
	all, err := b.provider.List(context.Background(), providers.Selector{})
	if err != nil || len(all) != 11 {
		t.Errorf("List of every fleet: %d instances, %v; want 11", len(all), err)
	}
}

// TestListFails: a region that cannot be listed fails the list, rather
// than report its instances gone.
func TestListFails(t *testing.T) {
	b := newFakeBackend(t)
	b.oci.fail("ListInstances", 10, fakeFault{status: http.StatusInternalServerError, code: "InternalError", message: "Internal error"})
	if _, err := b.provider.List(context.Background(), providers.Selector{}); !errors.Is(err, providers.ErrUnavailable) {
		t.Fatalf("List: %v, want unavailable", err)
	}
}

func TestStateOf(t *testing.T) {
	for _, tt := range []struct {
		state  core.InstanceLifecycleStateEnum
		want   planner.State
		listed bool
	}{
		{core.InstanceLifecycleStateProvisioning, planner.StatePending, true},
		{core.InstanceLifecycleStateStarting, planner.StatePending, true},
		{core.InstanceLifecycleStateMoving, planner.StatePending, true},
		{core.InstanceLifecycleStateRunning, planner.StateRunning, true},
		{core.InstanceLifecycleStateCreatingImage, planner.StateRunning, true},
		{core.InstanceLifecycleStateStopping, planner.StateStopping, true},
		{core.InstanceLifecycleStateStopped, planner.StateStopping, true},
		{core.InstanceLifecycleStateTerminating, planner.StateTerminated, true},
		{core.InstanceLifecycleStateTerminated, "", false},
		{"SOMETHING_NEW", planner.StatePending, true},
	} {
		if got, listed := stateOf(tt.state); got != tt.want || listed != tt.listed {
			t.Errorf("stateOf(%s) = %s, %v; want %s, %v", tt.state, got, listed, tt.want, tt.listed)
		}
	}
}

// TestZones: a zone is its availability domain's name past the tenancy's
// prefix, and a create in a zone none of the region's domains is invalid,
// saying which there are.
func TestZones(t *testing.T) {
	for ad, zone := range map[string]string{"Uocm:PHX-AD-1": "PHX-AD-1", "gpuf:EU-FRANKFURT-1-AD-2": "EU-FRANKFURT-1-AD-2", "US-ASHBURN-AD-3": "US-ASHBURN-AD-3"} {
		if got := zoneOf(ad); got != zone {
			t.Errorf("zoneOf(%s) = %s, want %s", ad, got, zone)
		}
	}
	b := newFakeBackend(t)
	offer := testOffer
	offer.Zone = "US-ASHBURN-AD-2"
	ad, err := b.provider.adOf(context.Background(), "create", offer)
	if err != nil || ad != tenancyPrefix+"US-ASHBURN-AD-2" {
		t.Errorf("adOf(%s) = %s, %v", offer.Zone, ad, err)
	}
	offer.Zone = "EU-FRANKFURT-1-AD-1"
	req := request("f", 0)
	req.Offer = offer
	_, err = b.provider.Create(context.Background(), req)
	var pe *providers.Error
	if !errors.As(err, &pe) || pe.Kind != providers.KindInvalid || pe.Message != `zone "EU-FRANKFURT-1-AD-1" is none of region us-ashburn-1's availability domains (US-ASHBURN-AD-1, US-ASHBURN-AD-2, US-ASHBURN-AD-3)` {
		t.Errorf("Create in another region's zone: %v", err)
	}
	// A failed read of the domains is made again next time.
	b2 := newFakeBackend(t)
	b2.oci.fail("ListAvailabilityDomains", 4, fakeFault{status: http.StatusServiceUnavailable, code: "ServiceUnavailable", message: "down"})
	if _, err := b2.provider.adOf(context.Background(), "create", testOffer); !errors.Is(err, providers.ErrUnavailable) {
		t.Fatalf("adOf with identity down: %v", err)
	}
	if _, err := b2.provider.adOf(context.Background(), "create", testOffer); err != nil {
		t.Errorf("adOf once identity is back: %v", err)
	}
}
