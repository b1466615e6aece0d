// SPDX-License-Identifier: Apache-2.0

package armsim

import (
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strings"

	"github.com/gpufleet/gpufleet/providers/sim"
)

// Subnets are a network's child resources: their PUT and DELETE rewrite
// the network they are in, they must lie inside its address space without
// overlapping one another, and one that an interface or a VM uses cannot
// be deleted.
type subnet struct {
	Name          string  `json:"name"`
	AddressPrefix string  `json:"addressPrefix"`
	Change        *change `json:"change,omitempty"`
}

type subnetJSON struct {
	subResourceJSON
	Properties struct {
		ProvisioningState                 string      `json:"provisioningState"`
		AddressPrefix                     string      `json:"addressPrefix"`
		IPConfigurations                  []subResRef `json:"ipConfigurations,omitempty"`
		Delegations                       []struct{}  `json:"delegations"`
		PrivateEndpointNetworkPolicies    string      `json:"privateEndpointNetworkPolicies"`
		PrivateLinkServiceNetworkPolicies string      `json:"privateLinkServiceNetworkPolicies"`
	} `json:"properties"`
}

// prefix is the one address prefix a subnet asks for.
func (r subnetRequest) prefix() string {
	if r.Properties == nil {
		return ""
	}
	if p := deref(r.Properties.AddressPrefix); p != "" {
		return p
	}
	if len(r.Properties.AddressPrefixes) > 0 {
		return r.Properties.AddressPrefixes[0]
	}
	return ""
}

func (s *Server) renderSubnet(v vnet, sn subnet) subnetJSON {
	now := s.world.Now()
	id := v.subnetID(sn.Name)
	out := subnetJSON{subResourceJSON: subResourceJSON{Name: sn.Name, ID: id.String(), Etag: etag(v.GUID+"/"+strings.ToLower(sn.Name), sn.Change, v.Created), Type: subnetResourceType}}
	p := &out.Properties
	state := sn.Change.provisioning(now, "Updating")
	if state == "Succeeded" {
		state = v.Change.provisioning(now, "Updating")
	}
	p.ProvisioningState = state
	p.AddressPrefix = sn.AddressPrefix
	p.Delegations = []struct{}{}
	p.PrivateEndpointNetworkPolicies, p.PrivateLinkServiceNetworkPolicies = "Disabled", "Enabled"
	for _, user := range s.subnetUsers(id.key()) {
		p.IPConfigurations = append(p.IPConfigurations, subResRef{ID: user})
	}
	return out
}

// checkSubnet checks a subnet's prefix as Network does: given, inside the
// network's address space, overlapping none of its other subnets.
func checkSubnet(v vnet, sn subnet) *armError {
	if sn.AddressPrefix == "" {
		return &armError{Status: http.StatusBadRequest, Code: "NoAddressPrefixOrPoolProvided",
			Message: fmt.Sprintf("No address prefix or pool is provided for subnet '%s'.", sn.Name)}
	}
	p, err := netip.ParsePrefix(sn.AddressPrefix)
	if err != nil {
		return errPtr(errRequestFormat())
	}
	inside := false
	for _, space := range v.AddressPrefixes {
		if sp, err := netip.ParsePrefix(space); err == nil && sp.Bits() <= p.Bits() && sp.Contains(p.Addr()) {
			inside = true
		}
	}
	if !inside {
		return &armError{Status: http.StatusBadRequest, Code: "NetcfgInvalidSubnet",
			Message: fmt.Sprintf("Subnet '%s' is not valid in virtual network '%s'.", sn.Name, v.Name)}
	}
	for _, other := range v.Subnets {
		if strings.EqualFold(other.Name, sn.Name) || other.Change != nil && other.Change.Delete {
			continue
		}
		if op, err := netip.ParsePrefix(other.AddressPrefix); err == nil && op.Overlaps(p) {
			return &armError{Status: http.StatusBadRequest, Code: "NetcfgSubnetRangesOverlap",
				Message: fmt.Sprintf("Subnet '%s' is not valid because its IP address range overlaps with that of an existing subnet in virtual network '%s'.", sn.Name, v.Name)}
		}
	}
	return nil
}

func (s *Server) putSubnet(w http.ResponseWriter, r *http.Request, id armID) {
	req, ok := admitPut[subnetRequest](s, w, r, OpSubnetPut, networkContext(id, "write"))
	if !ok {
		return
	}
	s.lockToWrite()
	defer s.res.mu.Unlock()
	now := s.world.Now()
	v, ok := s.parentVNet(w, id)
	if !ok {
		return
	}
	if v.Change.running(now) && v.Change.Delete {
		s.writeError(w, errDeleting(id.parent()))
		return
	}
	old, exists := v.subnet(id.Child, now)
	sn := subnet{Name: id.Child, AddressPrefix: req.prefix()}
	if exists {
		sn.Name = old.Name
	}
	if e := checkSubnet(v, sn); e != nil {
		s.writeError(w, *e)
		return
	}
	var op asyncOp
	op, sn.Change = s.startChange(subnetType.namespace, id, v.Location, false)
	v.Subnets = slices.DeleteFunc(v.Subnets, func(o subnet) bool { return strings.EqualFold(o.Name, sn.Name) })
	v.Subnets = append(v.Subnets, sn)
	s.save(kindVNet, id.parent().key(), v.Location, v)
	s.writeNetworkPut(w, r, op, exists, s.renderSubnet(v, sn))
}

// parentVNet returns the network a subnet's request is about, answering
// ARM's error when it or its group is not there. The caller holds the
// store.
func (s *Server) parentVNet(w http.ResponseWriter, id armID) (vnet, bool) {
	if !s.checkGroup(w, id.group()) {
		return vnet{}, false
	}
	v, ok := s.findVNet(id)
	if !ok {
		s.writeError(w, errResourceNotFound(id.parent()))
	}
	return v, ok
}

func (s *Server) getSubnet(w http.ResponseWriter, r *http.Request, id armID) {
	if !s.admitSimple(w, r, OpSubnetGet, networkContext(id, "read")) {
		return
	}
	s.res.mu.RLock()
	defer s.res.mu.RUnlock()
	v, ok := s.parentVNet(w, id)
	if !ok {
		return
	}
	sn, ok := v.subnet(id.Child, s.world.Now())
	if !ok {
		s.writeError(w, errChildNotFound(id))
		return
	}
	writeJSON(w, http.StatusOK, s.renderSubnet(v, sn))
}

func (s *Server) deleteSubnet(w http.ResponseWriter, r *http.Request, id armID) {
	if !s.admitSimple(w, r, OpSubnetDelete, networkContext(id, "delete")) {
		return
	}
	s.lockToWrite()
	defer s.res.mu.Unlock()
	now := s.world.Now()
	v, ok := s.parentVNet(w, id)
	if !ok {
		return
	}
	sn, ok := v.subnet(id.Child, now)
	if !ok {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if e := s.subnetInUse(v, sn); e != nil {
		s.writeError(w, *e)
		return
	}
	op, started := s.deletion(subnetType.namespace, id, v.Location, sn.Change, now)
	if started != nil {
		for i := range v.Subnets {
			if strings.EqualFold(v.Subnets[i].Name, sn.Name) {
				v.Subnets[i].Change = started
			}
		}
		s.save(kindVNet, id.parent().key(), v.Location, v)
	}
	s.writeNetworkDelete(w, r, op)
}

func (s *Server) listSubnets(w http.ResponseWriter, r *http.Request, id armID) {
	if !s.admitSimple(w, r, OpSubnetList, networkContext(id, "read")) {
		return
	}
	s.res.mu.RLock()
	v, ok := s.parentVNet(w, id)
	if !ok {
		s.res.mu.RUnlock()
		return
	}
	all := renderAll(v.live(s.world.Now()), func(sn subnet) subnetJSON { return s.renderSubnet(v, sn) })
	s.res.mu.RUnlock()
	writePage(w, r, s, all)
}

// subnetUsers lists what uses a subnet: the IP configurations of the
// network interfaces in it, and the VMs whose own network interface
// configurations name it (the front keeps no interface for those).
func (s *Server) subnetUsers(key string) []string {
	var out []string
	for _, n := range s.nics(nil) {
		for _, ipc := range n.IPConfigs {
			if strings.EqualFold(ipc.Subnet, key) {
				out = append(out, n.ipConfigID(ipc.Name))
			}
		}
	}
	for _, inst := range s.world.List(cloud, func(inst *sim.Instance) bool {
		return slices.Contains(strings.Split(inst.Properties[propSubnets], "\n"), key)
	}) {
		out = append(out, s.describe(inst).id())
	}
	return out
}

// subnetInUse is Network's refusal to delete a subnet something uses.
func (s *Server) subnetInUse(v vnet, sn subnet) *armError {
	users := s.subnetUsers(v.subnetID(sn.Name).key())
	if len(users) == 0 {
		return nil
	}
	return errPtr(errSubnetInUse(sn.Name, users[0]))
}

func errSubnetInUse(subnet, user string) armError {
	return armError{Status: http.StatusBadRequest, Code: "InUseSubnetCannotBeDeleted",
		Message: fmt.Sprintf("Subnet %s is in use by %s and cannot be deleted. In order to delete the subnet, delete all the resources within the subnet. See aka.ms/deletesubnet.", subnet, user)}
}
