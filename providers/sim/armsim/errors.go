// SPDX-License-Identifier: Apache-2.0

package armsim

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// armError is an ARM error response: the status, and the body
// {"error":{"code","message","target"}} whose code is repeated in the
// x-ms-error-code header, where azcore looks first.
type armError struct {
	Status  int
	Code    string
	Message string
	Target  string
	// RetryAfter, in seconds, is sent with throttling.
	RetryAfter int
	// RetryAfterMillis, when set, says the same to the millisecond in
	// retry-after-ms, which azcore prefers to Retry-After: a bucket that
	// refills many tokens a second has one again well within the second
	// Retry-After rounds up to.
	RetryAfterMillis int
}

type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Target  string `json:"target,omitempty"`
}

func (s *Server) writeError(w http.ResponseWriter, e armError) {
	h := w.Header()
	h.Set("x-ms-error-code", e.Code)
	if e.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	if e.RetryAfterMillis > 0 {
		h.Set("retry-after-ms", strconv.Itoa(e.RetryAfterMillis))
	}
	writeJSON(w, e.Status, errorBody{errorDetail{Code: e.Code, Message: e.Message, Target: e.Target}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		body = []byte(`{"error":{"code":"InternalServerError","message":"Encountered internal server error."}}`)
		w.Header().Set("x-ms-error-code", "InternalServerError")
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	w.Write(body)
}

// kindErrors is how ARM answers each kind of world failure when a fault
// file names no exact code. Capacity is normally reported on the
// operation (see operationError); the entry serves calls that have none.
var kindErrors = map[sim.Kind]struct {
	status int
	code   string
}{
	sim.KindCapacity:            {http.StatusConflict, "AllocationFailed"},
	sim.KindQuota:               {http.StatusConflict, "OperationNotAllowed"},
	sim.KindThrottled:           {http.StatusTooManyRequests, "TooManyRequests"},
	sim.KindServerError:         {http.StatusInternalServerError, "InternalServerError"},
	sim.KindNotFound:            {http.StatusNotFound, "ResourceNotFound"},
	sim.KindAlreadyExists:       {http.StatusConflict, "Conflict"},
	sim.KindUnknownZone:         {http.StatusBadRequest, "InvalidParameter"},
	sim.KindUnknownType:         {http.StatusBadRequest, "InvalidParameter"},
	sim.KindUnsupported:         {http.StatusConflict, "SkuNotAvailable"},
	sim.KindIdempotencyMismatch: {http.StatusConflict, "Conflict"},
	sim.KindInvalid:             {http.StatusBadRequest, "InvalidParameter"},
}

// codeStatus is the status ARM sends with codes a fault file may name
// whose status differs from their kind's.
var codeStatus = map[string]int{
	"TooManyRequests":                  http.StatusTooManyRequests,
	"InternalServerError":              http.StatusInternalServerError,
	"InternalExecutionError":           http.StatusInternalServerError,
	"BadGateway":                       http.StatusBadGateway,
	"ServiceUnavailable":               http.StatusServiceUnavailable,
	"GatewayTimeout":                   http.StatusGatewayTimeout,
	"AllocationFailed":                 http.StatusConflict,
	"ZonalAllocationFailed":            http.StatusConflict,
	"OverconstrainedAllocationRequest": http.StatusConflict,
	"SkuNotAvailable":                  http.StatusConflict,
	"OperationNotAllowed":              http.StatusConflict,
	"ResourceQuotaExceeded":            http.StatusConflict,
	"ResourceNotFound":                 http.StatusNotFound,
	"AuthorizationFailed":              http.StatusForbidden,
	"LinkedAuthorizationFailed":        http.StatusForbidden,
	"AuthenticationFailed":             http.StatusUnauthorized,
	"InvalidAuthenticationToken":       http.StatusUnauthorized,
}

// callContext is what a message about a failed call can mention.
type callContext struct {
	vm       vmRef
	location string
	zone     string // the ARM zone, "" for a regional VM
	typ      sim.InstanceType
	spot     bool
	opType   string // Read, Write or Delete, for throttling
	// action and scope are what a denial names: the RBAC action the call
	// needs and what it is on. Empty, they are the VM's.
	action, scope string
}

// fromWorld renders a world failure as ARM does.
func (s *Server) fromWorld(e *sim.Error, c callContext) armError {
	k, ok := kindErrors[e.Kind]
	if !ok {
		k = kindErrors[sim.KindServerError]
	}
	out := armError{Status: k.status, Code: k.code, Message: e.Message}
	if e.Code != "" {
		out.Code = e.Code
		if st, ok := codeStatus[e.Code]; ok {
			out.Status = st
		}
	}
	switch e.Kind {
	case sim.KindCapacity:
		if e.Code == "" && c.zone != "" {
			out.Code = "ZonalAllocationFailed"
		}
		out.Message = allocationMessage(out.Code)
	case sim.KindQuota:
		out.Message = s.quotaMessage(e, c)
	case sim.KindThrottled:
		if e.RetryAfter > 0 {
			// A rate limit refused the call: the subscription's bucket is
			// empty, and the wait until its next token is known.
			out.RetryAfter = int(math.Ceil(e.RetryAfter.Seconds()))
			out.RetryAfterMillis = int(math.Ceil(float64(e.RetryAfter) / float64(time.Millisecond)))
			out.Message = bucketMessage(c, out.RetryAfter)
			break
		}
		out.RetryAfter = int(math.Ceil(s.opts.ThrottleRetryAfter.Seconds()))
		if s.opts.ThrottleRetryAfter%time.Second != 0 {
			out.RetryAfterMillis = int(math.Ceil(float64(s.opts.ThrottleRetryAfter) / float64(time.Millisecond)))
		}
		out.Message = fmt.Sprintf("The request is being throttled as the limit has been reached for operation type - %s_ObservationWindow_00:01:00. For more information, refer to - https://aka.ms/ARMThrottling", cmp.Or(c.opType, "Read"))
	case sim.KindServerError:
		out.Message = serverErrorMessage(out.Code)
	case sim.KindNotFound:
		out.Message = notFoundMessage(c.vm)
	case sim.KindUnsupported:
		out.Message = skuNotAvailableMessage(c)
	}
	// A fault file refuses a call by naming ARM's code, whatever its kind.
	switch out.Code {
	case "AuthorizationFailed":
		out.Message = authorizationMessage(c)
	case "InvalidAuthenticationToken":
		out.Message = "The access token is invalid."
	case "AuthenticationFailed":
		out.Message = "Authentication failed. The 'Authorization' header is missing."
	}
	return out
}

// emulatorPrincipal is the object id denials name: the emulator takes any
// token and knows no identity.
const emulatorPrincipal = "00000000-0000-0000-0000-000000000000"

func authorizationMessage(c callContext) string {
	action, scope := c.action, c.scope
	if action == "" {
		action = resourceType + "/" + strings.ToLower(cmp.Or(c.opType, "Read"))
	}
	switch {
	case scope != "":
	case c.vm.Name != "":
		scope = c.vm.id()
	case c.vm.ResourceGroup != "":
		scope = "/subscriptions/" + c.vm.Subscription + "/resourceGroups/" + c.vm.ResourceGroup
	default:
		scope = "/subscriptions/" + c.vm.Subscription
	}
	return fmt.Sprintf("The client '%s' with object id '%s' does not have authorization to perform action '%s' over scope '%s' or the scope is invalid. If access was recently granted, please refresh your credentials.",
		emulatorPrincipal, emulatorPrincipal, action, scope)
}

// bucketMessage words a refusal of the subscription's token bucket as ARM
// does, naming the request class the call drew on.
func bucketMessage(c callContext, seconds int) string {
	class := sim.ClassWrite
	if cmp.Or(c.opType, "Read") == "Read" {
		class = sim.ClassRead
	}
	return fmt.Sprintf("Number of '%s' requests for subscription '%s' actor '%s' exceeded. Please try again after '%d' seconds after additional tokens are available. Refer to https://aka.ms/arm-throttling for additional information.",
		class, c.vm.Subscription, emulatorPrincipal, seconds)
}

func allocationMessage(code string) string {
	switch code {
	case "ZonalAllocationFailed":
		return "Allocation failed. We do not have sufficient capacity for the requested VM size in this zone. Read more about improving likelihood of allocation success at http://aka.ms/allocation-guidance"
	case "OverconstrainedAllocationRequest":
		return "Allocation failed. VM(s) with the following constraints cannot be allocated, because the condition is too restrictive. Please remove some constraints and try again."
	default:
		return "Allocation failed. We do not have sufficient capacity for the requested VM size in this region. Read more about improving likelihood of allocation success at http://aka.ms/allocation-guidance"
	}
}

func serverErrorMessage(code string) string {
	switch code {
	case "ServiceUnavailable":
		return "The service is currently unavailable. Please try again later."
	case "InternalExecutionError":
		return "An internal execution error occurred. Please retry later."
	default:
		return "Encountered internal server error. Please try again later."
	}
}

func notFoundMessage(vm vmRef) string {
	return fmt.Sprintf("The Resource '%s/%s' under resource group '%s' was not found. For more details please go to https://aka.ms/ARMResourceNotFoundFix", resourceType, vm.Name, vm.ResourceGroup)
}

func skuNotAvailableMessage(c callContext) string {
	return fmt.Sprintf("The requested size for resource '%s' is currently not available in location '%s' zones '%s' for subscription '%s'. Please try another size or deploy to a different location or zones. See https://aka.ms/azureskunotavailable for details.",
		c.vm.id(), c.location, c.zone, c.vm.Subscription)
}

// quotaMessage words an exceeded quota as ARM does. A fault's error names
// no quota; it reads as the first one the size counts against.
func (s *Server) quotaMessage(e *sim.Error, c callContext) string {
	name, limit, used, need := e.Quota, e.Limit, e.Used, e.Requested
	if name == "" {
		market := catalog.OnDemand
		if c.spot {
			market = catalog.Spot
		}
		if q, ok := s.world.QuotaFor(catalog.Azure, c.location, c.typ.Name, market); ok {
			name, limit, used = q.Name, q.Limit, q.Used
		}
		need = c.typ.VCPUs
	}
	quota := name + " Cores"
	switch name {
	case catalog.AzureCores:
		quota = "Total Regional Cores"
	case catalog.AzureLowPriorityCores:
		quota = "LowPriorityCores"
	}
	return fmt.Sprintf("Operation could not be completed as it results in exceeding approved %s quota. Additional details - Deployment Model: Resource Manager, Location: %s, Current Limit: %d, Current Usage: %d, Additional Required: %d, (Minimum) New Limit Required: %d. Submit a request for Quota increase at https://aka.ms/ProdportalCRP/#blade/Microsoft_Azure_Capacity/UsageAndQuota.ReactView by specifying parameters listed in the ‘Details’ section for deployment to succeed. Please read more about quota limits at https://docs.microsoft.com/en-us/azure/azure-supportability/per-vm-quota-requests",
		quota, c.location, limit, used, need, used+need)
}

func errNoRoute(path string) armError {
	return armError{Status: http.StatusNotFound, Code: "NotFound",
		Message: fmt.Sprintf("The requested resource '%s' was not found.", path)}
}

func errNamespace(ns string) armError {
	return armError{Status: http.StatusNotFound, Code: "InvalidResourceNamespace",
		Message: fmt.Sprintf("The resource namespace '%s' is invalid.", ns)}
}

// errResourceType is ARM's answer for a path naming a type the namespace
// does not have (a path's segments after …/providers/{namespace}/).
func errResourceType(namespace string, rest []string) armError {
	typ := ""
	if len(rest) > 0 {
		typ = rest[0]
	}
	return armError{Status: http.StatusNotFound, Code: "InvalidResourceType",
		Message: fmt.Sprintf("The resource type '%s' could not be found in the namespace '%s'.", typ, namespace)}
}

func errMethod(method string) armError {
	return armError{Status: http.StatusMethodNotAllowed, Code: "MethodNotAllowed",
		Message: fmt.Sprintf("The requested resource does not support http method '%s'.", method)}
}

func errInvalid(target, format string, args ...any) armError {
	return armError{Status: http.StatusBadRequest, Code: "InvalidParameter", Target: target, Message: fmt.Sprintf(format, args...)}
}

func errMissing(target string) armError {
	return errInvalid(target, "Required parameter '%s' is missing (null).", target)
}

func errPropertyChange(target string) armError {
	return armError{Status: http.StatusConflict, Code: "PropertyChangeNotAllowed", Target: target,
		Message: fmt.Sprintf("Changing property '%s' is not allowed.", target)}
}
