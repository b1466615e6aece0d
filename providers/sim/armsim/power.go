// SPDX-License-Identifier: Apache-2.0

package armsim

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// A VM's power actions: POST …/virtualMachines/{vm}/deallocate, powerOff,
// start and restart, each a long-running operation Compute answers with
// 202 and polls like a delete. While one runs the instance view shows its
// transition (deallocating, stopping, starting), then where it ends
// (deallocated, stopped, running).
//
// Deallocate stops the instance in the world, which frees its capacity
// and its vCPU quota, as a deallocated VM counts against neither in
// Azure; start from deallocated is a placement like a create, failing its
// operation with AllocationFailed (ZonalAllocationFailed in a zone) when
// the zone is full, and refused at once with OperationNotAllowed when a
// quota is. A powered-off VM stays allocated in Azure, and in the world
// it keeps running: the power state the instance view shows is the
// front's, kept in the world's store beside the VM. Nothing the emulator
// reports bills compute, so there is no cost to stop.

// Ops of the power actions, for faults and World.Calls.
const (
	OpDeallocate = "deallocate"
	OpPowerOff   = "powerOff"
	OpStart      = "start"
	OpRestart    = "restart"
)

const kindPower = "vmPower"

// powerAction is one action's power states: while it runs and once done.
type powerAction struct {
	op            string
	during, after string
}

var powerActions = []powerAction{
	{OpDeallocate, "deallocating", "deallocated"},
	{OpPowerOff, "stopping", "stopped"},
	{OpStart, "starting", "running"},
	{OpRestart, "starting", "running"},
}

// powerActionNamed is the action a path segment names, in any case.
func powerActionNamed(segment string) (powerAction, bool) {
	for _, a := range powerActions {
		if strings.EqualFold(a.op, segment) {
			return a, true
		}
	}
	return powerAction{}, false
}

func isPowerAction(segment string) bool {
	_, ok := powerActionNamed(segment)
	return ok
}

// powerChange is the last power action on a VM, as stored. Instance ties
// it to one VM, so that a VM created again under the name starts running.
type powerChange struct {
	Instance string    `json:"instance"`
	Action   string    `json:"action"`
	Op       string    `json:"op"`
	Started  time.Time `json:"started"`
	Until    time.Time `json:"until"`
}

// power is the VM's power state at now after the change; false before
// the change has started.
func (c powerChange) power(now time.Time) (string, bool) {
	a, _ := powerActionNamed(c.Action)
	switch {
	case now.Before(c.Started):
		return "", false
	case now.Before(c.Until):
		return a.during, true
	}
	return a.after, true
}

// powerOf returns the last power action on a VM, if any.
func (s *Server) powerOf(inst *sim.Instance) (powerChange, bool) {
	var c powerChange
	if !s.load(kindPower, strings.ToLower(s.describe(inst).id()), &c) || c.Instance != inst.ID {
		return powerChange{}, false
	}
	return c, true
}

// powerVM answers a power action on a VM.
func (s *Server) powerVM(w http.ResponseWriter, r *http.Request, ref vmRef, a powerAction) {
	inst, _ := s.world.ByName(cloud, ref.scope(), ref.key())
	_, c, ok := s.admitCall(w, r, ref, a.op, inst, "Write")
	if !ok || !s.groupExists(w, ref) {
		return
	}
	s.lockToWrite()
	defer s.res.mu.Unlock()
	inst, found := s.world.ByName(cloud, ref.scope(), ref.key())
	if !found {
		s.writeError(w, s.fromWorld(&sim.Error{Kind: sim.KindNotFound}, c))
		return
	}
	if e := s.powerRefusal(inst, ref, a); e != nil {
		s.writeError(w, *e)
		return
	}
	failure, e := s.allocation(inst, ref, a, c)
	if e != nil {
		s.writeError(w, *e)
		return
	}
	d := s.describe(inst)
	op := asyncOp{Namespace: vmType.namespace, Subscription: d.subscription, Location: d.location, Target: strings.ToLower(d.id())}
	// An action asked for while the VM is still being created runs after
	// the creation, as Compute runs one operation on a VM at a time.
	if create, ok := s.createOp(inst); ok && !create.Done {
		op = s.startOperationAfter(op, create.DoneAt)
	} else {
		op = s.startOperation(op)
	}
	if failure != nil {
		// The VM stays deallocated; its operation ends in the failure.
		op.Failure = failure
		s.save(kindOperation, op.ID, op.Location, op)
	} else {
		s.save(kindPower, op.Target, d.location, powerChange{Instance: inst.ID, Action: a.op, Op: op.ID, Started: op.Started, Until: op.Until})
	}
	s.writeComputeAsync(w, r, op)
	w.WriteHeader(http.StatusAccepted)
}

// powerRefusal is Compute's refusal of an action on a VM in the state it
// is in, nil when it may go on.
func (s *Server) powerRefusal(inst *sim.Instance, ref vmRef, a powerAction) *armError {
	if s.markedForDeletion(inst) {
		return &armError{Status: http.StatusConflict, Code: "OperationNotAllowed",
			Message: fmt.Sprintf("Operation '%s' is not allowed on VM '%s' since the VM is marked for deletion. You can only retry the Delete operation (or wait for an ongoing one to complete).", a.op, ref.Name)}
	}
	now := s.world.Now()
	var power string
	if c, ok := s.powerOf(inst); ok {
		power, _ = c.power(now)
	}
	switch {
	case a.op == OpDeallocate:
		return nil
	case (a.op == OpStart || a.op == OpRestart) && inst.State == sim.StateStopping:
		return &armError{Status: http.StatusConflict, Code: "OperationNotAllowed",
			Message: fmt.Sprintf("Operation '%s' is not allowed on VM '%s' since the VM is being deallocated. Retry the operation once the deallocation has completed.", a.op, ref.Name)}
	case a.op == OpRestart && inst.State == sim.StateStopped:
		return &armError{Status: http.StatusConflict, Code: "OperationNotAllowed",
			Message: fmt.Sprintf("Operation 'restart' is not allowed on VM '%s' since the VM is deallocated. Start the VM instead.", ref.Name)}
	case a.op == OpPowerOff && (power == "deallocating" || power == "deallocated" || inst.State == sim.StateTerminated):
		return &armError{Status: http.StatusConflict, Code: "OperationNotAllowed",
			Message: fmt.Sprintf("Operation 'powerOff' is not allowed on VM '%s' since the VM is either deallocated or marked to be deallocated.", ref.Name)}
	case inst.State == sim.StateFailed || inst.State == sim.StateTerminated:
		// A VM whose creation failed, or that a Spot eviction
		// deallocated, holds nothing in the world, which cannot give it
		// capacity back: a PUT creates a failed one again.
		return &armError{Status: http.StatusConflict, Code: "OperationNotAllowed",
			Message: fmt.Sprintf("Operation '%s' is not allowed on VM '%s' since the VM holds no allocation; the emulator cannot allocate it again.", a.op, ref.Name)}
	}
	return nil
}

// allocation gives or takes back the world's capacity and quota for an
// action: deallocate stops the instance, start from deallocated starts it
// again. A start that finds its zone full returns the failure its
// operation is to end with; a refusal to answer at once is the error.
func (s *Server) allocation(inst *sim.Instance, ref vmRef, a powerAction, c callContext) (*operationFailure, *armError) {
	var err error
	switch {
	case a.op == OpDeallocate && (inst.State == sim.StatePending || inst.State == sim.StateRunning):
		_, err = s.world.Stop(inst.ID)
	case a.op == OpStart && inst.State == sim.StateStopped:
		_, err = s.world.Start(inst.ID)
	default:
		return nil, nil
	}
	var se *sim.Error
	switch {
	case err == nil:
		return nil, nil
	case !errors.As(err, &se):
		return nil, &armError{Status: http.StatusInternalServerError, Code: "InternalServerError", Message: err.Error()}
	case se.Kind == sim.KindCapacity:
		e := s.operationError(se, inst)
		return &operationFailure{Status: e.Status, Code: e.Code, Message: e.Message}, nil
	case se.Kind == sim.KindIncorrectState:
		return nil, &armError{Status: http.StatusConflict, Code: "OperationNotAllowed",
			Message: fmt.Sprintf("Operation '%s' is not allowed on VM '%s' in its current state.", a.op, ref.Name)}
	}
	d := s.describe(inst)
	c.location, c.zone, c.spot = d.location, d.zone, inst.Market == catalog.Spot
	if typ, ok := s.world.Type(cloud, inst.Zone, inst.InstanceType, inst.Market); ok {
		c.typ = typ
	}
	e := s.fromWorld(se, c)
	return nil, &e
}

// startOperationAfter is startOperation for an operation that waits for
// another to finish at after.
func (s *Server) startOperationAfter(op asyncOp, after time.Time) asyncOp {
	op = s.startOperation(op)
	op.Started, op.Until = after, after.Add(s.world.Latency().Operation)
	s.save(kindOperation, op.ID, op.Location, op)
	return op
}

// writeComputeAsync sets the polling headers Compute answers an action
// with: Azure-AsyncOperation, Location (the same operation with
// monitor=true, as a delete's) and Retry-After while it runs.
func (s *Server) writeComputeAsync(w http.ResponseWriter, r *http.Request, op asyncOp) {
	u := fmt.Sprintf("%s/subscriptions/%s/providers/Microsoft.Compute/locations/%s/operations/%s?api-version=%s",
		baseURL(r), op.Subscription, op.Location, op.ID, requestVersion(r, computeOpType))
	w.Header().Set("Azure-AsyncOperation", u)
	w.Header().Set("Location", u+"&monitor=true")
	if !op.done(s.world.Now()) {
		w.Header().Set("Retry-After", s.retryAfterUntil(op.Until))
	}
}

// computeOperation answers a poll of a power action's operation, found
// among the front's operations when the world has no operation of that
// id; it reports false when there is none.
func (s *Server) computeOperation(w http.ResponseWriter, r *http.Request, sub, id string) bool {
	op, ok := s.findOperation(id)
	if !ok || op.Namespace != vmType.namespace || !strings.EqualFold(op.Subscription, sub) {
		return false
	}
	done := op.done(s.world.Now())
	if r.URL.Query().Get("monitor") == "true" && !(done && op.Failure != nil) {
		if !done {
			s.writeStillRunning(w, r, op)
			return true
		}
		w.WriteHeader(http.StatusOK)
		return true
	}
	if done && op.Failure != nil && r.URL.Query().Get("monitor") == "true" {
		s.writeError(w, armError{Status: op.Failure.Status, Code: op.Failure.Code, Message: op.Failure.Message})
		return true
	}
	status := operationStatus{Name: op.ID, Status: "InProgress", StartTime: formatTime(op.Started)}
	switch {
	case done && op.Failure != nil:
		status.Status, status.EndTime = "Failed", formatTime(op.Until)
		status.Error = &errorDetail{Code: op.Failure.Code, Message: op.Failure.Message}
	case done:
		status.Status, status.EndTime = "Succeeded", formatTime(op.Until)
	default:
		w.Header().Set("Retry-After", s.retryAfterUntil(op.Until))
	}
	writeJSON(w, http.StatusOK, status)
	return true
}
