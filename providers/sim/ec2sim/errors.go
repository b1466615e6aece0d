// SPDX-License-Identifier: Apache-2.0

package ec2sim

import (
	"encoding/xml"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// apiError is an answer in EC2's error envelope.
type apiError struct {
	Status  int
	Code    string
	Message string
}

func (e *apiError) Error() string { return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message) }

type errorResponse struct {
	XMLName   xml.Name `xml:"Response"`
	Code      string   `xml:"Errors>Error>Code"`
	Message   string   `xml:"Errors>Error>Message"`
	RequestID string   `xml:"RequestID"`
}

func writeError(w http.ResponseWriter, requestID string, e *apiError) {
	writeXML(w, e.Status, errorResponse{Code: e.Code, Message: e.Message, RequestID: requestID})
}

func invalidValue(format string, args ...any) *apiError {
	return &apiError{Status: http.StatusBadRequest, Code: "InvalidParameterValue", Message: fmt.Sprintf(format, args...)}
}

// malformedID is EC2's answer to an id not of the shape of its kind's,
// those that start with prefix.
func malformedID(code, id, prefix string) *apiError {
	return &apiError{Status: http.StatusBadRequest, Code: code, Message: fmt.Sprintf("Invalid id: %q (expecting \"%s-...\")", id, prefix)}
}

func tagLimitExceeded() *apiError {
	return &apiError{Status: http.StatusBadRequest, Code: "TagLimitExceeded", Message: fmt.Sprintf("The maximum number of tags per resource (%d) was exceeded.", maxTags)}
}

func missingParameter(name string) *apiError {
	return &apiError{Status: http.StatusBadRequest, Code: "MissingParameter", Message: fmt.Sprintf("The request must contain the parameter %s", name)}
}

// kindCodes is the code EC2 answers for each kind of world failure when no
// fault named an exact code. Quota on the spot market is the exception the
// table cannot hold: EC2 reports it as MaxSpotInstanceCountExceeded.
var kindCodes = map[sim.Kind]string{
	sim.KindCapacity:            "InsufficientInstanceCapacity",
	sim.KindQuota:               "VcpuLimitExceeded",
	sim.KindThrottled:           "RequestLimitExceeded",
	sim.KindServerError:         "InternalError",
	sim.KindNotFound:            "InvalidInstanceID.NotFound",
	sim.KindAlreadyExists:       "InvalidParameterValue",
	sim.KindUnknownZone:         "InvalidParameterValue",
	sim.KindUnknownType:         "InvalidParameterValue",
	sim.KindUnsupported:         "Unsupported",
	sim.KindIdempotencyMismatch: "IdempotentParameterMismatch",
	sim.KindInvalid:             "InvalidParameterValue",
	sim.KindIncorrectState:      "IncorrectInstanceState",
}

// codeStatus is the HTTP status of the codes EC2 lists among its server
// errors, and of its denials; every other code is a client error, 400.
// The SDK's standard retryer retries 500 and 503, so the server errors are
// retried by default.
var codeStatus = map[string]int{
	"AuthFailure":                          http.StatusUnauthorized,
	"UnauthorizedOperation":                http.StatusForbidden,
	"InsufficientAddressCapacity":          http.StatusInternalServerError,
	"InsufficientCapacity":                 http.StatusInternalServerError,
	"InsufficientHostCapacity":             http.StatusInternalServerError,
	"InsufficientInstanceCapacity":         http.StatusInternalServerError,
	"InsufficientReservedInstanceCapacity": http.StatusInternalServerError,
	"InsufficientVolumeCapacity":           http.StatusInternalServerError,
	"InternalError":                        http.StatusInternalServerError,
	"InternalFailure":                      http.StatusInternalServerError,
	"RequestLimitExceeded":                 http.StatusServiceUnavailable,
	"ServiceUnavailable":                   http.StatusServiceUnavailable,
	"Unavailable":                          http.StatusServiceUnavailable,
}

func statusOf(code string) int {
	if status, ok := codeStatus[code]; ok {
		return status
	}
	return http.StatusBadRequest
}

// launchContext is what EC2's messages name about the request that failed.
type launchContext struct {
	region, zone, instanceType string
	market                     catalog.Market
	count                      int
}

// worldError renders a failure of the world, or one a fault injected, as
// EC2 would report it.
func (s *Server) worldError(err error, lc launchContext) *apiError {
	e, ok := errors.AsType[*sim.Error](err)
	if !ok {
		return &apiError{Status: http.StatusInternalServerError, Code: "InternalError", Message: "An internal error has occurred"}
	}
	code := e.Code
	if code == "" {
		code = kindCodes[e.Kind]
		if e.Kind == sim.KindQuota && lc.market == catalog.Spot {
			code = "MaxSpotInstanceCountExceeded"
		}
		if code == "" {
			code = "InternalError"
		}
	}
	return &apiError{Status: statusOf(code), Code: code, Message: s.message(code, e, lc)}
}

// message is EC2's wording for a code, filled in from the request.
func (s *Server) message(code string, e *sim.Error, lc launchContext) string {
	switch code {
	case "InsufficientInstanceCapacity":
		if lc.market == catalog.Spot {
			return "There is no Spot capacity available that matches your request."
		}
		msg := fmt.Sprintf("We currently do not have sufficient %s capacity in the Availability Zone you requested (%s). Our system will be working on provisioning additional capacity.", lc.instanceType, lc.zone)
		if others := s.otherZones(lc); len(others) > 0 {
			msg += fmt.Sprintf(" You can currently get %s capacity by not specifying an Availability Zone in your request or choosing %s.", lc.instanceType, strings.Join(others, ", "))
		}
		return msg
	case "InsufficientHostCapacity":
		return "There is not enough capacity to fulfill your Dedicated Host request."
	case "InsufficientReservedInstanceCapacity":
		return "There is not enough capacity to fulfill your request for Reserved Instances."
	case "UnfulfillableCapacity":
		return "Unable to fulfill capacity due to your request configuration. Please adjust your request and try again."
	case "InsufficientFreeAddressesInSubnet":
		return "Insufficient Free IP addresses in subnet."
	case "VcpuLimitExceeded":
		return fmt.Sprintf("You have requested more vCPU capacity than your current vCPU limit of %d allows for the instance bucket that the specified instance type belongs to. Please visit http://aws.amazon.com/contact-us/ec2-request to request an adjustment to this limit.", s.vcpuLimit(e))
	case "MaxSpotInstanceCountExceeded":
		return "Max spot instance count exceeded"
	case "InstanceLimitExceeded":
		return fmt.Sprintf("Your quota allows for 0 more running instance(s). You requested at least %d", max(lc.count, 1))
	case "RequestLimitExceeded":
		return "Request limit exceeded."
	case "InternalError", "InternalFailure":
		return "An internal error has occurred"
	case "Unavailable", "ServiceUnavailable":
		return "The server is overloaded and can't handle the request."
	case "IdempotentParameterMismatch":
		return "Arguments on this idempotent request are inconsistent with arguments used in previous request(s)."
	case "UnauthorizedOperation":
		return "You are not authorized to perform this operation."
	case "AuthFailure":
		return "AWS was not able to validate the provided access credentials"
	}
	switch e.Kind {
	case sim.KindUnknownZone:
		return fmt.Sprintf("Invalid availability zone: [%s]", lc.zone)
	case sim.KindUnknownType:
		return fmt.Sprintf("Invalid value '%s' for InstanceType.", lc.instanceType)
	case sim.KindUnsupported:
		return unsupportedMessage(lc, s.otherZones(lc))
	}
	return e.Message
}

func unsupportedMessage(lc launchContext, others []string) string {
	msg := fmt.Sprintf("Your requested instance type (%s) is not supported in your requested Availability Zone (%s).", lc.instanceType, lc.zone)
	if len(others) > 0 {
		msg += fmt.Sprintf(" Please retry your request by not specifying an Availability Zone or choosing %s.", strings.Join(others, ", "))
	}
	return msg
}

// vcpuLimit is the vCPU limit of the quota a create ran into. A fault's
// error names none, and reads as a limit of 0, what a new account sees.
func (s *Server) vcpuLimit(e *sim.Error) int {
	return e.Limit
}

// otherZones lists the region's other zones that offer the type, as EC2
// suggests them.
func (s *Server) otherZones(lc launchContext) []string {
	region, ok := s.world.Region(cloud, lc.region)
	if !ok {
		return nil
	}
	var zones []string
	for _, z := range region.Zones {
		if _, ok := s.world.Type(cloud, z, lc.instanceType, lc.market); ok && z != lc.zone {
			zones = append(zones, z)
		}
	}
	return zones
}
