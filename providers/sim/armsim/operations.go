// SPDX-License-Identifier: Apache-2.0

package armsim

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// operationStatus is Compute's body for GET …/operations/{id}, the
// Azure-AsyncOperation resource the SDK polls.
type operationStatus struct {
	Name      string       `json:"name"`
	Status    string       `json:"status"`
	StartTime string       `json:"startTime"`
	EndTime   string       `json:"endTime,omitempty"`
	Error     *errorDetail `json:"error,omitempty"`
}

// operation answers a poll. With monitor=true (the Location URL of a
// delete) it follows the Location pattern instead: 202 while running, 200
// when done, the error's own status when failed.
func (s *Server) operation(w http.ResponseWriter, r *http.Request, sub, location, id string) {
	out, ok := s.admit(w, r, sim.Call{Op: OpOperation, Region: normalizeLocation(location)})
	if !ok {
		return
	}
	if out.Err != nil {
		s.writeError(w, s.fromWorld(out.Err, callContext{vm: vmRef{Subscription: sub}, location: location, opType: "Read",
			action: "Microsoft.Compute/locations/operations/read"}))
		return
	}
	op, found := s.world.Operation(id)
	if !found || op.Cloud != cloud || !strings.HasPrefix(op.Scope, strings.ToLower("/subscriptions/"+sub+"/")) {
		if s.computeOperation(w, r, sub, id) {
			return
		}
		s.writeError(w, armError{Status: http.StatusNotFound, Code: "NotFound",
			Message: fmt.Sprintf("The operation '%s' was not found.", id)})
		return
	}
	var failure *armError
	if op.Done && op.Err != nil {
		inst, _ := s.world.Get(op.InstanceID)
		e := s.operationError(op.Err, inst)
		if op.Kind == sim.OperationDelete && op.Err.Code == "" {
			e = armError{Status: http.StatusInternalServerError, Code: "InternalExecutionError", Message: serverErrorMessage("InternalExecutionError")}
		}
		failure = &e
	}
	if r.URL.Query().Get("monitor") == "true" {
		switch {
		case !op.Done:
			w.Header().Set("Location", baseURL(r)+r.URL.RequestURI())
			w.Header().Set("Retry-After", strconv.Itoa(s.retryAfter(op)))
			w.WriteHeader(http.StatusAccepted)
		case failure != nil:
			s.writeError(w, *failure)
		default:
			w.WriteHeader(http.StatusOK)
		}
		return
	}
	status := operationStatus{Name: op.ID, Status: "InProgress", StartTime: formatTime(op.StartedAt)}
	switch {
	case !op.Done:
		w.Header().Set("Retry-After", strconv.Itoa(s.retryAfter(op)))
	case failure != nil:
		status.Status, status.EndTime = "Failed", formatTime(op.DoneAt)
		status.Error = &errorDetail{Code: failure.Code, Message: failure.Message}
	default:
		status.Status, status.EndTime = "Succeeded", formatTime(op.DoneAt)
	}
	writeJSON(w, http.StatusOK, status)
}

// operationError renders the error an operation ended with. A stock-out
// is ZonalAllocationFailed when the VM was pinned to a zone, else
// AllocationFailed. inst may be nil when the VM is already gone.
func (s *Server) operationError(e *sim.Error, inst *sim.Instance) armError {
	c := callContext{opType: "Write"}
	if inst != nil {
		d := s.describe(inst)
		c.vm = vmRef{d.subscription, d.resourceGroup, d.name}
		c.location, c.zone = d.location, d.zone
		c.spot = inst.Market == catalog.Spot
		if typ, ok := s.world.Type(cloud, inst.Zone, inst.InstanceType, inst.Market); ok {
			c.typ = typ
		}
	}
	return s.fromWorld(e, c)
}

// formatTime writes times as ARM does, with seven fractional digits.
func formatTime(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.0000000+00:00")
}
