// SPDX-License-Identifier: Apache-2.0

package gcp

import (
	"testing"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// A VM's status never says on its own that GCE preempted it: a stopping
// or stopped VM is preempted only when GCE recorded a preemption of it,
// gone by this process's hand when it is deleting it, and stopped
// otherwise, spot or not.
func TestStateOf(t *testing.T) {
	tests := []struct {
		status                 string
		deletedByUs, preempted bool
		want                   planner.State
	}{
		{"PROVISIONING", false, false, planner.StatePending},
		{"STAGING", false, false, planner.StatePending},
		{"PENDING", false, false, planner.StatePending},
		{"REPAIRING", false, false, planner.StatePending},
		{"RUNNING", false, false, planner.StateRunning},
		{"STOPPING", false, false, planner.StateStopping},
		{"STOPPING", true, false, planner.StateTerminated},
		{"STOPPING", false, true, planner.StatePreempted},
		{"STOPPING", true, true, planner.StatePreempted},
		{"PENDING_STOP", false, true, planner.StatePreempted},
		{"PENDING_STOP", false, false, planner.StateStopping},
		{"DEPROVISIONING", false, false, planner.StateStopping},
		{"SUSPENDING", false, false, planner.StateStopping},
		{"TERMINATED", false, false, planner.StateStopping},
		{"TERMINATED", false, true, planner.StatePreempted},
		{"TERMINATED", true, false, planner.StateTerminated},
		{"STOPPED", false, false, planner.StateStopping},
		{"SUSPENDED", false, false, planner.StateStopping},
		{"SUSPENDED", false, true, planner.StatePreempted},
		{"SOMETHING_NEW", false, false, planner.StatePending},
		{"", false, false, planner.StatePending},
	}
	for _, tt := range tests {
		name := tt.status
		if tt.deletedByUs {
			name += "/deleting"
		}
		if tt.preempted {
			name += "/preempted"
		}
		t.Run(name, func(t *testing.T) {
			if got := stateOf(tt.status, tt.deletedByUs, tt.preempted); got != tt.want {
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
