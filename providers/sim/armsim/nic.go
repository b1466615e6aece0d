// SPDX-License-Identifier: Apache-2.0

package armsim

import (
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/gpufleet/gpufleet/providers/sim"
)

// Network interfaces (Microsoft.Network/networkInterfaces): IP
// configurations in subnets of networks in the interface's own location,
// each with a private address Network allocates (the first free one after
// the four Azure reserves at the start of a subnet), and no deletion while
// a VM uses the interface.

const (
	nicResourceType      = "Microsoft.Network/networkInterfaces"
	ipConfigResourceType = "Microsoft.Network/networkInterfaces/ipConfigurations"
)

// nic is a network interface as the front keeps it.
type nic struct {
	header
	IPConfigs             []ipConfig `json:"ipConfigurations"`
	AcceleratedNetworking bool       `json:"acceleratedNetworking,omitempty"`
	IPForwarding          bool       `json:"ipForwarding,omitempty"`
	Created               time.Time  `json:"created"`
}

type ipConfig struct {
	Name string `json:"name"`
	// Subnet is the subnet's key; SubnetID the id as the request spelled it.
	Subnet     string `json:"subnet"`
	SubnetID   string `json:"subnetId"`
	PrivateIP  string `json:"privateIp"`
	Allocation string `json:"allocation"`
	Primary    bool   `json:"primary"`
}

func (n nic) ipConfigID(name string) string { return n.ID + "/ipConfigurations/" + name }

// nicRequest is a network interface's PUT body.
type nicRequest struct {
	placedRequest
	Properties *struct {
		IPConfigurations []struct {
			Name       *string                    `json:"name"`
			Properties *ipConfigPropertiesRequest `json:"properties"`
		} `json:"ipConfigurations"`
		EnableAcceleratedNetworking *bool `json:"enableAcceleratedNetworking"`
		EnableIPForwarding          *bool `json:"enableIPForwarding"`
	} `json:"properties"`
}

// ipConfigPropertiesRequest is an IP configuration's properties in an
// interface's PUT body.
type ipConfigPropertiesRequest struct {
	Subnet                    *subResRef `json:"subnet"`
	PrivateIPAddress          *string    `json:"privateIPAddress"`
	PrivateIPAllocationMethod *string    `json:"privateIPAllocationMethod"`
	Primary                   *bool      `json:"primary"`
}

// nicJSON is Network's shape of an interface on the wire.
type nicJSON struct {
	trackedJSON
	Properties struct {
		ProvisioningState string         `json:"provisioningState"`
		ResourceGUID      string         `json:"resourceGuid"`
		IPConfigurations  []ipConfigJSON `json:"ipConfigurations"`
		DNSSettings       struct {
			DNSServers        []string `json:"dnsServers"`
			AppliedDNSServers []string `json:"appliedDnsServers"`
		} `json:"dnsSettings"`
		EnableAcceleratedNetworking bool       `json:"enableAcceleratedNetworking"`
		EnableIPForwarding          bool       `json:"enableIPForwarding"`
		DisableTCPStateTracking     bool       `json:"disableTcpStateTracking"`
		HostedWorkloads             []string   `json:"hostedWorkloads"`
		TapConfigurations           []struct{} `json:"tapConfigurations"`
		NicType                     string     `json:"nicType"`
		VirtualMachine              *subResRef `json:"virtualMachine,omitempty"`
		Primary                     *bool      `json:"primary,omitempty"`
	} `json:"properties"`
}

type ipConfigJSON struct {
	subResourceJSON
	Properties struct {
		ProvisioningState         string    `json:"provisioningState"`
		PrivateIPAddress          string    `json:"privateIPAddress"`
		PrivateIPAllocationMethod string    `json:"privateIPAllocationMethod"`
		Subnet                    subResRef `json:"subnet"`
		Primary                   bool      `json:"primary"`
		PrivateIPAddressVersion   string    `json:"privateIPAddressVersion"`
	} `json:"properties"`
}

// findNIC returns an interface that exists now in a group that does.
func (s *Server) findNIC(id armID) (nic, bool) {
	if _, ok := s.findGroup(id.group()); !ok {
		return nic{}, false
	}
	var n nic
	if !s.load(kindNIC, id.key(), &n) || n.Change.gone(s.world.Now()) {
		return nic{}, false
	}
	return n, true
}

// nics lists the interfaces that exist now, of a group (nil: every one).
func (s *Server) nics(g *groupRef) []nic {
	var keep func(sim.Resource) bool
	if g != nil {
		keep = inGroup(*g)
	}
	return slices.DeleteFunc(storedLive[nic](s, kindNIC, keep), func(n nic) bool {
		_, ok := s.findGroup(groupOfKey(n.key()))
		return !ok
	})
}

// nicsIn lists a group's interfaces that exist now.
func (s *Server) nicsIn(g groupRef) []nic { return s.nics(&g) }

// groupOfKey is the group a stored key is in.
func groupOfKey(key string) groupRef {
	rest := strings.TrimPrefix(key, "/subscriptions/")
	sub, rest, _ := strings.Cut(rest, "/resourcegroups/")
	name, _, _ := strings.Cut(rest, "/")
	return groupRef{sub, name}
}

// nicUsers lists the VMs that use an interface.
func (s *Server) nicUsers(key string) []string { return s.nicUsersBut(key, nil) }

// nicUsersBut is nicUsers without the VM but, which a re-PUT of that VM
// with its own interface must not find in its way.
func (s *Server) nicUsersBut(key string, but *vmRef) []string {
	var out []string
	for _, inst := range s.world.List(cloud, func(inst *sim.Instance) bool {
		if but != nil && inst.Scope == but.scope() && inst.Name == but.key() {
			return false
		}
		return slices.Contains(strings.Split(inst.Properties[propNICs], "\n"), key)
	}) {
		out = append(out, s.describe(inst).id())
	}
	return out
}

func (s *Server) renderNIC(n nic) nicJSON {
	now := s.world.Now()
	out := nicJSON{trackedJSON: tracked(n.header, nicResourceType, n.Created)}
	p := &out.Properties
	p.ProvisioningState = n.Change.provisioning(now, "Updating")
	p.ResourceGUID = n.GUID
	p.IPConfigurations = []ipConfigJSON{}
	for _, ipc := range n.IPConfigs {
		j := ipConfigJSON{subResourceJSON: subResourceJSON{Name: ipc.Name, ID: n.ipConfigID(ipc.Name), Etag: etag(n.GUID, n.Change, n.Created), Type: ipConfigResourceType}}
		j.Properties.ProvisioningState = p.ProvisioningState
		j.Properties.PrivateIPAddress = ipc.PrivateIP
		j.Properties.PrivateIPAllocationMethod = ipc.Allocation
		j.Properties.Subnet = subResRef{ID: ipc.SubnetID}
		j.Properties.Primary = ipc.Primary
		j.Properties.PrivateIPAddressVersion = "IPv4"
		p.IPConfigurations = append(p.IPConfigurations, j)
	}
	p.DNSSettings.DNSServers, p.DNSSettings.AppliedDNSServers = []string{}, []string{}
	p.EnableAcceleratedNetworking, p.EnableIPForwarding = n.AcceleratedNetworking, n.IPForwarding
	p.HostedWorkloads, p.TapConfigurations = []string{}, []struct{}{}
	p.NicType = "Standard"
	if users := s.nicUsers(n.key()); len(users) > 0 {
		p.VirtualMachine = &subResRef{ID: users[0]}
		primary := true
		p.Primary = &primary
	}
	return out
}

func (s *Server) putNIC(w http.ResponseWriter, r *http.Request, id armID) {
	putNetwork(s, w, r, OpNICPut, id, nicKind, s.findNIC, s.buildNIC, s.renderNIC)
}

// buildNIC is the interface a PUT asks for, its first IP configuration
// the primary one unless the PUT names one.
func (s *Server) buildNIC(req nicRequest, h header, old nic, exists bool) (nic, *armError) {
	n := nic{header: h, Created: s.world.Now()}
	if exists {
		n.Created = old.Created
	}
	if p := req.Properties; p != nil {
		n.AcceleratedNetworking = deref(p.EnableAcceleratedNetworking)
		n.IPForwarding = deref(p.EnableIPForwarding)
		for i, rc := range p.IPConfigurations {
			ipc, e := s.ipConfig(n, old, i, deref(rc.Name), rc.Properties)
			if e != nil {
				return n, e
			}
			n.IPConfigs = append(n.IPConfigs, ipc)
		}
	}
	if len(n.IPConfigs) > 0 && !slices.ContainsFunc(n.IPConfigs, func(c ipConfig) bool { return c.Primary }) {
		n.IPConfigs[0].Primary = true
	}
	return n, nil
}

// ipConfig checks the i-th IP configuration of a NIC's PUT: a subnet that
// exists in the interface's location, and an address in it, kept from the
// interface's previous version when the configuration stays in its subnet.
func (s *Server) ipConfig(n, old nic, i int, name string, p *ipConfigPropertiesRequest) (ipConfig, *armError) {
	ipc := ipConfig{Name: name, Allocation: "Dynamic"}
	if p == nil || p.Subnet == nil || p.Subnet.ID == "" {
		return ipc, errPtr(errInvalid("ipConfigurations", "IP configuration %s must reference a subnet.", n.ipConfigID(name)))
	}
	path := fmt.Sprintf("properties.ipConfigurations[%d].properties.subnet.id", i)
	sid, ok := parseID(p.Subnet.ID)
	if !ok || !sid.is("Microsoft.Network", "virtualNetworks", "subnets") {
		return ipc, errPtr(errLinkedID(p.Subnet.ID, path))
	}
	v, ok := s.findVNet(sid)
	now := s.world.Now()
	sn, found := v.subnet(sid.Child, now)
	if !ok || !found || v.Location != n.Location {
		return ipc, errPtr(errReference(p.Subnet.ID, n.ID))
	}
	ipc.Subnet, ipc.SubnetID, ipc.Primary = sid.key(), p.Subnet.ID, deref(p.Primary)
	if strings.EqualFold(deref(p.PrivateIPAllocationMethod), "Static") && deref(p.PrivateIPAddress) != "" {
		ipc.Allocation, ipc.PrivateIP = "Static", *p.PrivateIPAddress
		return ipc, nil
	}
	for _, prev := range old.IPConfigs {
		if strings.EqualFold(prev.Name, name) && prev.Subnet == ipc.Subnet {
			ipc.PrivateIP = prev.PrivateIP
			return ipc, nil
		}
	}
	ip, ok := s.freeAddress(sn, ipc.Subnet, n)
	if !ok {
		return ipc, &armError{Status: http.StatusBadRequest, Code: "SubnetIsFull",
			Message: fmt.Sprintf("Subnet %s with address prefix %s does not have enough capacity for 1 IP addresses.", sn.Name, sn.AddressPrefix)}
	}
	ipc.PrivateIP = ip
	return ipc, nil
}

// freeAddress is the first address of a subnet no other interface's
// configuration (nor one already given to n) holds, after the network
// address and the three Azure reserves, and before the broadcast address.
func (s *Server) freeAddress(sn subnet, key string, n nic) (string, bool) {
	prefix, err := netip.ParsePrefix(sn.AddressPrefix)
	if err != nil || !prefix.Addr().Is4() {
		return "", false
	}
	used := map[string]bool{}
	for _, other := range s.nics(nil) {
		if other.key() == n.key() {
			continue
		}
		for _, ipc := range other.IPConfigs {
			if ipc.Subnet == key {
				used[ipc.PrivateIP] = true
			}
		}
	}
	for _, ipc := range n.IPConfigs {
		used[ipc.PrivateIP] = true
	}
	addr := prefix.Masked().Addr()
	for range 4 {
		addr = addr.Next()
	}
	for ; prefix.Contains(addr) && prefix.Contains(addr.Next()); addr = addr.Next() {
		if !used[addr.String()] {
			return addr.String(), true
		}
	}
	return "", false
}

func (s *Server) getNIC(w http.ResponseWriter, r *http.Request, id armID) {
	getNetwork(s, w, r, OpNICGet, id, s.findNIC, s.renderNIC)
}

func (s *Server) deleteNIC(w http.ResponseWriter, r *http.Request, id armID) {
	deleteNetwork(s, w, r, OpNICDelete, id, nicKind, s.findNIC, s.nicInUse)
}

// nicInUse refuses to delete an interface a VM uses.
func (s *Server) nicInUse(n nic) *armError {
	users := s.nicUsers(n.key())
	if len(users) == 0 {
		return nil
	}
	return &armError{Status: http.StatusBadRequest, Code: "NicInUse",
		Message: fmt.Sprintf("Network Interface %s is used by existing resource %s. In order to delete the network interface, it must be dissociated from the resource. To learn more, see aka.ms/deletenic.", n.ID, users[0])}
}

func (s *Server) listNICs(w http.ResponseWriter, r *http.Request, g groupRef) {
	listNetwork(s, w, r, OpNICList, networkID(g, "networkInterfaces", ""), s.nicsIn, s.renderNIC)
}

// errReference is ARM's answer when a resource names another that is not
// there, or is in another region.
func errReference(ref, by string) armError {
	return armError{Status: http.StatusBadRequest, Code: "InvalidResourceReference",
		Message: fmt.Sprintf("Resource %s referenced by resource %s was not found. Please make sure that the referenced resource exists, and that both resources are in the same region.", ref, by)}
}

// errLinkedID is ARM's answer when a property that holds a resource id
// does not read as one.
func errLinkedID(id, path string) armError {
	return armError{Status: http.StatusBadRequest, Code: "LinkedInvalidPropertyId",
		Message: fmt.Sprintf("Property id '%s' at path '%s' is invalid. Expect fully qualified resource Id that start with '/subscriptions/{subscriptionId}' or '/providers/{resourceProviderNamespace}/'.", id, path)}
}
