// SPDX-License-Identifier: Apache-2.0

package ec2sim

import (
	"encoding/xml"
	"strconv"
	"time"

	"github.com/gpufleet/gpufleet/providers/sim"
)

type statusDetailXML struct {
	Name   string `xml:"name"`
	Status string `xml:"status"`
}

type statusSummaryXML struct {
	Status  string            `xml:"status"`
	Details []statusDetailXML `xml:"details>item"`
}

type instanceStatusXML struct {
	InstanceID         string           `xml:"instanceId"`
	AvailabilityZone   string           `xml:"availabilityZone"`
	AvailabilityZoneID string           `xml:"availabilityZoneId"`
	Events             []struct{}       `xml:"eventsSet>item"`
	InstanceState      stateXML         `xml:"instanceState"`
	SystemStatus       statusSummaryXML `xml:"systemStatus"`
	InstanceStatus     statusSummaryXML `xml:"instanceStatus"`
	AttachedEbsStatus  statusSummaryXML `xml:"attachedEbsStatus"`
}

type describeInstanceStatusResponse struct {
	XMLName   xml.Name            `xml:"DescribeInstanceStatusResponse"`
	Xmlns     string              `xml:"xmlns,attr"`
	RequestID string              `xml:"requestId"`
	Statuses  []instanceStatusXML `xml:"instanceStatusSet>item"`
	NextToken string              `xml:"nextToken,omitempty"`
}

// statusChecksTake is how long EC2's status checks take once an instance
// runs: until they pass, both read initializing, for minutes, which a
// client waiting for instance-status-ok sees.
const statusChecksTake = 3 * time.Minute

// statusCheck is the result of EC2's status checks for an instance in a
// state: they run while it is pending and for statusChecksTake after it
// runs, then have passed; an instance on its way out, or gone, has none
// that apply.
func statusCheck(state string, checking bool) statusSummaryXML {
	switch {
	case state == "pending" || state == "running" && checking:
		return statusSummaryXML{Status: "initializing", Details: []statusDetailXML{{Name: "reachability", Status: "initializing"}}}
	case state == "running":
		return statusSummaryXML{Status: "ok", Details: []statusDetailXML{{Name: "reachability", Status: "passed"}}}
	}
	return statusSummaryXML{Status: "not-applicable"}
}

func (s *Server) renderStatus(inst *sim.Instance, now time.Time, pendingFor time.Duration) instanceStatusXML {
	state := stateName(inst.State)
	check := statusCheck(state, now.Before(inst.LaunchedAt.Add(pendingFor+statusChecksTake)))
	return instanceStatusXML{
		InstanceID:         inst.ID,
		AvailabilityZone:   inst.Zone,
		AvailabilityZoneID: s.zoneID(inst.Zone),
		InstanceState:      stateOf(state),
		SystemStatus:       check,
		InstanceStatus:     check,
		AttachedEbsStatus:  check,
	}
}

var statusFilters = map[string]func(x instanceStatusXML) []string{
	"availability-zone":            func(x instanceStatusXML) []string { return []string{x.AvailabilityZone} },
	"availability-zone-id":         func(x instanceStatusXML) []string { return []string{x.AvailabilityZoneID} },
	"instance-state-code":          func(x instanceStatusXML) []string { return []string{strconv.Itoa(x.InstanceState.Code)} },
	"instance-state-name":          func(x instanceStatusXML) []string { return []string{x.InstanceState.Name} },
	"instance-status.status":       func(x instanceStatusXML) []string { return []string{x.InstanceStatus.Status} },
	"instance-status.reachability": func(x instanceStatusXML) []string { return reachability(x.InstanceStatus) },
	"system-status.status":         func(x instanceStatusXML) []string { return []string{x.SystemStatus.Status} },
	"system-status.reachability":   func(x instanceStatusXML) []string { return reachability(x.SystemStatus) },
	"attached-ebs-status.status":   func(x instanceStatusXML) []string { return []string{x.AttachedEbsStatus.Status} },
	// The front schedules no events.
	"event.code":                func(instanceStatusXML) []string { return nil },
	"event.description":         func(instanceStatusXML) []string { return nil },
	"event.instance-event-id":   func(instanceStatusXML) []string { return nil },
	"event.not-after":           func(instanceStatusXML) []string { return nil },
	"event.not-before":          func(instanceStatusXML) []string { return nil },
	"event.not-before-deadline": func(instanceStatusXML) []string { return nil },
}

func reachability(s statusSummaryXML) []string {
	var out []string
	for _, d := range s.Details {
		if d.Name == "reachability" {
			out = append(out, d.Status)
		}
	}
	return out
}

// describeInstanceStatus answers with the status checks of the region's
// running instances, or of every listed instance with
// IncludeAllInstances, in launch order; instances asked for by id that do
// not run are left out unless all are included, as on EC2.
func (s *Server) describeInstanceStatus(req *request) (any, *apiError) {
	if apiErr := s.admit(req); apiErr != nil {
		return nil, apiErr
	}
	form := req.form
	ids := unique(list(form, "InstanceId"))
	fs, apiErr := knownFilters(form, statusFilters, false)
	if apiErr != nil {
		return nil, apiErr
	}
	all, apiErr := boolParam(form, "IncludeAllInstances", false)
	if apiErr != nil {
		return nil, apiErr
	}
	p, apiErr := readSeqPage(form, ids, "status")
	if apiErr != nil {
		return nil, apiErr
	}
	if apiErr := checkInstanceIDs(ids); apiErr != nil {
		return nil, apiErr
	}

	insts, apiErr := s.listInstances(req.region, ids, func(inst *sim.Instance) bool {
		return inst.Seq > p.after && (all || inst.State == sim.StateRunning)
	})
	if apiErr != nil {
		return nil, apiErr
	}
	out := describeInstanceStatusResponse{Xmlns: xmlns, RequestID: req.id}
	// The token is the launch sequence of the last instance served, as
	// DescribeInstances pages.
	var last uint64
	now, pendingFor := s.world.Now(), s.world.Latency().Launch
	for _, inst := range insts {
		x := s.renderStatus(inst, now, pendingFor)
		if !matchesTable(x, fs, statusFilters) {
			continue
		}
		if p.paged && len(out.Statuses) == p.size {
			out.NextToken = encodeToken("status", last)
			break
		}
		out.Statuses = append(out.Statuses, x)
		last = inst.Seq
	}
	return out, nil
}
