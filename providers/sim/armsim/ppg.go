// SPDX-License-Identifier: Apache-2.0

package armsim

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7"

	"github.com/gpufleet/gpufleet/providers/sim"
)

// Proximity placement groups are kept by the front, not the world: the
// world knows instances only, and a group holds no capacity of its own.
// A VM records the group it was created in (propPPG), so the group's
// members are the world's VMs that name it. The groups of an emulator
// that restarts from a state file are lost; its VMs still name them.
//
// What the emulator models where ARM's exact answer is not documented: a
// DELETE of a group that still has VMs is 409 OperationNotAllowed; a VM
// naming a group that does not exist is 404 NotFound; a VM whose zone or
// location is not its group's is 400 InvalidParameter on
// proximityPlacementGroup; a DELETE of a group that does not exist is 204,
// as Compute answers for its other resources.

const ppgType = "Microsoft.Compute/proximityPlacementGroups"

// propPPG is the lower-cased resource id of the group a VM was created in.
const propPPG = "proximityPlacementGroup"

// ppgRef names a group as its URL does; like VMs, groups are matched
// case-insensitively and keep the casing they were created with.
type ppgRef vmRef

func (g ppgRef) id() string {
	return "/subscriptions/" + g.Subscription + "/resourceGroups/" + g.ResourceGroup + "/providers/" + ppgType + "/" + g.Name
}

// key is how a group is found: its id, lower-cased.
func (g ppgRef) key() string { return strings.ToLower(g.id()) }

// ppg is a group as the front keeps it.
type ppg struct {
	ref      ppgRef
	location string
	// zones are ARM's zone numbers; none for a regional group.
	zones  []string
	typ    armcompute.ProximityPlacementGroupType
	intent *armcompute.ProximityPlacementGroupPropertiesIntent
	tags   map[string]string
}

// ppgStore holds the groups. A VM PUT holds it for reading from the check
// of its group to the VM's launch, and a group's PUT or DELETE holds it
// for writing, so no VM joins a group that is being deleted.
type ppgStore struct {
	mu     sync.RWMutex
	groups map[string]*ppg
}

// ppgName is what Compute takes as a group's name (the rules of other
// Compute resources: a letter or digit first, up to 80 characters).
var ppgName = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._-]{0,78}[A-Za-z0-9_])?$`)

// ppgIDPattern is a group's resource id as a VM names it.
var ppgIDPattern = regexp.MustCompile(`(?i)^/subscriptions/([^/]+)/resourceGroups/([^/]+)/providers/Microsoft\.Compute/proximityPlacementGroups/([^/]+)$`)

func (s *Server) putPPG(w http.ResponseWriter, r *http.Request, ref ppgRef) {
	req, ok := admitPut[armcompute.ProximityPlacementGroup](s, w, r, OpPPGPut, ppgContext(ref, "write"))
	if !ok {
		return
	}
	g, e := s.parsePPG(&req, ref)
	if e != nil {
		s.writeError(w, *e)
		return
	}
	if !s.groupExists(w, vmRef(ref)) {
		return
	}
	s.ppgs.mu.Lock()
	defer s.ppgs.mu.Unlock()
	old, exists := s.ppgs.groups[ref.key()]
	switch m := r.Header.Get("If-Match"); {
	case r.Header.Get("If-None-Match") == "*" && exists, m != "" && (m != "*" || !exists):
		s.writeError(w, errPrecondition())
		return
	}
	if !exists {
		if s.ppgs.groups == nil {
			s.ppgs.groups = map[string]*ppg{}
		}
		s.ppgs.groups[ref.key()] = g
		writeJSON(w, http.StatusCreated, s.renderPPG(g))
		return
	}
	switch {
	case old.location != g.location:
		s.writeError(w, armError{Status: http.StatusConflict, Code: "InvalidResourceLocation",
			Message: fmt.Sprintf("The resource '%s' already exists in location '%s' in resource group '%s'. A resource with the same name cannot be created in location '%s'. Please select a new resource name.",
				old.ref.Name, old.location, ref.ResourceGroup, g.location)})
		return
	case !slices.Equal(old.zones, g.zones):
		s.writeError(w, errPropertyChange("zones"))
		return
	case old.typ != g.typ:
		s.writeError(w, errPropertyChange("proximityPlacementGroupType"))
		return
	}
	// The name keeps the casing it was created with.
	g.ref = old.ref
	s.ppgs.groups[ref.key()] = g
	writeJSON(w, http.StatusOK, s.renderPPG(g))
}

// parsePPG validates a group's PUT body as Compute does.
func (s *Server) parsePPG(req *armcompute.ProximityPlacementGroup, ref ppgRef) (*ppg, *armError) {
	if !ppgName.MatchString(ref.Name) {
		return nil, &armError{Status: http.StatusBadRequest, Code: "InvalidResourceName",
			Message: fmt.Sprintf("Resource name %s is invalid. The name can be up to 80 characters long. It must begin with a letter or number, and it must end with a letter, number or '_'. The name may contain letters, numbers, '.', '-' or '_'.", ref.Name)}
	}
	if req.Location == nil || *req.Location == "" {
		return nil, &armError{Status: http.StatusBadRequest, Code: "LocationRequired", Message: "The location property is required for this definition."}
	}
	region, ok := s.world.Region(cloud, normalizeLocation(*req.Location))
	if !ok {
		return nil, &armError{Status: http.StatusBadRequest, Code: "LocationNotAvailableForResourceType",
			Message: fmt.Sprintf("The provided location '%s' is not available for resource type '%s'. List of available regions for the resource type is '%s'.",
				*req.Location, ppgType, strings.Join(locations(s.world.Catalog()), ","))}
	}
	g := &ppg{ref: ref, location: region.Name, typ: armcompute.ProximityPlacementGroupTypeStandard, tags: map[string]string{}}
	if len(req.Zones) > 1 {
		return nil, errPtr(errInvalid("zones", "A proximity placement group can be pinned to one zone only; %d were given.", len(req.Zones)))
	}
	for _, z := range req.Zones {
		n := deref(z)
		if _, ok := worldZone(region, n); !ok {
			return nil, errPtr(errInvalid("zones", "The zone(s) '%s' for resource '%s' is not supported. The supported zones for location '%s' are '%s'.",
				n, ref.id(), region.Name, strings.Join(armZones(region), ",")))
		}
		g.zones = append(g.zones, n)
	}
	if p := req.Properties; p != nil {
		if p.ProximityPlacementGroupType != nil {
			i := slices.IndexFunc(armcompute.PossibleProximityPlacementGroupTypeValues(), func(v armcompute.ProximityPlacementGroupType) bool {
				return strings.EqualFold(string(v), string(*p.ProximityPlacementGroupType))
			})
			if i < 0 {
				return nil, errPtr(errInvalid("proximityPlacementGroupType", "The value '%s' of parameter 'proximityPlacementGroupType' is not valid. Allowed values are 'Standard' and 'Ultra'.", *p.ProximityPlacementGroupType))
			}
			g.typ = armcompute.PossibleProximityPlacementGroupTypeValues()[i]
		}
		g.intent = p.Intent
	}
	for k, v := range req.Tags {
		g.tags[k] = deref(v)
	}
	return g, nil
}

func (s *Server) getPPG(w http.ResponseWriter, r *http.Request, ref ppgRef) {
	if !s.admitSimple(w, r, OpPPGGet, ppgContext(ref, "read")) {
		return
	}
	if !s.groupExists(w, vmRef(ref)) {
		return
	}
	s.ppgs.mu.RLock()
	defer s.ppgs.mu.RUnlock()
	g, found := s.ppgs.groups[ref.key()]
	if !found {
		s.writeError(w, errPPGNotFound(ref))
		return
	}
	writeJSON(w, http.StatusOK, s.renderPPG(g))
}

// deletePPG deletes a group at once: Compute's DELETE of a group is not a
// long-running operation. A group that still has VMs is refused.
func (s *Server) deletePPG(w http.ResponseWriter, r *http.Request, ref ppgRef) {
	if !s.admitSimple(w, r, OpPPGDelete, ppgContext(ref, "delete")) {
		return
	}
	if !s.groupExists(w, vmRef(ref)) {
		return
	}
	s.ppgs.mu.Lock()
	defer s.ppgs.mu.Unlock()
	g, found := s.ppgs.groups[ref.key()]
	if !found {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if members := s.ppgMembers(g); len(members) > 0 {
		s.writeError(w, armError{Status: http.StatusConflict, Code: "OperationNotAllowed",
			Message: fmt.Sprintf("Proximity placement group '%s' cannot be deleted because it is referenced by %d resource(s): %s. Delete or move them out of the proximity placement group first.",
				g.ref.id(), len(members), strings.Join(members, ", "))})
		return
	}
	delete(s.ppgs.groups, ref.key())
	w.WriteHeader(http.StatusOK)
}

// listPPGs serves a resource group's groups a page at a time, by name.
func (s *Server) listPPGs(w http.ResponseWriter, r *http.Request, sub, resourceGroup string) {
	if !s.admitSimple(w, r, OpPPGList, ppgContext(ppgRef{Subscription: sub, ResourceGroup: resourceGroup}, "read")) {
		return
	}
	if !s.groupExists(w, vmRef{Subscription: sub, ResourceGroup: resourceGroup}) {
		return
	}
	s.ppgs.mu.RLock()
	defer s.ppgs.mu.RUnlock()
	prefix := strings.ToLower("/subscriptions/" + sub + "/resourceGroups/" + resourceGroup + "/providers/" + ppgType + "/")
	var groups []*ppg
	for k, g := range s.ppgs.groups {
		if strings.HasPrefix(k, prefix) {
			groups = append(groups, g)
		}
	}
	slices.SortFunc(groups, func(a, b *ppg) int { return strings.Compare(a.ref.key(), b.ref.key()) })
	page, next, e := s.offsetPage(r, len(groups))
	if e != nil {
		s.writeError(w, *e)
		return
	}
	result := armcompute.ProximityPlacementGroupListResult{Value: []*armcompute.ProximityPlacementGroup{}, NextLink: next}
	for _, g := range groups[page.start:page.end] {
		result.Value = append(result.Value, s.renderPPG(g))
	}
	writeJSON(w, http.StatusOK, result)
}

// decodeJSON parses a PUT or PATCH body with the SDK's own model. The
// body must be an object: ARM deserializes it into the resource's type,
// which null and arrays are not.
func decodeJSON(body []byte, v any) *armError {
	trimmed := strings.TrimSpace(string(body))
	switch {
	case len(trimmed) == 0:
		return &armError{Status: http.StatusBadRequest, Code: "InvalidRequestContent",
			Message: "The request content was invalid and could not be deserialized: 'The request body is empty.'."}
	case trimmed == "null" || strings.HasPrefix(trimmed, "["):
		return &armError{Status: http.StatusBadRequest, Code: "InvalidRequestContent",
			Message: "The request content was invalid and could not be deserialized: 'The request body is not a JSON object.'."}
	}
	if err := json.Unmarshal(body, v); err != nil {
		return &armError{Status: http.StatusBadRequest, Code: "InvalidRequestContent",
			Message: fmt.Sprintf("The request content was invalid and could not be deserialized: '%v'.", err)}
	}
	return nil
}

// ppgMembers lists the ids of the VMs in a group, in creation order. The
// caller holds the store.
func (s *Server) ppgMembers(g *ppg) []string {
	key := g.ref.key()
	var out []string
	for _, inst := range s.world.List(cloud, func(inst *sim.Instance) bool { return inst.Properties[propPPG] == key }) {
		out = append(out, s.describe(inst).id())
	}
	return out
}

// renderPPG builds a group as ARM returns it, with its VMs. The caller
// holds the store.
func (s *Server) renderPPG(g *ppg) *armcompute.ProximityPlacementGroup {
	out := &armcompute.ProximityPlacementGroup{
		ID:       to.Ptr(g.ref.id()),
		Name:     to.Ptr(g.ref.Name),
		Type:     to.Ptr(ppgType),
		Location: to.Ptr(g.location),
		Tags:     map[string]*string{},
		Properties: &armcompute.ProximityPlacementGroupProperties{
			ProximityPlacementGroupType: to.Ptr(g.typ),
			Intent:                      g.intent,
			VirtualMachines:             []*armcompute.SubResourceWithColocationStatus{},
			VirtualMachineScaleSets:     []*armcompute.SubResourceWithColocationStatus{},
			AvailabilitySets:            []*armcompute.SubResourceWithColocationStatus{},
		},
	}
	for _, z := range g.zones {
		out.Zones = append(out.Zones, to.Ptr(z))
	}
	for _, k := range slices.Sorted(maps.Keys(g.tags)) {
		out.Tags[k] = to.Ptr(g.tags[k])
	}
	for _, id := range s.ppgMembers(g) {
		out.Properties.VirtualMachines = append(out.Properties.VirtualMachines, &armcompute.SubResourceWithColocationStatus{ID: to.Ptr(id)})
	}
	return out
}

// vmPPG checks the group a VM PUT names, if any, and returns it. The
// caller holds the store for reading until the VM is launched.
func (s *Server) vmPPG(p *armcompute.VirtualMachineProperties, ref vmRef, spec vmSpec) (*ppg, *armError) {
	if p.ProximityPlacementGroup == nil {
		return nil, nil
	}
	id := deref(p.ProximityPlacementGroup.ID)
	m := ppgIDPattern.FindStringSubmatch(id)
	if m == nil {
		return nil, &armError{Status: http.StatusBadRequest, Code: "LinkedInvalidPropertyId",
			Message: fmt.Sprintf("Property id '%s' at path 'properties.proximityPlacementGroup.id' is invalid. Expect fully qualified resource Id that start with '/subscriptions/{subscriptionId}' or '/providers/{resourceProviderNamespace}/'.", id)}
	}
	g, found := s.ppgs.groups[ppgRef{Subscription: m[1], ResourceGroup: m[2], Name: m[3]}.key()]
	switch {
	case !found:
		return nil, &armError{Status: http.StatusNotFound, Code: "NotFound",
			Message: fmt.Sprintf("The proximity placement group '%s' referenced by virtual machine '%s' was not found.", id, ref.id())}
	case g.location != spec.region.Name:
		return nil, errPtr(errInvalid("proximityPlacementGroup", "The virtual machine '%s' in location '%s' cannot be added to proximity placement group '%s' in location '%s'.",
			ref.Name, spec.region.Name, g.ref.id(), g.location))
	case len(g.zones) > 0 && !slices.Contains(g.zones, spec.zone):
		// A regional VM cannot join a zonal group either: the emulator
		// would otherwise place it in any zone with room.
		return nil, errPtr(errInvalid("proximityPlacementGroup", "The virtual machine '%s' in zone '%s' cannot be added to proximity placement group '%s', which is pinned to zone(s) '%s'.",
			ref.Name, spec.zone, g.ref.id(), strings.Join(g.zones, ",")))
	}
	return g, nil
}

func errPPGNotFound(ref ppgRef) armError {
	return armError{Status: http.StatusNotFound, Code: "ResourceNotFound",
		Message: fmt.Sprintf("The Resource '%s/%s' under resource group '%s' was not found. For more details please go to https://aka.ms/ARMResourceNotFoundFix", ppgType, ref.Name, ref.ResourceGroup)}
}

// ppgContext is what an injected error about a group names.
func ppgContext(ref ppgRef, action string) callContext {
	scope := ref.id()
	if ref.Name == "" {
		scope = "/subscriptions/" + ref.Subscription + "/resourceGroups/" + ref.ResourceGroup
	}
	return callContext{vm: vmRef(ref), opType: opTypeOf(action), action: ppgType + "/" + action, scope: scope}
}
