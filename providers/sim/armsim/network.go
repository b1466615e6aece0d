// SPDX-License-Identifier: Apache-2.0

package armsim

import (
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"time"
)

// Virtual networks and their subnets (Microsoft.Network), as far as VMs
// and their network interfaces need them: an address space, subnets inside
// it that do not overlap, subnets a NIC or VM uses that cannot be deleted.
// A subnet is a child resource: its PUT and DELETE rewrite its network,
// and a network's PUT replaces its subnets. Writes are long-running, as
// Network's are: 201/200 or 202 with Azure-AsyncOperation, the resource
// Updating or Deleting until the world's operation time has passed.

const (
	vnetResourceType   = "Microsoft.Network/virtualNetworks"
	subnetResourceType = "Microsoft.Network/virtualNetworks/subnets"
)

// vnet is a virtual network as the front keeps it.
type vnet struct {
	header
	AddressPrefixes []string  `json:"addressPrefixes"`
	Subnets         []subnet  `json:"subnets"`
	Created         time.Time `json:"created"`
}

// subnetID is the id of one of the network's subnets.
func (v vnet) subnetID(name string) armID {
	id, _ := parseID(v.ID)
	id.ChildType, id.Child = "subnets", name
	return id
}

// live lists the subnets that exist at now.
func (v vnet) live(now time.Time) []subnet {
	return slices.DeleteFunc(slices.Clone(v.Subnets), func(sn subnet) bool { return sn.Change.gone(now) })
}

// subnet finds a subnet that exists at now.
func (v vnet) subnet(name string, now time.Time) (subnet, bool) {
	for _, sn := range v.live(now) {
		if strings.EqualFold(sn.Name, name) {
			return sn, true
		}
	}
	return subnet{}, false
}

// vnetJSON and subnetJSON are Network's shapes on the wire.
type vnetJSON struct {
	trackedJSON
	Properties struct {
		ProvisioningState string `json:"provisioningState"`
		ResourceGUID      string `json:"resourceGuid"`
		AddressSpace      struct {
			AddressPrefixes []string `json:"addressPrefixes"`
		} `json:"addressSpace"`
		Subnets                []subnetJSON `json:"subnets"`
		VirtualNetworkPeerings []struct{}   `json:"virtualNetworkPeerings"`
		EnableDdosProtection   bool         `json:"enableDdosProtection"`
	} `json:"properties"`
}

// subResourceJSON is what Network writes first of every resource and
// child resource; trackedJSON adds what a top-level one has.
type subResourceJSON struct {
	Name string `json:"name"`
	ID   string `json:"id"`
	Etag string `json:"etag"`
	Type string `json:"type"`
}

type trackedJSON struct {
	subResourceJSON
	Location string            `json:"location"`
	Tags     map[string]string `json:"tags"`
}

// tracked is a top-level resource's trackedJSON: its tags an object even
// when it has none.
func tracked(h header, typ string, created time.Time) trackedJSON {
	out := trackedJSON{subResourceJSON{Name: h.Name, ID: h.ID, Etag: etag(h.GUID, h.Change, created), Type: typ}, h.Location, h.Tags}
	if out.Tags == nil {
		out.Tags = map[string]string{}
	}
	return out
}

type subResRef struct {
	ID string `json:"id"`
}

// vnetRequest is a network's PUT body; subnetRequest a subnet's, alone or
// inside its network's.
type vnetRequest struct {
	placedRequest
	Properties *struct {
		AddressSpace *struct {
			AddressPrefixes []string `json:"addressPrefixes"`
		} `json:"addressSpace"`
		Subnets []subnetRequest `json:"subnets"`
	} `json:"properties"`
}

type subnetRequest struct {
	Name       *string `json:"name"`
	Properties *struct {
		AddressPrefix   *string  `json:"addressPrefix"`
		AddressPrefixes []string `json:"addressPrefixes"`
	} `json:"properties"`
}

// findVNet returns a network that exists now in a group that does.
func (s *Server) findVNet(id armID) (vnet, bool) {
	if _, ok := s.findGroup(id.group()); !ok {
		return vnet{}, false
	}
	var v vnet
	if s.load(kindVNet, id.parent().key(), &v) {
		return v, !v.Change.gone(s.world.Now())
	}
	return s.fixtureVNet(id)
}

// vnetsIn lists a group's networks: the fixture's not stored, then the
// stored ones in the order they were created.
func (s *Server) vnetsIn(g groupRef) []vnet {
	var out []vnet
	for _, v := range s.fixtureVNets(g) {
		if _, stored := s.world.GetResource(cloud, kindVNet, v.key()); !stored {
			out = append(out, v)
		}
	}
	return append(out, storedLive[vnet](s, kindVNet, inGroup(g))...)
}

func (s *Server) renderVNet(v vnet) vnetJSON {
	now := s.world.Now()
	out := vnetJSON{trackedJSON: tracked(v.header, vnetResourceType, v.Created)}
	p := &out.Properties
	p.ProvisioningState = v.Change.provisioning(now, "Updating")
	p.ResourceGUID = v.GUID
	p.AddressSpace.AddressPrefixes = append([]string{}, v.AddressPrefixes...)
	p.Subnets = []subnetJSON{}
	p.VirtualNetworkPeerings = []struct{}{}
	for _, sn := range v.live(now) {
		p.Subnets = append(p.Subnets, s.renderSubnet(v, sn))
	}
	return out
}

func (s *Server) putVNet(w http.ResponseWriter, r *http.Request, id armID) {
	putNetwork(s, w, r, OpVNetPut, id, vnetKind, s.findVNet, s.buildVNet, s.renderVNet)
}

// buildVNet is the network a PUT asks for, with the subnets it lists: a
// subnet the network had and the PUT leaves out is deleted, and must not
// be in use.
func (s *Server) buildVNet(req vnetRequest, h header, old vnet, exists bool) (vnet, *armError) {
	now := s.world.Now()
	v := vnet{header: h, Created: now}
	if exists {
		v.Created = old.Created
	}
	var asked []subnetRequest
	if p := req.Properties; p != nil {
		if p.AddressSpace != nil {
			v.AddressPrefixes = p.AddressSpace.AddressPrefixes
		}
		asked = p.Subnets
	}
	for _, prefix := range v.AddressPrefixes {
		if _, err := netip.ParsePrefix(prefix); err != nil {
			return v, errPtr(errRequestFormat())
		}
	}
	for _, sr := range asked {
		sn := subnet{Name: deref(sr.Name), AddressPrefix: sr.prefix()}
		if e := checkSubnet(v, sn); e != nil {
			return v, e
		}
		v.Subnets = append(v.Subnets, sn)
	}
	for _, sn := range old.live(now) {
		if _, kept := v.subnet(sn.Name, now); !kept {
			if e := s.subnetInUse(old, sn); e != nil {
				return v, e
			}
		}
	}
	return v, nil
}

func (s *Server) getVNet(w http.ResponseWriter, r *http.Request, id armID) {
	getNetwork(s, w, r, OpVNetGet, id, s.findVNet, s.renderVNet)
}

func (s *Server) deleteVNet(w http.ResponseWriter, r *http.Request, id armID) {
	deleteNetwork(s, w, r, OpVNetDelete, id, vnetKind, s.findVNet, s.vnetInUse)
}

// vnetInUse refuses to delete a network one of whose subnets is in use.
func (s *Server) vnetInUse(v vnet) *armError {
	for _, sn := range v.live(s.world.Now()) {
		if e := s.subnetInUse(v, sn); e != nil {
			return e
		}
	}
	return nil
}

func (s *Server) listVNets(w http.ResponseWriter, r *http.Request, g groupRef) {
	listNetwork(s, w, r, OpVNetList, networkID(g, "virtualNetworks", ""), s.vnetsIn, s.renderVNet)
}

// resourceLocation checks a PUT's location as ARM does for every regional
// resource type.
func (s *Server) resourceLocation(loc *string, typ string) (string, *armError) {
	if loc == nil || *loc == "" {
		return "", &armError{Status: http.StatusBadRequest, Code: "LocationRequired", Message: "The location property is required for this definition."}
	}
	region, ok := s.world.Region(cloud, normalizeLocation(*loc))
	if !ok {
		return "", &armError{Status: http.StatusBadRequest, Code: "LocationNotAvailableForResourceType",
			Message: fmt.Sprintf("The provided location '%s' is not available for resource type '%s'. List of available regions for the resource type is '%s'.",
				*loc, typ, strings.Join(locations(s.world.Catalog()), ","))}
	}
	return region.Name, nil
}

// putHeader checks a top-level Network PUT's location, and the resource
// it replaces if it exists, and returns the new version's header: a
// replacement keeps the old one's id, name and GUID.
func (s *Server) putHeader(id armID, loc *string, tags map[string]*string, typ string, old header, exists bool) (header, *armError) {
	location, e := s.resourceLocation(loc, typ)
	if e != nil {
		return header{}, e
	}
	if e := checkReplace(old, exists, location, id, s.world.Now()); e != nil {
		return header{}, e
	}
	h := header{ID: id.String(), Name: id.Name, Location: location, Tags: tagsOf(tags), GUID: s.guid(id.key())}
	if exists {
		h.ID, h.Name, h.GUID = old.ID, old.Name, old.GUID
	}
	return h, nil
}

// checkReplace refuses a PUT over an existing resource that ARM refuses:
// one being deleted, or one in another location.
func checkReplace(old header, exists bool, location string, id armID, now time.Time) *armError {
	switch {
	case !exists:
	case old.Change.running(now) && old.Change.Delete:
		return errPtr(errDeleting(id))
	case old.Location != location:
		return &armError{Status: http.StatusConflict, Code: "InvalidResourceLocation",
			Message: fmt.Sprintf("The resource '%s' already exists in location '%s' in resource group '%s'. A resource with the same name cannot be created in location '%s'. Please select a new resource name.",
				old.Name, old.Location, id.ResourceGroup, location)}
	}
	return nil
}

func errRequestFormat() armError {
	return armError{Status: http.StatusBadRequest, Code: "InvalidRequestFormat", Message: "Cannot parse the request."}
}

// errResourceNotFound is ARM's answer for a top-level resource that is not
// there.
func errResourceNotFound(id armID) armError {
	return armError{Status: http.StatusNotFound, Code: "ResourceNotFound",
		Message: fmt.Sprintf("The Resource '%s/%s/%s' under resource group '%s' was not found. For more details please go to https://aka.ms/ARMResourceNotFoundFix",
			id.Namespace, id.Type, id.Name, id.ResourceGroup)}
}

// errChildNotFound is Network's answer for a child resource (a subnet)
// that is not there: ARM does not know children, Network does.
func errChildNotFound(id armID) armError {
	return armError{Status: http.StatusNotFound, Code: "NotFound",
		Message: fmt.Sprintf("Resource %s not found.", id.String())}
}

// errDeleting refuses a write to a resource being deleted.
func errDeleting(id armID) armError {
	return armError{Status: http.StatusConflict, Code: "AnotherOperationInProgress",
		Message: fmt.Sprintf("Another operation on this or dependent resource is in progress: %s is being deleted.", id.String())}
}

// networkContext is what an injected error about a network resource names.
func networkContext(id armID, action string) callContext {
	typ := "Microsoft.Network/" + id.Type
	if id.ChildType != "" {
		typ += "/" + id.ChildType
	}
	scope := id.String()
	if id.Name == "" {
		scope = id.group().id()
	}
	return callContext{vm: vmRef{Subscription: id.Subscription, ResourceGroup: id.ResourceGroup}, opType: opTypeOf(action), action: typ + "/" + action, scope: scope}
}

// writePage writes one page of a listing in ARM's {"value","nextLink"}.
func writePage[T any](w http.ResponseWriter, r *http.Request, s *Server, all []T) {
	page, next, e := s.offsetPage(r, len(all))
	if e != nil {
		s.writeError(w, *e)
		return
	}
	out := struct {
		Value    []T     `json:"value"`
		NextLink *string `json:"nextLink,omitempty"`
	}{Value: append([]T{}, all[page.start:page.end]...), NextLink: next}
	writeJSON(w, http.StatusOK, out)
}
