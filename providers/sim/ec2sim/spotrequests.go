// SPDX-License-Identifier: Apache-2.0

package ec2sim

import (
	"cmp"
	"encoding/xml"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"

	"github.com/gpufleet/gpufleet/providers/sim"
)

// A spot launch through RunInstances makes a spot instance request that
// EC2 fulfils at once or not at all; its id is on the instance
// (SpotInstanceRequestId). DescribeSpotInstanceRequests lists those
// requests of the region's listed instances: active while the instance
// is pending or running, closed once it ended, with the status code that
// says why (terminated by the user, or for want of capacity when EC2 took
// the instance back).

var spotRequestID = regexp.MustCompile(`^sir-[0-9a-z]{8}$`)

type describeSpotInstanceRequestsResponse struct {
	XMLName   xml.Name         `xml:"DescribeSpotInstanceRequestsResponse"`
	Xmlns     string           `xml:"xmlns,attr"`
	RequestID string           `xml:"requestId"`
	Requests  []spotRequestXML `xml:"spotInstanceRequestSet>item"`
	NextToken string           `xml:"nextToken,omitempty"`
}

type spotRequestXML struct {
	SpotInstanceRequestID string `xml:"spotInstanceRequestId"`
	SpotPrice             string `xml:"spotPrice,omitempty"`
	Type                  string `xml:"type"`
	State                 string `xml:"state"`
	Status                struct {
		Code       string `xml:"code"`
		UpdateTime string `xml:"updateTime"`
		Message    string `xml:"message"`
	} `xml:"status"`
	LaunchSpecification struct {
		ImageID      string `xml:"imageId"`
		InstanceType string `xml:"instanceType"`
		Placement    struct {
			AvailabilityZone string `xml:"availabilityZone"`
		} `xml:"placement"`
	} `xml:"launchSpecification"`
	InstanceID                   string   `xml:"instanceId"`
	CreateTime                   string   `xml:"createTime"`
	ProductDescription           string   `xml:"productDescription"`
	LaunchedAvailabilityZone     string   `xml:"launchedAvailabilityZone"`
	InstanceInterruptionBehavior string   `xml:"instanceInterruptionBehavior"`
	Tags                         []tagXML `xml:"tagSet>item"`
}

var spotRequestFilters = map[string]func(spotRequestXML) []string{
	"spot-instance-request-id":   func(r spotRequestXML) []string { return []string{r.SpotInstanceRequestID} },
	"state":                      func(r spotRequestXML) []string { return []string{r.State} },
	"status-code":                func(r spotRequestXML) []string { return []string{r.Status.Code} },
	"type":                       func(r spotRequestXML) []string { return []string{r.Type} },
	"instance-id":                func(r spotRequestXML) []string { return []string{r.InstanceID} },
	"launched-availability-zone": func(r spotRequestXML) []string { return []string{r.LaunchedAvailabilityZone} },
	"launch.instance-type":       func(r spotRequestXML) []string { return []string{r.LaunchSpecification.InstanceType} },
	"launch.image-id":            func(r spotRequestXML) []string { return []string{r.LaunchSpecification.ImageID} },
}

// maxSpotRequestResults is the most one page holds, and its default.
const maxSpotRequestResults = 1000

func (s *Server) describeSpotInstanceRequests(req *request) (any, *apiError) {
	if apiErr := s.admit(req); apiErr != nil {
		return nil, apiErr
	}
	fs, apiErr := knownFilters(req.form, spotRequestFilters, false)
	if apiErr != nil {
		return nil, apiErr
	}
	ids := unique(list(req.form, "SpotInstanceRequestId"))
	for _, id := range ids {
		if !spotRequestID.MatchString(id) {
			return nil, malformedID("InvalidSpotInstanceRequestID.Malformed", id, "sir")
		}
	}
	maxResults, paged, apiErr := intParam(req.form, "MaxResults")
	if apiErr != nil {
		return nil, apiErr
	}
	switch {
	case paged && len(ids) > 0:
		return nil, &apiError{Status: http.StatusBadRequest, Code: "InvalidParameterCombination", Message: "The parameter spotInstanceRequestIdSet cannot be used with the parameter maxResults"}
	case paged && (maxResults < 5 || maxResults > maxSpotRequestResults):
		return nil, invalidValue("Value ( %d ) for parameter maxResults is invalid. Expecting a value between 5 and %d.", maxResults, maxSpotRequestResults)
	case !paged:
		maxResults = maxSpotRequestResults
	}
	n, apiErr := nextToken(req.form, "spot-requests")
	if apiErr != nil {
		return nil, apiErr
	}

	var all []spotRequestXML
	for _, inst := range s.world.List(cloud, func(inst *sim.Instance) bool {
		return inst.Region == req.region && inst.Properties[propSpotRequest] != ""
	}) {
		all = append(all, s.renderSpotRequest(inst))
	}
	if len(ids) > 0 {
		var missing []string
		for _, id := range ids {
			if !slices.ContainsFunc(all, func(r spotRequestXML) bool { return r.SpotInstanceRequestID == id }) {
				missing = append(missing, id)
			}
		}
		if len(missing) > 0 {
			return nil, &apiError{Status: http.StatusBadRequest, Code: "InvalidSpotInstanceRequestID.NotFound",
				Message: fmt.Sprintf("The spot instance request ID '%s' does not exist", strings.Join(missing, ", "))}
		}
		all = slices.DeleteFunc(all, func(r spotRequestXML) bool { return !slices.Contains(ids, r.SpotInstanceRequestID) })
	}
	all = slices.DeleteFunc(all, func(r spotRequestXML) bool {
		return !matchesTable(r, fs, spotRequestFilters)
	})
	requests, next, apiErr := cut(all, page{offset: int(n), size: maxResults, paged: true}, "spot-requests")
	if apiErr != nil {
		return nil, apiErr
	}
	return describeSpotInstanceRequestsResponse{Xmlns: xmlns, RequestID: req.id, Requests: requests, NextToken: next}, nil
}

// renderSpotRequest draws the spot request behind a spot instance.
func (s *Server) renderSpotRequest(inst *sim.Instance) spotRequestXML {
	r := spotRequestXML{
		SpotInstanceRequestID:        inst.Properties[propSpotRequest],
		SpotPrice:                    inst.Properties[propSpotMaxPrice],
		Type:                         cmp.Or(inst.Properties[propSpotType], "one-time"),
		InstanceID:                   inst.ID,
		CreateTime:                   timestamp(inst.LaunchedAt),
		ProductDescription:           "Linux/UNIX",
		LaunchedAvailabilityZone:     inst.Zone,
		InstanceInterruptionBehavior: cmp.Or(inst.Properties[propSpotInterruption], "terminate"),
	}
	r.LaunchSpecification.ImageID = inst.Properties[propImage]
	r.LaunchSpecification.InstanceType = inst.InstanceType
	r.LaunchSpecification.Placement.AvailabilityZone = inst.Zone
	r.State, r.Status.Code, r.Status.Message = "active", "fulfilled", "Your spot request is fulfilled."
	r.Status.UpdateTime = r.CreateTime
	switch state := stateName(inst.State); {
	case state != "shutting-down" && state != "terminated":
	case inst.Preempted:
		r.State, r.Status.Code, r.Status.Message = "closed", "instance-terminated-no-capacity", "Spot Instance terminated due to no available capacity."
	case inst.Properties[propLaunchFailure] != "":
		r.State, r.Status.Code, r.Status.Message = "closed", "instance-terminated-by-service", "Spot Instance terminated by the service."
	default:
		r.State, r.Status.Code, r.Status.Message = "closed", "instance-terminated-by-user", "Spot Instance terminated due to user-initiated termination."
	}
	if !inst.EndedAt.IsZero() {
		r.Status.UpdateTime = timestamp(inst.EndedAt)
	}
	return r
}
