// SPDX-License-Identifier: Apache-2.0

package gcesim

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// apiError is an error answered synchronously, in GCE's HTTP envelope:
//
//	{"error":{"code":N,"message":"…","errors":[{"message":"…","domain":"…","reason":"…"}]}}
type apiError struct {
	Status  int
	Reason  string
	Domain  string // "global" when empty
	Message string
}

func (e *apiError) Error() string { return fmt.Sprintf("%d %s: %s", e.Status, e.Reason, e.Message) }

type errorEnvelope struct {
	Error errorBody `json:"error"`
}

type errorBody struct {
	Code    int         `json:"code"`
	Message string      `json:"message"`
	Errors  []errorItem `json:"errors"`
}

type errorItem struct {
	Message string `json:"message"`
	Domain  string `json:"domain"`
	Reason  string `json:"reason"`
}

func writeError(w http.ResponseWriter, e *apiError) {
	domain := e.Domain
	if domain == "" {
		domain = "global"
	}
	body, _ := json.Marshal(errorEnvelope{errorBody{
		Code:    e.Status,
		Message: e.Message,
		Errors:  []errorItem{{Message: e.Message, Domain: domain, Reason: e.Reason}},
	}})
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(e.Status)
	_, _ = w.Write(body)
}

// asAPIError turns anything a handler returns into the envelope; what is
// not already an apiError is the emulator's own failure.
func asAPIError(err error) *apiError {
	var e *apiError
	if errors.As(err, &e) {
		return e
	}
	return &apiError{Status: http.StatusInternalServerError, Reason: "backendError", Message: "Internal error. Please try again or contact Google Support. (" + err.Error() + ")"}
}

func notFound(resource string) *apiError {
	return &apiError{Status: http.StatusNotFound, Reason: "notFound", Message: fmt.Sprintf("The resource '%s' was not found", resource)}
}

func alreadyExists(resource string) *apiError {
	return &apiError{Status: http.StatusConflict, Reason: "alreadyExists", Message: fmt.Sprintf("The resource '%s' already exists", resource)}
}

// invalidField is GCE's answer to a bad value: 400, reason invalid, and a
// message naming the field, the value and what is wrong with it.
func invalidField(field, value, why string) *apiError {
	msg := fmt.Sprintf("Invalid value for field '%s': '%s'.", field, value)
	if why != "" {
		msg += " " + why
	}
	return &apiError{Status: http.StatusBadRequest, Reason: "invalid", Message: msg}
}

func requiredField(field string) *apiError {
	return &apiError{Status: http.StatusBadRequest, Reason: "required", Message: fmt.Sprintf("Required field '%s' not specified", field)}
}

// syncErrors is how each world error kind is answered when GCE reports it
// on the request itself. Capacity and quota on inserts are normally
// reported on the operation instead (see opErrors).
var syncErrors = map[sim.Kind]apiError{
	sim.KindThrottled:           {Status: http.StatusForbidden, Reason: "rateLimitExceeded", Domain: "usageLimits"},
	sim.KindServerError:         {Status: http.StatusInternalServerError, Reason: "backendError"},
	sim.KindCapacity:            {Status: http.StatusServiceUnavailable, Reason: "insufficientCapacity"},
	sim.KindQuota:               {Status: http.StatusForbidden, Reason: "quotaExceeded", Domain: "usageLimits"},
	sim.KindNotFound:            {Status: http.StatusNotFound, Reason: "notFound"},
	sim.KindAlreadyExists:       {Status: http.StatusConflict, Reason: "alreadyExists"},
	sim.KindUnknownZone:         {Status: http.StatusNotFound, Reason: "notFound"},
	sim.KindUnknownType:         {Status: http.StatusBadRequest, Reason: "invalid"},
	sim.KindUnsupported:         {Status: http.StatusBadRequest, Reason: "invalid"},
	sim.KindIdempotencyMismatch: {Status: http.StatusBadRequest, Reason: "invalid"},
	sim.KindInvalid:             {Status: http.StatusBadRequest, Reason: "invalid"},
}

// The reasons a fault's Code can ask for to have a stock-out or an
// exceeded quota answered on the insert request rather than its operation.
const (
	reasonInsufficientCapacity = "insufficientCapacity"
	reasonQuotaExceeded        = "quotaExceeded"
)

// faultContext is what a fault's message needs to read like GCE's.
type faultContext struct {
	Project, Zone, Region string
	Type                  sim.InstanceType
	Spot                  bool
	// Permission is the IAM permission the call needs and Resource what
	// it is needed on, as a denial names them.
	Permission, Resource string
}

// The reasons a fault's Code can name to have a call denied, whatever the
// fault's kind: forbidden is a principal without the call's IAM
// permission, insufficientPermissions a token without the scope.
const (
	reasonForbidden               = "forbidden"
	reasonInsufficientPermissions = "insufficientPermissions"
)

// denied is GCE's 403 for a call the caller may not make, e.g. "Required
// 'compute.regions.get' permission for 'projects/p/regions/us-central1'".
func denied(reason string, fc faultContext) *apiError {
	msg := "Request had insufficient authentication scopes."
	if reason == reasonForbidden {
		msg = "The caller does not have permission"
		if fc.Permission != "" {
			msg = fmt.Sprintf("Required '%s' permission for '%s'", fc.Permission, cmp.Or(fc.Resource, "projects/"+fc.Project))
		}
	}
	return &apiError{Status: http.StatusForbidden, Reason: reason, Message: msg}
}

// syncError renders a world error as GCE's HTTP error. A fault's Code is
// the reason to answer with, or, when it is a number, the HTTP status (so a
// server-error fault can be a 503 that the SDK retries). A denial's reason
// (forbidden, insufficientPermissions) is answered as GCE denies a call.
func (s *Server) syncError(e *sim.Error, fc faultContext) *apiError {
	base, ok := syncErrors[e.Kind]
	if !ok {
		base = syncErrors[sim.KindServerError]
	}
	out := base
	if e.Code != "" {
		if n, err := strconv.Atoi(e.Code); err == nil && n >= 400 && n <= 599 {
			out.Status = n
		} else {
			out.Reason = e.Code
		}
	}
	if out.Reason == reasonForbidden || out.Reason == reasonInsufficientPermissions {
		return denied(out.Reason, fc)
	}
	switch e.Kind {
	case sim.KindThrottled:
		out.Message = "Rate Limit Exceeded"
	case sim.KindServerError:
		out.Message = "Internal error. Please try again or contact Google Support."
		if out.Status == http.StatusServiceUnavailable {
			out.Message = "The service is currently unavailable."
		}
	case sim.KindCapacity:
		out.Message = stockOutMessage(fc.Project, fc.Zone)
		if fc.Zone == "" {
			// Only a fault can stock out a call that names no zone.
			out.Message = "There are not enough resources available to fulfill the request. Try again later."
		}
	case sim.KindQuota:
		out.Message = s.quotaMessage(e, fc)
	default:
		out.Message = e.Message
	}
	return &out
}

func stockOutMessage(project, zone string) string {
	return fmt.Sprintf("The zone '%s' does not have enough resources available to fulfill the request. Try a different zone, or try again later.", scope(project, zone))
}

// exceededQuota is the quota an error says ran out: its own, or for a
// fault's error, which names none, the first quota the type counts
// against; false if the type counts against none.
func (s *Server) exceededQuota(e *sim.Error, fc faultContext) (name, region string, limit int, ok bool) {
	if e.Quota != "" {
		return e.Quota, e.Region, e.Limit, true
	}
	market := catalog.OnDemand
	if fc.Spot {
		market = catalog.Spot
	}
	q, ok := s.world.QuotaFor(cloud, fc.Region, fc.Type.Name, market)
	return q.Name, q.Region, q.Limit, ok
}

// quotaMessage names the quota as GCE does, e.g. "Quota 'NVIDIA_H100_GPUS'
// exceeded. Limit: 8.0 in region us-central1." A fault's error names none;
// it reads as the first quota the type counts against.
func (s *Server) quotaMessage(e *sim.Error, fc faultContext) string {
	name, region, limit, ok := s.exceededQuota(e, fc)
	if !ok {
		return "Quota exceeded."
	}
	if region == "" {
		return fmt.Sprintf("Quota '%s' exceeded. Limit: %d.0 globally.", name, limit)
	}
	return fmt.Sprintf("Quota '%s' exceeded. Limit: %d.0 in region %s.", name, limit, region)
}

// quotaDetails is the quotaInfo GCE attaches to a QUOTA_EXCEEDED error,
// which gcloud prints beneath the message: the quota's metric
// ("compute.googleapis.com/nvidia_l4_gpus"), its limit's name
// ("NVIDIA-L4-GPUS-per-project-region"), the limit, and the region for a
// regional quota.
func (s *Server) quotaDetails(e *sim.Error, fc faultContext) []*computepb.ErrorDetails {
	name, region, limit, ok := s.exceededQuota(e, fc)
	if !ok {
		return nil
	}
	info := &computepb.QuotaExceededInfo{
		MetricName: proto.String("compute.googleapis.com/" + strings.ToLower(name)),
		LimitName:  proto.String(strings.ReplaceAll(name, "_", "-") + "-per-project"),
		Limit:      proto.Float64(float64(limit)),
	}
	if region != "" {
		info.LimitName = proto.String(info.GetLimitName() + "-region")
		info.Dimensions = map[string]string{"region": region}
	}
	return []*computepb.ErrorDetails{{QuotaInfo: info}}
}

// opErrors is how a world error kind ends a long-running operation: the
// error code in error.errors[] and the HTTP status the operation carries,
// which makes the SDK's Operation.Wait return an error.
var opErrors = map[sim.Kind]struct {
	Code       string
	HTTPStatus int32
	HTTPText   string
}{
	sim.KindCapacity: {"ZONE_RESOURCE_POOL_EXHAUSTED", http.StatusServiceUnavailable, "SERVICE UNAVAILABLE"},
	sim.KindQuota:    {"QUOTA_EXCEEDED", http.StatusForbidden, "FORBIDDEN"},
}

// deleteFailure is how a delete that a fault fails after acceptance ends;
// GCE has no capacity to run out of when deleting.
var deleteFailure = struct {
	Code       string
	HTTPStatus int32
	HTTPText   string
}{"INTERNAL_ERROR", http.StatusInternalServerError, "INTERNAL SERVER ERROR"}

// operationError fills in a finished operation's error fields.
func (s *Server) operationError(op *sim.Operation, out *computepb.Operation, fc faultContext) {
	e := op.Err
	kind := e.Kind
	if e.Code == opErrors[sim.KindQuota].Code {
		// A fail-later fault asking for a quota error reads as one.
		kind = sim.KindQuota
	}
	spec, ok := opErrors[kind]
	if !ok || op.Kind == sim.OperationDelete {
		spec = deleteFailure
	}
	code := spec.Code
	if e.Code != "" {
		code = e.Code
	}
	item := &computepb.Errors{Code: proto.String(code)}
	switch {
	case op.Kind == sim.OperationDelete:
		item.Message = proto.String("Internal error. Please try again or contact Google Support.")
	case kind == sim.KindQuota:
		item.Message = proto.String(s.quotaMessage(e, fc))
		item.ErrorDetails = s.quotaDetails(e, fc)
	default:
		item.Message = proto.String(stockOutMessage(fc.Project, fc.Zone))
	}
	out.Error = &computepb.Error{Errors: []*computepb.Errors{item}}
	out.HttpErrorStatusCode = proto.Int32(spec.HTTPStatus)
	out.HttpErrorMessage = proto.String(spec.HTTPText)
}

// isSyncFault says whether a fault on an insert is answered on the request:
// throttling and 5xx always are; a stock-out or quota only when the fault
// asks for the synchronous reason by Code.
func isSyncFault(e *sim.Error) bool {
	switch e.Kind {
	case sim.KindCapacity:
		return strings.EqualFold(e.Code, reasonInsufficientCapacity)
	case sim.KindQuota:
		return strings.EqualFold(e.Code, reasonQuotaExceeded)
	}
	return true
}
