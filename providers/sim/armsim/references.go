// SPDX-License-Identifier: Apache-2.0

package armsim

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7"

	"github.com/gpufleet/gpufleet/schema/catalog"
)

// Keys of sim.Instance.Properties that record what a VM's network uses,
// so that a network interface or subnet it uses is not deleted under it:
// the keys of the interfaces it attaches, and of the subnets its own
// interface configurations name, one a line.
const (
	propNICs    = "networkInterfaces"
	propSubnets = "subnets"
)

// vmNetwork is what a VM's network profile references, as store keys.
type vmNetwork struct {
	nics, subnets []string
}

// checkNetwork checks what a VM's network profile references, as Compute
// and Network do when the VM is created: each attached interface and each
// subnet its own interface configurations name must exist, in the VM's
// location, and an attached interface must not be another VM's; an
// interface with accelerated networking needs a size that has it. The caller holds the store for reading until the VM is
// launched.
//
// What ARM answers a VM naming an interface that is not there is not
// documented; the emulator answers as Network answers an interface naming
// a subnet that is not there (400 InvalidResourceReference), which is the
// answer Compute relays for the interfaces a VM creates.
func (s *Server) checkNetwork(np *armcompute.NetworkProfile, ref vmRef, spec vmSpec) (vmNetwork, *armError) {
	var out vmNetwork
	if np == nil {
		return out, nil
	}
	for i, ni := range np.NetworkInterfaces {
		if ni == nil {
			continue
		}
		id := deref(ni.ID)
		nid, ok := parseID(id)
		if !ok || !nid.is("Microsoft.Network", "networkInterfaces", "") {
			return out, errPtr(errLinkedID(id, fmt.Sprintf("properties.networkProfile.networkInterfaces[%d].id", i)))
		}
		n, ok := s.findNIC(nid)
		if !ok || n.Location != spec.region.Name {
			return out, errPtr(errReference(id, ref.id()))
		}
		if n.AcceleratedNetworking && !catalog.AcceleratedNetworking(spec.size) {
			return out, errPtr(s.errAccelerated(spec, n.ID))
		}
		if users := s.nicUsersBut(nid.key(), &ref); len(users) > 0 {
			return out, errPtr(errNICAttached(n.ID, users[0]))
		}
		out.nics = append(out.nics, nid.key())
	}
	for i, c := range np.NetworkInterfaceConfigurations {
		if c == nil || c.Properties == nil {
			continue
		}
		// The interface Compute makes for the configuration is the one
		// Network would say names the subnet.
		nicID := networkID(groupRef{ref.Subscription, ref.ResourceGroup}, "networkInterfaces", deref(c.Name)).String()
		for j, ipc := range c.Properties.IPConfigurations {
			if ipc == nil || ipc.Properties == nil || ipc.Properties.Subnet == nil || ipc.Properties.Subnet.ID == nil {
				continue
			}
			id := *ipc.Properties.Subnet.ID
			sid, ok := parseID(id)
			if !ok || !sid.is("Microsoft.Network", "virtualNetworks", "subnets") {
				return out, errPtr(errLinkedID(id, fmt.Sprintf("properties.networkProfile.networkInterfaceConfigurations[%d].properties.ipConfigurations[%d].properties.subnet.id", i, j)))
			}
			v, ok := s.findVNet(sid)
			_, found := v.subnet(sid.Child, s.world.Now())
			if !ok || !found || v.Location != spec.region.Name {
				return out, errPtr(errReference(id, nicID))
			}
			out.subnets = append(out.subnets, sid.key())
		}
	}
	return out, nil
}

// errNICAttached is Compute's refusal of a VM naming an interface another
// VM has: an interface belongs to one VM at a time, until that VM is
// deleted.
func errNICAttached(nicID, vmID string) armError {
	return armError{Status: http.StatusBadRequest, Code: "NicInUse",
		Message: fmt.Sprintf("Network interface %s is used by existing resource %s. In order to use this network interface for a new virtual machine, please detach it from the existing one.", nicID, vmID)}
}

// store records the references in a VM's properties.
func (n vmNetwork) store(props map[string]string) {
	if len(n.nics) > 0 {
		props[propNICs] = strings.Join(n.nics, "\n")
	}
	if len(n.subnets) > 0 {
		props[propSubnets] = strings.Join(n.subnets, "\n")
	}
}

// errAccelerated is Network's refusal of accelerated networking on an
// interface of a size that does not have it.
func (s *Server) errAccelerated(spec vmSpec, nicID string) armError {
	var allowed []string
	for _, size := range s.sizesIn(spec.region.Name) {
		if catalog.AcceleratedNetworking(size) {
			allowed = append(allowed, size)
		}
	}
	return armError{Status: http.StatusBadRequest, Code: "VMSizeIsNotPermittedToEnableAcceleratedNetworking",
		Message: fmt.Sprintf("Virtual Machine size %s is not in the allowed list of VM sizes for accelerated networking to be enabled on Network Interface %s. Allowed sizes: %s.",
			spec.size, nicID, strings.Join(allowed, ", "))}
}
