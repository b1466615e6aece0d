// SPDX-License-Identifier: Apache-2.0

package armsim

import (
	"crypto/sha256"
	"fmt"
	"strings"
	"time"
)

// Every subscription has, without anyone creating it, the network gpufleet's
// example and tests launch into (examples/fleet-repo/gpufleet.cue):
//
//   - resource group gpufleet, in eastus (or the catalog's first Azure
//     region when it has no eastus);
//   - in it, for each Azure region of the catalog, virtual network
//     gpu-<region> in that region, address space 10.<n>.0.0/16 with subnet
//     nodes 10.<n>.0.0/20, n the region's place in the sorted list from 1;
//   - and virtual network gpu in eastus, 10.0.0.0/16 with subnet nodes
//     10.0.0.0/20, which older specs name.
//
// The fixture is computed, not stored: the world's state file holds only
// what clients changed. A client may change it like anything it created —
// a PUT stores its own version, which shadows the fixture's, and a DELETE
// stores the resource as deleted, so that it stays gone.

const (
	fixtureGroupName = "gpufleet"
	fixtureSubnet    = "nodes"
	// fixtureLegacyVNet is the network older specs name for eastus.
	fixtureLegacyVNet   = "gpu"
	fixtureLegacyRegion = "eastus"
)

// fixtureEpoch is when the fixture's resources were made, for their etags.
var fixtureEpoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// fixtureGUID is a fixture resource's GUID, the same in every emulator.
func fixtureGUID(key string) string {
	b := sha256.Sum256([]byte("gpufleet-fixture\x00" + key))
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// fixtureGroup is the fixture's resource group, when ref names it. Its
// name keeps the casing the request spelled it with.
func (s *Server) fixtureGroup(ref groupRef) (group, bool) {
	if !strings.EqualFold(ref.Name, fixtureGroupName) {
		return group{}, false
	}
	regions := locations(s.world.Catalog())
	if len(regions) == 0 {
		return group{}, false
	}
	location := regions[0]
	if _, ok := s.world.Region(cloud, fixtureLegacyRegion); ok {
		location = fixtureLegacyRegion
	}
	ref.Name = fixtureGroupName
	return group{header: header{ID: ref.id(), Name: fixtureGroupName, Location: location, GUID: fixtureGUID(ref.key())}}, true
}

// fixtureVNets lists the fixture's networks in a group: none unless it is
// the fixture's.
func (s *Server) fixtureVNets(ref groupRef) []vnet {
	if !strings.EqualFold(ref.Name, fixtureGroupName) {
		return nil
	}
	ref.Name = fixtureGroupName
	var out []vnet
	for i, region := range locations(s.world.Catalog()) {
		out = append(out, fixtureNetwork(ref, "gpu-"+region, region, i+1))
		if region == fixtureLegacyRegion {
			out = append(out, fixtureNetwork(ref, fixtureLegacyVNet, region, 0))
		}
	}
	return out
}

// fixtureVNet is the fixture's network an id names, if any.
func (s *Server) fixtureVNet(id armID) (vnet, bool) {
	for _, v := range s.fixtureVNets(id.group()) {
		if strings.EqualFold(v.Name, id.Name) {
			return v, true
		}
	}
	return vnet{}, false
}

func fixtureNetwork(g groupRef, name, region string, n int) vnet {
	id := networkID(g, "virtualNetworks", name)
	return vnet{
		header:          header{ID: id.String(), Name: name, Location: region, GUID: fixtureGUID(id.key())},
		AddressPrefixes: []string{fmt.Sprintf("10.%d.0.0/16", n)},
		Subnets:         []subnet{{Name: fixtureSubnet, AddressPrefix: fmt.Sprintf("10.%d.0.0/20", n)}},
		Created:         fixtureEpoch,
	}
}
