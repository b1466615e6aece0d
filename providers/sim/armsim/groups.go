// SPDX-License-Identifier: Apache-2.0

package armsim

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/gpufleet/gpufleet/providers/sim"
)

// Resource groups are ARM's own (Microsoft.Resources): their PUT is
// synchronous, their DELETE a long-running operation polled at the
// subscription's operationresults, and deleting a group deletes what is in
// it — VMs, network interfaces, virtual networks, proximity placement
// groups — as Azure does. A request for anything in a group that does not
// exist is answered 404 ResourceGroupNotFound, before its provider sees it.

const groupResourceType = "Microsoft.Resources/resourceGroups"

// groupRef names a resource group; ARM matches names case-insensitively.
type groupRef struct{ Subscription, Name string }

func (g groupRef) id() string {
	return "/subscriptions/" + g.Subscription + "/resourceGroups/" + g.Name
}
func (g groupRef) key() string { return strings.ToLower(g.id()) }

// group is a resource group as the front keeps it.
type group struct {
	header
	ManagedBy string `json:"managedBy,omitempty"`
}

// groupJSON is a resource group on the wire.
type groupJSON struct {
	ID         string            `json:"id"`
	Name       string            `json:"name"`
	Type       string            `json:"type"`
	Location   string            `json:"location"`
	ManagedBy  string            `json:"managedBy,omitempty"`
	Tags       map[string]string `json:"tags,omitempty"`
	Properties struct {
		ProvisioningState string `json:"provisioningState"`
	} `json:"properties"`
}

// findGroup returns a group that exists now: one stored, or the fixture's
// unless it was deleted.
func (s *Server) findGroup(g groupRef) (group, bool) {
	var stored group
	if s.load(kindGroup, g.key(), &stored) {
		return stored, !stored.Change.gone(s.world.Now())
	}
	return s.fixtureGroup(g)
}

// requireGroup is findGroup answering ARM's error for a missing group.
func (s *Server) requireGroup(g groupRef) (group, *armError) {
	grp, ok := s.findGroup(g)
	if !ok {
		return grp, errPtr(errGroupNotFound(g.Name))
	}
	return grp, nil
}

func errGroupNotFound(name string) armError {
	return armError{Status: http.StatusNotFound, Code: "ResourceGroupNotFound",
		Message: fmt.Sprintf("Resource group '%s' could not be found.", name)}
}

func (s *Server) renderGroup(g group) groupJSON {
	out := groupJSON{ID: g.ID, Name: g.Name, Type: groupResourceType, Location: g.Location, ManagedBy: g.ManagedBy, Tags: g.Tags}
	out.Properties.ProvisioningState = g.Change.provisioning(s.world.Now(), "Succeeded")
	return out
}

// groupRequest is a resource group's PUT body.
type groupRequest struct {
	Location  *string            `json:"location"`
	ManagedBy string             `json:"managedBy"`
	Tags      map[string]*string `json:"tags"`
}

func (s *Server) putGroup(w http.ResponseWriter, r *http.Request, ref groupRef) {
	req, ok := admitPut[groupRequest](s, w, r, OpGroupPut, groupContext(ref, "write"))
	if !ok {
		return
	}
	if req.Location == nil || *req.Location == "" {
		s.writeError(w, armError{Status: http.StatusBadRequest, Code: "LocationRequired", Message: "The location property is required for this definition."})
		return
	}
	region, ok := s.world.Region(cloud, normalizeLocation(*req.Location))
	if !ok {
		s.writeError(w, armError{Status: http.StatusBadRequest, Code: "LocationNotAvailableForResourceGroup",
			Message: fmt.Sprintf("The provided location '%s' is not available for resource group. List of available regions is '%s'.",
				*req.Location, strings.Join(locations(s.world.Catalog()), ","))})
		return
	}
	s.lockToWrite()
	defer s.res.mu.Unlock()
	old, exists := s.findGroup(ref)
	switch {
	case exists && old.Change.running(s.world.Now()):
		s.writeError(w, errGroupDeleting(old.Name))
		return
	case exists && old.Location != region.Name:
		s.writeError(w, armError{Status: http.StatusConflict, Code: "InvalidResourceGroupLocation",
			Message: fmt.Sprintf("Invalid resource group location '%s'. The Resource group already exists in location '%s'.", *req.Location, old.Location)})
		return
	}
	g := group{header: header{ID: ref.id(), Name: ref.Name, Location: region.Name, Tags: tagsOf(req.Tags)}, ManagedBy: req.ManagedBy}
	status := http.StatusCreated
	if exists {
		// The group keeps the name it was created with.
		g.ID, g.Name, g.GUID = old.ID, old.Name, old.GUID
		status = http.StatusOK
	}
	s.save(kindGroup, ref.key(), region.Name, g)
	writeJSON(w, status, s.renderGroup(g))
}

func (s *Server) getGroup(w http.ResponseWriter, r *http.Request, ref groupRef) {
	if !s.admitSimple(w, r, OpGroupGet, groupContext(ref, "read")) {
		return
	}
	s.res.mu.RLock()
	defer s.res.mu.RUnlock()
	g, ok := s.findGroup(ref)
	switch {
	case r.Method == http.MethodHead && ok:
		// CheckExistence: a status and no body.
		w.WriteHeader(http.StatusNoContent)
	case r.Method == http.MethodHead:
		w.WriteHeader(http.StatusNotFound)
	case !ok:
		s.writeError(w, errGroupNotFound(ref.Name))
	default:
		writeJSON(w, http.StatusOK, s.renderGroup(g))
	}
}

// deleteGroup starts deleting a group and everything in it, which
// finishes together after the world's operation time. A repeated DELETE
// while it runs joins it.
func (s *Server) deleteGroup(w http.ResponseWriter, r *http.Request, ref groupRef) {
	if !s.admitSimple(w, r, OpGroupDelete, groupContext(ref, "delete")) {
		return
	}
	s.lockToWrite()
	defer s.res.mu.Unlock()
	g, ok := s.findGroup(ref)
	if !ok {
		s.writeError(w, errGroupNotFound(ref.Name))
		return
	}
	now := s.world.Now()
	if e := s.usedFromOutside(ref); e != nil {
		s.writeError(w, *e)
		return
	}
	if !g.Change.running(now) {
		op := s.startOperation(asyncOp{Namespace: groupType.namespace, Subscription: ref.Subscription, Location: g.Location,
			Target: ref.key(), Delete: true})
		g.Change = &change{Delete: true, Op: op.ID, Until: op.Until}
		s.deleteContents(ref, g.Change)
		s.save(kindGroup, ref.key(), g.Location, g)
	}
	op, _ := s.findOperation(g.Change.Op)
	w.Header().Set("Location", fmt.Sprintf("%s/subscriptions/%s/operationresults/%s?api-version=%s", baseURL(r), ref.Subscription, op.ID, requestVersion(r, groupType)))
	w.Header().Set("Retry-After", s.retryAfterUntil(op.Until))
	w.WriteHeader(http.StatusAccepted)
}

// deleteContents deletes what a group holds as part of its deletion c: its
// VMs through the world's long-running deletes, its network resources by
// marking them deleted when c finishes, and its proximity placement
// groups at once (the front keeps those in memory; their VMs are going).
func (s *Server) deleteContents(ref groupRef, c *change) {
	scope := vmRef{Subscription: ref.Subscription, ResourceGroup: ref.Name}.scope()
	for _, inst := range s.world.List(cloud, func(inst *sim.Instance) bool { return inst.Scope == scope }) {
		if inst.State != sim.StateShuttingDown {
			// An instance already gone from the world has nothing to delete.
			_, _ = s.world.StartDelete(inst.ID, "", nil)
		}
	}
	for _, kind := range []string{kindNIC, kindVNet} {
		for _, res := range s.world.Resources(cloud, kind, inGroup(ref)) {
			var h struct {
				header
			}
			if json.Unmarshal(res.Body, &h) != nil || h.Change.gone(s.world.Now()) {
				continue
			}
			s.markDeleted(kind, res, c)
		}
	}
	// The fixture's networks are deleted with the fixture's group: stored
	// as deleted, so that they stay gone.
	for _, v := range s.fixtureVNets(ref) {
		if _, stored := s.world.GetResource(cloud, kindVNet, v.key()); !stored {
			v.Change = c
			s.save(kindVNet, v.key(), v.Location, v)
		}
	}
	s.ppgs.mu.Lock()
	for k := range s.ppgs.groups {
		if strings.HasPrefix(k, ref.key()+"/") {
			delete(s.ppgs.groups, k)
		}
	}
	s.ppgs.mu.Unlock()
}

// usedFromOutside refuses to delete a group whose subnets something in
// another group uses — an interface, or a VM's own interface — as Network
// refuses to delete a subnet in use. (Azure accepts the group's deletion
// and fails it; the emulator refuses it at once, so that it never leaves a
// VM in a subnet that is gone.)
func (s *Server) usedFromOutside(ref groupRef) *armError {
	inside := ref.key() + "/"
	for _, v := range s.vnetsIn(ref) {
		for _, sn := range v.live(s.world.Now()) {
			for _, user := range s.subnetUsers(v.subnetID(sn.Name).key()) {
				if !strings.HasPrefix(strings.ToLower(user), inside) {
					return errPtr(errSubnetInUse(sn.Name, user))
				}
			}
		}
	}
	return nil
}

// markDeleted rewrites a stored resource with a deletion, keeping the rest
// of its body as it is.
func (s *Server) markDeleted(kind string, res sim.Resource, c *change) {
	var body map[string]json.RawMessage
	if json.Unmarshal(res.Body, &body) != nil {
		return
	}
	raw, _ := json.Marshal(c)
	body["change"] = raw
	s.save(kind, res.ID, res.Region, body)
}

// listGroups serves a subscription's groups a page at a time, in the
// order they were created, the fixture's first.
func (s *Server) listGroups(w http.ResponseWriter, r *http.Request, sub string) {
	if !s.admitSimple(w, r, OpGroupList, subscriptionContext(sub, groupResourceType+"/read")) {
		return
	}
	s.res.mu.RLock()
	var groups []group
	if g, ok := s.fixtureGroup(groupRef{sub, fixtureGroupName}); ok {
		if _, stored := s.world.GetResource(cloud, kindGroup, g.key()); !stored {
			groups = append(groups, g)
		}
	}
	prefix := strings.ToLower("/subscriptions/" + sub + "/resourcegroups/")
	groups = append(groups, storedLive[group](s, kindGroup, func(r sim.Resource) bool { return strings.HasPrefix(r.ID, prefix) })...)
	all := renderAll(groups, s.renderGroup)
	s.res.mu.RUnlock()
	writePage(w, r, s, all)
}

// groupContext is what an injected error about a resource group names.
func groupContext(ref groupRef, action string) callContext {
	return callContext{vm: vmRef{Subscription: ref.Subscription, ResourceGroup: ref.Name}, opType: opTypeOf(action),
		action: groupResourceType + "/" + action, scope: ref.id()}
}

// subscriptionContext is what an injected error about a read at a
// subscription's scope names.
func subscriptionContext(sub, action string) callContext {
	return callContext{vm: vmRef{Subscription: sub}, opType: "Read", action: action, scope: "/subscriptions/" + sub}
}

// tagsOf reads a request's tags; a null value is an empty one.
func tagsOf(in map[string]*string) map[string]string {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]string, len(in))
	for _, k := range slices.Sorted(maps.Keys(in)) {
		out[k] = deref(in[k])
	}
	return out
}
