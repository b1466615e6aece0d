// SPDX-License-Identifier: Apache-2.0

package armsim

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7"

	"github.com/gpufleet/gpufleet/providers/sim"
)

// OpPatch is a VM's PATCH (VirtualMachines Update), which faults match on.
const OpPatch = "patch"

// patchVM applies a PATCH to a VM: ARM's update, which changes only what
// the body names. Tags, when the body has them, replace the VM's tags
// whole, as ARM does, so a client that means to add tags sends the ones
// it keeps too. The emulator changes nothing else by PATCH: a body that
// names other properties is refused, naming them, rather than half done.
func (s *Server) patchVM(w http.ResponseWriter, r *http.Request, ref vmRef) {
	inst, _ := s.world.ByName(cloud, ref.scope(), ref.key())
	_, c, ok := s.admitCall(w, r, ref, OpPatch, inst, "Write")
	if !ok || !s.groupExists(w, ref) {
		return
	}
	body, e := readBody(r)
	if e != nil {
		s.writeError(w, *e)
		return
	}
	var update armcompute.VirtualMachineUpdate
	if e := decodeJSON(body, &update); e != nil {
		s.writeError(w, *e)
		return
	}
	if other := untaggedFields(update); len(other) > 0 {
		s.writeError(w, armError{Status: http.StatusBadRequest, Code: "InvalidParameter",
			Message: fmt.Sprintf("The emulator updates only tags by PATCH; the request also sets %s. Send a PUT of the whole VM to change them.", strings.Join(other, ", "))})
		return
	}
	inst, found := s.world.ByName(cloud, ref.scope(), ref.key())
	if !found {
		s.writeError(w, s.fromWorld(&sim.Error{Kind: sim.KindNotFound}, c))
		return
	}
	// VMs here carry no etag, so If-Match can only be *.
	if m := r.Header.Get("If-Match"); m != "" && m != "*" {
		s.writeError(w, errPrecondition())
		return
	}
	if s.markedForDeletion(inst) {
		s.writeError(w, armError{Status: http.StatusConflict, Code: "OperationNotAllowed",
			Message: fmt.Sprintf("Operation 'PATCH' is not allowed on VM '%s' since the VM is marked for deletion. You can only retry the Delete operation (or wait for an ongoing one to complete).", ref.Name)})
		return
	}
	if update.Tags != nil {
		tags := map[string]string{}
		for k, v := range update.Tags {
			tags[k] = deref(v)
		}
		if err := s.world.ReplaceTags(inst.ID, tags); err != nil {
			var se *sim.Error
			if !errors.As(err, &se) {
				se = &sim.Error{Kind: sim.KindNotFound}
			}
			s.writeError(w, s.fromWorld(se, c))
			return
		}
	}
	updated, ok := s.world.Get(inst.ID)
	if !ok {
		s.writeError(w, s.fromWorld(&sim.Error{Kind: sim.KindNotFound}, c))
		return
	}
	// As with a PUT, an update of a VM still being created finishes with
	// the creation.
	var op *sim.Operation
	if o, ok := s.createOp(updated); ok && !o.Done {
		op = o
	}
	s.writeAsync(w, r, http.StatusOK, s.render(updated, renderOptions{}), op, false)
}

// untaggedFields names what a PATCH body sets besides tags.
func untaggedFields(u armcompute.VirtualMachineUpdate) []string {
	var out []string
	if u.Properties != nil {
		out = append(out, "properties")
	}
	if u.Identity != nil {
		out = append(out, "identity")
	}
	if u.Plan != nil {
		out = append(out, "plan")
	}
	if u.Zones != nil {
		out = append(out, "zones")
	}
	return out
}
