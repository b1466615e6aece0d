package gcp

import (
	"testing"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

func TestStateOf(t *testing.T) {
	const (
		od   = catalog.OnDemand
		spot = catalog.Spot
	)
	tests := []struct {
		status      string
		market      catalog.Market
		deletedByUs bool
		want        planner.State
	}{
		{"PROVISIONING", od, false, planner.StatePending},
		{"STAGING", od, false, planner.StatePending},
		{"PENDING", spot, false, planner.StatePending},
		{"REPAIRING", od, false, planner.StatePending},
		{"RUNNING", od, false, planner.StateRunning},
		{"RUNNING", spot, false, planner.StateRunning},
		{"STOPPING", od, false, planner.StateStopping},
		{"STOPPING", od, true, planner.StateTerminated},
		{"STOPPING", spot, true, planner.StateTerminated},
		{"STOPPING", spot, false, planner.StatePreempted},
		{"PENDING_STOP", spot, false, planner.StatePreempted},
		{"DEPROVISIONING", od, false, planner.StateStopping},
		{"SUSPENDING", od, false, planner.StateStopping},
		{"TERMINATED", od, false, planner.StateStopping},
		{"TERMINATED", spot, false, planner.StatePreempted},
		{"TERMINATED", spot, true, planner.StateTerminated},
		{"TERMINATED", od, true, planner.StateTerminated},
		{"STOPPED", od, false, planner.StateStopping},
		{"SUSPENDED", od, false, planner.StateStopping},
		{"SUSPENDED", spot, false, planner.StatePreempted},
		{"SOMETHING_NEW", od, false, planner.StatePending},
		{"", od, false, planner.StatePending},
	}
	for _, tt := range tests {
		name := tt.status + "/" + string(tt.market)
		if tt.deletedByUs {
			name += "/deleting"
		}
		t.Run(name, func(t *testing.T) {
			if got := stateOf(tt.status, tt.market, tt.deletedByUs); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}

func TestMarketOf(t *testing.T) {
	tests := []struct {
		name string
		s    *computepb.Scheduling
		want catalog.Market
	}{
		{"no scheduling", nil, catalog.OnDemand},
		{"standard", &computepb.Scheduling{ProvisioningModel: proto.String("STANDARD")}, catalog.OnDemand},
		{"spot", &computepb.Scheduling{ProvisioningModel: proto.String("SPOT")}, catalog.Spot},
		{"legacy preemptible", &computepb.Scheduling{Preemptible: proto.Bool(true)}, catalog.Spot},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := marketOf(tt.s); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}

func TestRegionOf(t *testing.T) {
	for zone, want := range map[string]string{
		"us-central1-a":     "us-central1",
		"europe-west4-b":    "europe-west4",
		"asia-northeast1-c": "asia-northeast1",
		"nozone":            "",
		"":                  "",
	} {
		if got := regionOf(zone); got != want {
			t.Errorf("regionOf(%q) = %q, want %q", zone, got, want)
		}
	}
}
