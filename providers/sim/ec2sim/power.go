// SPDX-License-Identifier: Apache-2.0

package ec2sim

import (
	"encoding/xml"
	"fmt"
	"net/http"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

type stopInstancesResponse struct {
	XMLName   xml.Name         `xml:"StopInstancesResponse"`
	Xmlns     string           `xml:"xmlns,attr"`
	RequestID string           `xml:"requestId"`
	Instances []stateChangeXML `xml:"instancesSet>item"`
}

type startInstancesResponse struct {
	XMLName   xml.Name         `xml:"StartInstancesResponse"`
	Xmlns     string           `xml:"xmlns,attr"`
	RequestID string           `xml:"requestId"`
	Instances []stateChangeXML `xml:"instancesSet>item"`
}

// stopInstances stops instances, all or none: every id must exist and be
// stoppable first. A spot instance stops only if it was launched to be
// stopped (a persistent request that stops on interruption), as on EC2; a
// one-time one can only be terminated.
func (s *Server) stopInstances(req *request) (any, *apiError) {
	changes, apiErr := s.changePower(req, func(inst *sim.Instance) *apiError {
		if inst.Market == catalog.Spot && inst.Properties[propSpotType] != "persistent" {
			return &apiError{Status: http.StatusBadRequest, Code: "UnsupportedOperation", Message: fmt.Sprintf(
				"You can't stop the Spot Instance '%s' because it is associated with a one-time Spot Instance request. You can only stop Spot Instances associated with persistent Spot Instance requests.", inst.ID)}
		}
		// A pending instance must run before it can stop.
		switch stateName(inst.State) {
		case "pending", "shutting-down", "terminated":
			return incorrectState(inst.ID, "stopped")
		}
		return nil
	}, s.world.Stop, "stopping")
	if apiErr != nil {
		return nil, apiErr
	}
	return stopInstancesResponse{Xmlns: xmlns, RequestID: req.id, Instances: changes}, nil
}

// startInstances starts stopped instances, all or none; a start meets the
// zone's capacity and the account's quotas as a launch does.
func (s *Server) startInstances(req *request) (any, *apiError) {
	changes, apiErr := s.changePower(req, func(inst *sim.Instance) *apiError {
		switch stateName(inst.State) {
		case "stopping", "shutting-down", "terminated":
			return incorrectState(inst.ID, "started")
		}
		return nil
	}, s.world.Start, "pending")
	if apiErr != nil {
		return nil, apiErr
	}
	return startInstancesResponse{Xmlns: xmlns, RequestID: req.id, Instances: changes}, nil
}

// changePower checks every instance a stop or start names, then changes
// each, answering with their states before and after. An instance that
// changes is reported in the state the change begins with (moving, as
// EC2 reports it, even when the world's latency makes it immediate); one
// already there is reported as it is.
func (s *Server) changePower(req *request, check func(*sim.Instance) *apiError, change func(id string) (*sim.Instance, error), moving string) ([]stateChangeXML, *apiError) {
	found, apiErr := s.lockNamed(req)
	if apiErr != nil {
		return nil, apiErr
	}
	defer s.mutations.Unlock()
	for _, inst := range found {
		if apiErr := check(inst); apiErr != nil {
			return nil, apiErr
		}
	}
	if apiErr := req.dryRunStop(); apiErr != nil {
		return nil, apiErr
	}
	var out []stateChangeXML
	for _, inst := range found {
		if _, err := change(inst.ID); err != nil {
			return nil, s.worldError(err, launchContext{region: req.region, zone: inst.Zone, instanceType: inst.InstanceType, market: inst.Market})
		}
		previous, current := stateName(inst.State), moving
		if settled := map[string]string{"stopping": "stopped", "pending": "running"}[moving]; previous == moving || previous == settled {
			current = previous
		}
		out = append(out, stateChangeXML{InstanceID: inst.ID, CurrentState: stateOf(current), PreviousState: stateOf(previous)})
	}
	return out, nil
}

// incorrectState refuses a change an instance's state does not allow;
// done is what the change would have done ("stopped", "started").
func incorrectState(id, done string) *apiError {
	return &apiError{Status: http.StatusBadRequest, Code: "IncorrectInstanceState", Message: fmt.Sprintf(
		"The instance '%s' is not in a state from which it can be %s.", id, done)}
}
