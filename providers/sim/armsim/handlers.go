// SPDX-License-Identifier: Apache-2.0

package armsim

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/gpufleet/gpufleet/providers/sim"
)

// What the handlers of the resources the front keeps itself (groups,
// networks, subnets, interfaces, proximity placement groups) have in
// common: the order in which a call is admitted and its body read, the
// group check, the stored resources a listing reads, and how Network
// answers a long-running write.

// admitSimple is admit for a call that names no instance, answering an
// injected error itself; it reports whether the request may go on.
func (s *Server) admitSimple(w http.ResponseWriter, r *http.Request, op string, c callContext) bool {
	out, ok := s.admit(w, r, sim.Call{Op: op})
	if !ok {
		return false
	}
	if out.Err != nil {
		s.writeError(w, s.fromWorld(out.Err, c))
		return false
	}
	return true
}

// opTypeOf is the operation type an injected error names for an action
// on a resource: read, write or delete.
func opTypeOf(action string) string {
	switch action {
	case "write":
		return "Write"
	case "delete":
		return "Delete"
	}
	return "Read"
}

// admitPut reads a PUT's body, admits the call and decodes the body into a
// T, answering the first error itself; it reports whether the request may
// go on. An injected fault is answered before a body that does not read.
func admitPut[T any](s *Server, w http.ResponseWriter, r *http.Request, op string, c callContext) (T, bool) {
	var req T
	body, readErr := readBody(r)
	if !s.admitSimple(w, r, op, c) {
		return req, false
	}
	if readErr != nil {
		s.writeError(w, *readErr)
		return req, false
	}
	if e := decodeJSON(body, &req); e != nil {
		s.writeError(w, *e)
		return req, false
	}
	return req, true
}

// lockToWrite holds the store for a write, which first removes what has
// finished deleting; the caller unlocks s.res.mu.
func (s *Server) lockToWrite() {
	s.res.mu.Lock()
	s.sweep()
}

// checkGroup answers ResourceGroupNotFound, and reports false, when the
// group is not there. The caller holds the store.
func (s *Server) checkGroup(w http.ResponseWriter, g groupRef) bool {
	if _, e := s.requireGroup(g); e != nil {
		s.writeError(w, *e)
		return false
	}
	return true
}

// putNetwork, getNetwork, listNetwork and deleteNetwork answer the calls
// of the top-level Network resources (virtual networks, interfaces), whose
// call names the world's operation (Op…).

// networkType is where the front keeps a top-level Network resource type,
// and what its writes' operations are.
type networkType struct{ kind, resourceType, namespace string }

var (
	vnetKind = networkType{kindVNet, vnetResourceType, vnetType.namespace}
	nicKind  = networkType{kindNIC, nicResourceType, nicType.namespace}
)

// placedRequest is what the PUT body of every top-level Network resource
// has: where it goes and its tags.
type placedRequest struct {
	Location *string            `json:"location"`
	Tags     map[string]*string `json:"tags"`
}

func (p placedRequest) placement() placedRequest { return p }

// placed is a PUT body that embeds placedRequest.
type placed interface{ placement() placedRequest }

// putNetwork answers a PUT of a top-level Network resource: the checks
// every one makes, then build's of the new version from the request, the
// header putHeader gives it and the version it replaces (exists), then
// the operation that carries it out.
func putNetwork[R placed, T any, PT headed[T], J any](s *Server, w http.ResponseWriter, r *http.Request, call string, id armID, nt networkType,
	find func(armID) (T, bool), build func(req R, h header, old T, exists bool) (T, *armError), render func(T) J) {
	req, ok := admitPut[R](s, w, r, call, networkContext(id, "write"))
	if !ok {
		return
	}
	s.lockToWrite()
	defer s.res.mu.Unlock()
	if !s.checkGroup(w, id.group()) {
		return
	}
	old, exists := find(id)
	p := req.placement()
	h, e := s.putHeader(id, p.Location, p.Tags, nt.resourceType, *PT(&old).head(), exists)
	if e != nil {
		s.writeError(w, *e)
		return
	}
	v, e := build(req, h, old, exists)
	if e != nil {
		s.writeError(w, *e)
		return
	}
	var op asyncOp
	vh := PT(&v).head()
	op, vh.Change = s.startChange(nt.namespace, id, vh.Location, false)
	s.save(nt.kind, id.key(), vh.Location, v)
	s.writeNetworkPut(w, r, op, exists, render(v))
}

// getNetwork answers a GET of a top-level Network resource.
func getNetwork[T, J any](s *Server, w http.ResponseWriter, r *http.Request, call string, id armID,
	find func(armID) (T, bool), render func(T) J) {
	if !s.admitSimple(w, r, call, networkContext(id, "read")) {
		return
	}
	s.res.mu.RLock()
	defer s.res.mu.RUnlock()
	if !s.checkGroup(w, id.group()) {
		return
	}
	v, ok := find(id)
	if !ok {
		s.writeError(w, errResourceNotFound(id))
		return
	}
	writeJSON(w, http.StatusOK, render(v))
}

// listNetwork answers a listing of a group's top-level Network resources
// of a type, named by scope (an id without a name).
func listNetwork[T, J any](s *Server, w http.ResponseWriter, r *http.Request, call string, scope armID,
	in func(groupRef) []T, render func(T) J) {
	if !s.admitSimple(w, r, call, networkContext(scope, "read")) {
		return
	}
	g := scope.group()
	s.res.mu.RLock()
	if !s.checkGroup(w, g) {
		s.res.mu.RUnlock()
		return
	}
	all := renderAll(in(g), render)
	s.res.mu.RUnlock()
	writePage(w, r, s, all)
}

// headed is a pointer to a stored resource, which embeds header.
type headed[T any] interface {
	*T
	head() *header
}

func (h *header) head() *header { return h }

// deleteNetwork answers a DELETE of a top-level Network resource: 204
// when it is not there, inUse's refusal, or the deletion it starts or
// joins.
func deleteNetwork[T any, PT headed[T]](s *Server, w http.ResponseWriter, r *http.Request, call string, id armID, nt networkType,
	find func(armID) (T, bool), inUse func(T) *armError) {
	if !s.admitSimple(w, r, call, networkContext(id, "delete")) {
		return
	}
	s.lockToWrite()
	defer s.res.mu.Unlock()
	if !s.checkGroup(w, id.group()) {
		return
	}
	v, ok := find(id)
	if !ok {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if e := inUse(v); e != nil {
		s.writeError(w, *e)
		return
	}
	h := PT(&v).head()
	op, started := s.deletion(nt.namespace, id, h.Location, h.Change, s.world.Now())
	if started != nil {
		h.Change = started
		s.save(nt.kind, id.key(), h.Location, v)
	}
	s.writeNetworkDelete(w, r, op)
}

// storedLive lists the stored resources of a kind that keep selects (nil:
// every one) and that exist now, in the order they were created.
func storedLive[T any, PT headed[T]](s *Server, kind string, keep func(sim.Resource) bool) []T {
	now := s.world.Now()
	var out []T
	for _, res := range s.world.Resources(cloud, kind, keep) {
		var v T
		if json.Unmarshal(res.Body, &v) == nil && !PT(&v).head().Change.gone(now) {
			out = append(out, v)
		}
	}
	return out
}

// renderAll renders each of a listing's items, nil for none.
func renderAll[T, J any](items []T, render func(T) J) []J {
	var out []J
	for _, item := range items {
		out = append(out, render(item))
	}
	return out
}

// startChange starts the long-running operation of a write to the
// Network resource id, and returns it with the change it makes.
func (s *Server) startChange(namespace string, id armID, location string, deletion bool) (asyncOp, *change) {
	op := s.startOperation(asyncOp{Namespace: namespace, Subscription: id.Subscription, Location: location, Target: id.key(), Delete: deletion})
	return op, &change{Delete: deletion, Op: op.ID, Until: op.Until}
}

// deletion is the operation a Network DELETE of id answers with: the
// running deletion c of the resource, which a repeated DELETE joins, or a
// new one, whose change the caller stores (started is nil on a join).
func (s *Server) deletion(namespace string, id armID, location string, c *change, now time.Time) (op asyncOp, started *change) {
	if op, joined := s.joinDelete(c, now); joined {
		return op, nil
	}
	return s.startChange(namespace, id, location, true)
}

// joinDelete returns the running deletion a repeated DELETE joins, if any.
func (s *Server) joinDelete(c *change, now time.Time) (asyncOp, bool) {
	if c == nil || !c.Delete || !c.running(now) {
		return asyncOp{}, false
	}
	return s.findOperation(c.Op)
}

// writeNetworkPut answers a Network PUT that op carries out: 201 with the
// new resource, or 200 when it replaced one.
func (s *Server) writeNetworkPut(w http.ResponseWriter, r *http.Request, op asyncOp, replaced bool, resource any) {
	status := http.StatusCreated
	if replaced {
		status = http.StatusOK
	}
	s.writeNetworkAsync(w, r, op, false)
	writeJSON(w, status, resource)
}

// writeNetworkDelete answers a Network DELETE that op carries out.
func (s *Server) writeNetworkDelete(w http.ResponseWriter, r *http.Request, op asyncOp) {
	s.writeNetworkAsync(w, r, op, true)
	w.WriteHeader(http.StatusAccepted)
}
