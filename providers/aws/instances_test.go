// SPDX-License-Identifier: Apache-2.0

package aws

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/gpufleet/gpufleet/planner"
)

func TestStateOf(t *testing.T) {
	tests := []struct {
		state  types.InstanceStateName
		reason string
		want   planner.State
	}{
		{types.InstanceStateNamePending, "pending", planner.StatePending},
		{types.InstanceStateNameRunning, "", planner.StateRunning},
		{types.InstanceStateNameStopping, "Client.UserInitiatedShutdown", planner.StateStopping},
		{types.InstanceStateNameStopped, "Client.UserInitiatedShutdown", planner.StateStopping},
		{types.InstanceStateNameShuttingDown, "Client.UserInitiatedShutdown", planner.StateTerminated},
		{types.InstanceStateNameTerminated, "Client.UserInitiatedShutdown", planner.StateTerminated},
		// A launch EC2 accepted and then could not place.
		{types.InstanceStateNameTerminated, "Server.InsufficientInstanceCapacity", planner.StateTerminated},
		{types.InstanceStateNameTerminated, "Server.InternalError", planner.StateTerminated},
		// Spot reclaimed: terminated, or stopped when the request said so.
		{types.InstanceStateNameShuttingDown, "Server.SpotInstanceTermination", planner.StatePreempted},
		{types.InstanceStateNameTerminated, "Server.SpotInstanceTermination", planner.StatePreempted},
		{types.InstanceStateNameStopping, "Server.SpotInstanceShutdown", planner.StatePreempted},
		{types.InstanceStateNameStopped, "Server.SpotInstanceShutdown", planner.StatePreempted},
		{"", "", planner.StateTerminated},
	}
	for _, tt := range tests {
		if got := stateOf(tt.state, tt.reason); got != tt.want {
			t.Errorf("%s (%s): %s, want %s", tt.state, tt.reason, got, tt.want)
		}
	}
}
