// SPDX-License-Identifier: Apache-2.0

package armsim

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// Keys of sim.Instance.Properties the front writes and reads back.
const (
	propName          = "name"
	propResourceGroup = "resourceGroup"
	propSubscription  = "subscription"
	propLocation      = "location"
	propZone          = "zone"
	propModel         = "model"
	// propCustomData is osProfile.customData decoded. It is stored for the
	// VM (tests read it here) and never rendered: ARM does not return it.
	propCustomData = "customData"
	// propVMID is the vmId of a VM created again after its creation
	// failed, which is the first instance's; a VM without it has its
	// instance's id.
	propVMID = "vmId"
)

// putVM creates a VM or, as ARM has no separate create, updates the one
// of that name.
func (s *Server) putVM(w http.ResponseWriter, r *http.Request, ref vmRef) {
	body, readErr := readBody(r)
	var vm armcompute.VirtualMachine
	var decodeErr *armError
	if readErr == nil {
		vm, decodeErr = decodeVM(body)
	}
	call := s.callFor(&vm)
	out, ok := s.admit(w, r, call)
	if !ok {
		return
	}
	c := s.putContext(ref, &vm, call)
	if out.Err != nil {
		// ARM accepts a create and reports a stock-out on its operation.
		if out.Err.Kind != sim.KindCapacity {
			s.writeError(w, s.fromWorld(out.Err, c))
			return
		}
		out.FailLater = out.Err
	}
	for _, e := range []*armError{readErr, decodeErr} {
		if e != nil {
			s.writeError(w, *e)
			return
		}
	}
	// What the VM references — its resource group, network interfaces,
	// subnets, proximity placement group — must not be deleted before the
	// VM is there to use it.
	s.res.mu.RLock()
	defer s.res.mu.RUnlock()
	g, e := s.requireGroup(groupRef{ref.Subscription, ref.ResourceGroup})
	if e != nil {
		s.writeError(w, *e)
		return
	}
	if g.Change.running(s.world.Now()) {
		s.writeError(w, errGroupDeleting(g.Name))
		return
	}
	s.ppgs.mu.RLock()
	defer s.ppgs.mu.RUnlock()
	spec, e := s.parseSpec(&vm, ref)
	if e != nil {
		s.writeError(w, *e)
		return
	}
	existing, exists := s.world.ByName(cloud, ref.scope(), ref.key())
	// VMs here carry no etag, so If-Match can only be * on an existing VM.
	if m := r.Header.Get("If-Match"); m != "" && (m != "*" || !exists) {
		s.writeError(w, errPrecondition())
		return
	}
	if exists {
		s.updateVM(w, r, ref, existing, spec, out.FailLater)
		return
	}
	s.createVM(w, r, ref, spec, out.FailLater)
}

func (s *Server) createVM(w http.ResponseWriter, r *http.Request, ref vmRef, spec vmSpec, failLater *sim.Error) {
	c := callContext{vm: ref, location: spec.region.Name, zone: spec.zone, spot: spec.market() == catalog.Spot, opType: "Write"}
	if spec.maxPrice > 0 {
		if price, ok := s.spotPrice(spec.region.Name, spec.worldZone, spec.size); ok && spec.maxPrice < price {
			s.writeError(w, armError{Status: http.StatusConflict, Code: "OperationNotAllowed",
				Message: fmt.Sprintf("Unable to perform operation 'Create VM' since the provided MaxPrice '%s USD' is lower than the current spot price '%s USD' for Azure Spot VM size '%s' in region '%s'. Please refer to https://aka.ms/AboutSpotVMs for more details on Azure Spot VMs.",
					formatPrice(spec.maxPrice), formatPrice(price), spec.size, spec.region.Name)})
			return
		}
	}
	model, err := json.Marshal(spec.model)
	if err != nil {
		s.writeError(w, armError{Status: http.StatusInternalServerError, Code: "InternalServerError", Message: err.Error()})
		return
	}
	props := map[string]string{
		propName:          ref.Name,
		propResourceGroup: ref.ResourceGroup,
		propSubscription:  ref.Subscription,
		propLocation:      spec.region.Name,
		propZone:          spec.zone,
		propModel:         string(model),
	}
	if spec.customData != "" {
		props[propCustomData] = spec.customData
	}
	status := http.StatusCreated
	if spec.retryOf != "" {
		props[propVMID] = spec.retryOf
		status = http.StatusOK
	}
	if spec.ppg != nil {
		props[propPPG] = spec.ppg.ref.key()
	}
	spec.identity.store(props)
	spec.network.store(props)
	// A regional VM goes to the first zone with room, as Azure places it
	// wherever the region has capacity; only when none has does the
	// operation fail.
	zones := []string{spec.worldZone}
	if spec.zone == "" {
		zones = spec.region.Zones
	}
	for i, zone := range zones {
		last := i == len(zones)-1
		if typ, ok := s.world.Type(cloud, zone, spec.size, spec.market()); ok {
			c.typ = typ
		}
		res, err := s.world.Launch(sim.LaunchSpec{
			Cloud: cloud, Zone: zone, InstanceType: spec.size, Market: spec.market(),
			Name: ref.key(), Scope: ref.scope(), Tags: spec.tags, Properties: props,
			Operation: sim.OperationPut, AsyncCapacity: last, FailLater: failLater,
		})
		var se *sim.Error
		switch {
		case err == nil:
			vm := s.render(res.Instance, renderOptions{provisioning: "Creating"})
			s.writeAsync(w, r, status, vm, res.Operation, false)
			return
		case !errors.As(err, &se):
			s.writeError(w, armError{Status: http.StatusInternalServerError, Code: "InternalServerError", Message: err.Error()})
			return
		case !last && (se.Kind == sim.KindCapacity || se.Kind == sim.KindUnsupported):
			continue
		case se.Kind == sim.KindAlreadyExists && res.Instance != nil:
			// Another PUT of the same name won the race: this one is an
			// update of that VM.
			s.updateVM(w, r, ref, res.Instance, spec, failLater)
			return
		default:
			s.writeError(w, s.fromWorld(se, c))
			return
		}
	}
}

// updateVM applies a PUT to an existing VM. Only tags may change: the
// emulator cannot move or resize a VM (Azure resizes on a vmSize change;
// here that is refused as a property change), nor change its identity
// (Azure can; here too it is refused). Custom data is fixed at creation,
// in Azure as here; a PUT that leaves it or the identity out keeps them.
// A PUT of a VM whose creation failed creates it again.
func (s *Server) updateVM(w http.ResponseWriter, r *http.Request, ref vmRef, inst *sim.Instance, spec vmSpec, failLater *sim.Error) {
	if r.Header.Get("If-None-Match") == "*" {
		s.writeError(w, errPrecondition())
		return
	}
	if s.markedForDeletion(inst) {
		s.writeError(w, armError{Status: http.StatusConflict, Code: "OperationNotAllowed",
			Message: fmt.Sprintf("Operation 'PUT' is not allowed on VM '%s' since the VM is marked for deletion. You can only retry the Delete operation (or wait for an ongoing one to complete).", ref.Name)})
		return
	}
	old := s.describe(inst)
	switch {
	case old.location != spec.region.Name:
		s.writeError(w, armError{Status: http.StatusConflict, Code: "InvalidResourceLocation",
			Message: fmt.Sprintf("The resource '%s' already exists in location '%s' in resource group '%s'. A resource with the same name cannot be created in location '%s'. Please select a new resource name.",
				old.name, old.location, ref.ResourceGroup, spec.region.Name)})
		return
	case !strings.EqualFold(inst.InstanceType, spec.size):
		s.writeError(w, errPropertyChange("hardwareProfile.vmSize"))
		return
	case old.zone != spec.zone:
		s.writeError(w, errPropertyChange("zones"))
		return
	case old.priority() != spec.priority:
		s.writeError(w, errPropertyChange("priority"))
		return
	case old.eviction() != spec.eviction:
		s.writeError(w, errPropertyChange("evictionPolicy"))
		return
	case spec.customData != "" && spec.customData != inst.Properties[propCustomData]:
		s.writeError(w, errPropertyChange("customData"))
		return
	case spec.identity.typ != "" && !spec.identity.equal(storedIdentity(inst.Properties)):
		s.writeError(w, errPropertyChange("identity"))
		return
	case spec.ppgKey() != inst.Properties[propPPG]:
		// Azure moves a VM between groups only while it is deallocated,
		// which the emulator does not model.
		s.writeError(w, errPropertyChange("proximityPlacementGroup"))
		return
	}
	if inst.State == sim.StateFailed {
		s.retryCreate(w, r, ref, inst, spec, failLater)
		return
	}
	if err := s.world.ReplaceTags(inst.ID, spec.tags); err != nil {
		var se *sim.Error
		if errors.As(err, &se) {
			s.writeError(w, s.fromWorld(se, callContext{vm: ref}))
			return
		}
	}
	updated, ok := s.world.Get(inst.ID)
	if !ok {
		s.writeError(w, s.fromWorld(&sim.Error{Kind: sim.KindNotFound}, callContext{vm: ref}))
		return
	}
	// An update made while the VM is still being created finishes with
	// the creation, so its client polls the create operation.
	var op *sim.Operation
	if o, ok := s.createOp(updated); ok && !o.Done {
		op = o
	}
	s.writeAsync(w, r, http.StatusOK, s.render(updated, renderOptions{}), op, false)
}

// retryCreate answers a PUT of a VM whose creation failed as Compute
// does: the VM holds nothing, so the PUT starts its creation over, with a
// new operation, which fails again only if its cause is still there. The
// VM stays the resource it was, so it keeps its vmId.
func (s *Server) retryCreate(w http.ResponseWriter, r *http.Request, ref vmRef, failed *sim.Instance, spec vmSpec, failLater *sim.Error) {
	spec.retryOf = cmp.Or(failed.Properties[propVMID], failed.ID)
	s.world.Remove(failed.ID)
	s.createVM(w, r, ref, spec, failLater)
}

func (s *Server) getVM(w http.ResponseWriter, r *http.Request, ref vmRef) {
	inst, _ := s.world.ByName(cloud, ref.scope(), ref.key())
	_, c, ok := s.admitCall(w, r, ref, OpGet, inst, "Read")
	if !ok || !s.groupExists(w, ref) {
		return
	}
	// The call may have changed the world (a preempt fault).
	inst, found := s.world.ByName(cloud, ref.scope(), ref.key())
	var view bool
	switch expand := r.URL.Query().Get("$expand"); {
	case expand == "" || strings.EqualFold(expand, string(armcompute.InstanceViewTypesUserData)):
	case strings.EqualFold(expand, string(armcompute.InstanceViewTypesInstanceView)):
		view = true
	default:
		s.writeError(w, errInvalid("$expand", "The value '%s' of parameter '$expand' is not valid. Allowed values are 'instanceView' and 'userData'.", expand))
		return
	}
	if !found {
		s.writeError(w, s.fromWorld(&sim.Error{Kind: sim.KindNotFound}, c))
		return
	}
	writeJSON(w, http.StatusOK, s.render(inst, renderOptions{instanceView: view}))
}

func (s *Server) instanceView(w http.ResponseWriter, r *http.Request, ref vmRef) {
	inst, _ := s.world.ByName(cloud, ref.scope(), ref.key())
	_, c, ok := s.admitCall(w, r, ref, OpInstanceView, inst, "Read")
	if !ok || !s.groupExists(w, ref) {
		return
	}
	// The call may have changed the world (a preempt fault).
	inst, found := s.world.ByName(cloud, ref.scope(), ref.key())
	if !found {
		s.writeError(w, s.fromWorld(&sim.Error{Kind: sim.KindNotFound}, c))
		return
	}
	writeJSON(w, http.StatusOK, s.render(inst, renderOptions{instanceView: true}).Properties.InstanceView)
}

// deleteVM starts deleting a VM. Deleting a VM that is not there is a
// success with nothing to wait for, so a retried delete never fails.
func (s *Server) deleteVM(w http.ResponseWriter, r *http.Request, ref vmRef) {
	inst, _ := s.world.ByName(cloud, ref.scope(), ref.key())
	out, _, ok := s.admitCall(w, r, ref, OpDelete, inst, "Delete")
	if !ok || !s.groupExists(w, ref) {
		return
	}
	inst, found := s.world.ByName(cloud, ref.scope(), ref.key())
	if !found {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	// A repeated DELETE during a deletion starts another delete operation
	// of the same VM; whichever finishes first removes it.
	op, err := s.world.StartDelete(inst.ID, "", out.FailLater)
	if err != nil {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	s.writeAsync(w, r, http.StatusAccepted, nil, op, true)
}

// groupExists answers ResourceGroupNotFound, and reports false, when the
// VM's group does not exist: ARM answers so before Compute sees the call.
func (s *Server) groupExists(w http.ResponseWriter, ref vmRef) bool {
	s.res.mu.RLock()
	_, e := s.requireGroup(groupRef{ref.Subscription, ref.ResourceGroup})
	s.res.mu.RUnlock()
	if e != nil {
		s.writeError(w, *e)
		return false
	}
	return true
}

func errGroupDeleting(name string) armError {
	return armError{Status: http.StatusConflict, Code: "ResourceGroupBeingDeleted",
		Message: fmt.Sprintf("The resource group '%s' is in deprovisioning state and cannot perform this operation.", name)}
}

// admitCall runs the world's faults for a call about one VM, which may
// not exist, and answers an injected error; ok is false when the request
// is finished.
func (s *Server) admitCall(w http.ResponseWriter, r *http.Request, ref vmRef, op string, inst *sim.Instance, opType string) (sim.Outcome, callContext, bool) {
	call := sim.Call{Op: op}
	c := callContext{vm: ref, opType: opType}
	if _, ok := powerActionNamed(op); ok {
		// A denial names the action's own RBAC action.
		c.action = resourceType + "/" + op + "/action"
	}
	if inst != nil {
		d := s.describe(inst)
		call.Region, call.Zone, call.InstanceType = inst.Region, inst.Zone, inst.InstanceType
		c.location, c.zone = d.location, d.zone
	}
	out, ok := s.admit(w, r, call)
	if !ok {
		return out, c, false
	}
	if out.Err != nil {
		s.writeError(w, s.fromWorld(out.Err, c))
		return out, c, false
	}
	return out, c, true
}

// writeAsync answers a request that started or joined a long-running
// operation with ARM's polling headers: Azure-AsyncOperation, which the
// SDKs prefer, Location for deletes, and Retry-After only while the
// operation runs, for the time it has left. Clients poll once at once and
// then wait what the last answer's Retry-After says (azure-core for Python
// 30 s without one, azcore the caller's frequency), so a finished
// operation costs them no wait and a running one is polled when due.
func (s *Server) writeAsync(w http.ResponseWriter, r *http.Request, status int, vm *armcompute.VirtualMachine, op *sim.Operation, location bool) {
	if op != nil {
		u := s.operationURL(r, op)
		w.Header().Set("Azure-AsyncOperation", u)
		if location {
			w.Header().Set("Location", u+"&monitor=true")
		}
		if !op.Done {
			w.Header().Set("Retry-After", strconv.Itoa(s.retryAfter(op)))
		}
	}
	if vm == nil {
		w.WriteHeader(status)
		return
	}
	writeJSON(w, status, vm)
}

// operationURL is where an operation is polled: under the subscription
// and location of its VM, as Compute places it.
func (s *Server) operationURL(r *http.Request, op *sim.Operation) string {
	sub := strings.TrimPrefix(op.Scope, "/subscriptions/")
	sub, _, _ = strings.Cut(sub, "/")
	location := "unknown"
	if region, ok := s.world.ZoneRegion(cloud, op.Zone); ok {
		location = region
	}
	if inst, ok := s.world.Get(op.InstanceID); ok {
		d := s.describe(inst)
		sub, location = d.subscription, d.location
	}
	return fmt.Sprintf("%s/subscriptions/%s/providers/Microsoft.Compute/locations/%s/operations/%s?api-version=%s",
		baseURL(r), sub, location, op.ID, requestVersion(r, computeOpType))
}

// retryAfter is the whole seconds until an operation is due, at least one.
func (s *Server) retryAfter(op *sim.Operation) int {
	left := op.DoneAt.Sub(s.world.Now()).Seconds()
	return max(1, int(math.Ceil(left)))
}

func (s *Server) createOp(inst *sim.Instance) (*sim.Operation, bool) {
	if inst.CreateOp == "" {
		return nil, false
	}
	return s.world.Operation(inst.CreateOp)
}

// markedForDeletion is a VM being deleted, by its owner or by a Spot
// eviction with the Delete policy.
func (s *Server) markedForDeletion(inst *sim.Instance) bool {
	switch inst.State {
	case sim.StateShuttingDown:
		return true
	case sim.StateTerminated:
		return s.describe(inst).eviction() != armcompute.VirtualMachineEvictionPolicyTypesDeallocate
	}
	return false
}

func errPrecondition() armError {
	return armError{Status: http.StatusPreconditionFailed, Code: "PreconditionFailed",
		Message: "The condition specified using HTTP conditional header(s) is not met."}
}

func formatPrice(p float64) string { return strconv.FormatFloat(p, 'f', -1, 64) }
