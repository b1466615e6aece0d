// SPDX-License-Identifier: Apache-2.0

package aws

import (
	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// EC2's state-reason codes for a spot instance the cloud took back: it
// terminates, or stops when the request asked to.
const (
	reasonSpotTermination = "Server.SpotInstanceTermination"
	reasonSpotShutdown    = "Server.SpotInstanceShutdown"
)

// stateOf maps an EC2 instance state to gpufleet's. A spot instance EC2
// reclaimed is preempted whether it is still shutting down, terminated or
// stopped; a launch that failed after RunInstances accepted it ends as
// terminated, with the reason in its state reason.
func stateOf(name types.InstanceStateName, reason string) planner.State {
	if reason == reasonSpotTermination || reason == reasonSpotShutdown {
		switch name {
		case types.InstanceStateNameShuttingDown, types.InstanceStateNameTerminated,
			types.InstanceStateNameStopping, types.InstanceStateNameStopped:
			return planner.StatePreempted
		}
	}
	switch name {
	case types.InstanceStateNamePending:
		return planner.StatePending
	case types.InstanceStateNameRunning:
		return planner.StateRunning
	case types.InstanceStateNameStopping, types.InstanceStateNameStopped:
		// Not a working node, yet still there and still the account's.
		return planner.StateStopping
	default:
		return planner.StateTerminated
	}
}

func instanceState(inst types.Instance) planner.State {
	var name types.InstanceStateName
	if inst.State != nil {
		name = inst.State.Name
	}
	var reason string
	if inst.StateReason != nil {
		reason = awssdk.ToString(inst.StateReason.Code)
	}
	return stateOf(name, reason)
}

func tagMap(tags []types.Tag) map[string]string {
	out := make(map[string]string, len(tags))
	for _, t := range tags {
		out[awssdk.ToString(t.Key)] = awssdk.ToString(t.Value)
	}
	return out
}

// offerKey is where an instance runs, from its own attributes.
func offerKey(region string, inst types.Instance) planner.OfferKey {
	market := catalog.OnDemand
	if inst.InstanceLifecycle == types.InstanceLifecycleTypeSpot {
		market = catalog.Spot
	}
	var zone string
	if inst.Placement != nil {
		zone = awssdk.ToString(inst.Placement.AvailabilityZone)
	}
	return planner.OfferKey{
		Cloud:        catalog.AWS,
		Region:       region,
		Zone:         zone,
		InstanceType: string(inst.InstanceType),
		Market:       market,
	}
}

// toInstance reads an owned EC2 instance; ok is false for one without
// gpufleet's tags.
func toInstance(region string, inst types.Instance) (out providers.Instance, ok bool) {
	fleet, workload, token, ok := providers.Owned(tagMap(inst.Tags))
	if !ok {
		return providers.Instance{}, false
	}
	// Every node of a batch carries the batch's token, its first node's;
	// the launch index says which slot of the batch the node is.
	if i := int(awssdk.ToInt32(inst.AmiLaunchIndex)); i > 0 {
		if own, ok := planner.TokenAt(token, i); ok {
			token = own
		}
	}
	return providers.Instance{
		ID:         awssdk.ToString(inst.InstanceId),
		OfferKey:   offerKey(region, inst),
		Fleet:      fleet,
		Workload:   workload,
		Token:      token,
		Bootstrap:  tagMap(inst.Tags)[providers.TagBootstrap],
		State:      instanceState(inst),
		LaunchedAt: awssdk.ToTime(inst.LaunchTime),
	}, true
}
