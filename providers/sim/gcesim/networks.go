// SPDX-License-Identifier: Apache-2.0

package gcesim

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"

	"github.com/gpufleet/gpufleet/providers/sim"
)

// VPC networks, the least of them that instances need: a network is in
// auto mode, with a subnetwork named as itself in every region, or in
// custom mode, with the subnetworks made for it. Every project has the
// "default" network, in auto mode, until it is deleted; it is a fixture
// computed for each project rather than stored, and a deletion stores a
// tombstone in its place. Networks a client makes are kept in the world's
// resource store. Firewalls, routes and peerings are not modelled.

// The world's resource kinds of the front's networks.
const (
	kindNetwork    = "network"
	kindSubnetwork = "subnetwork"
)

// defaultNetwork is the network every project starts with.
const defaultNetwork = "default"

// networkMTU is the MTU GCE gives a network that asks for none.
const networkMTU = 1460

// networkRecord is a network as the world keeps it.
type networkRecord struct {
	Project     string `json:"project"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Auto        bool   `json:"auto"`
	RoutingMode string `json:"routingMode"`
	MTU         int32  `json:"mtu"`
	ID          uint64 `json:"id"`
	// Deleted marks the tombstone of a deleted default network.
	Deleted bool      `json:"deleted,omitempty"`
	Created time.Time `json:"created"`
}

func networkPath(project, name string) string {
	return "projects/" + project + "/global/networks/" + name
}

// network finds a project's network, the default one included.
func (s *Server) network(project, name string) (networkRecord, bool) {
	r, ok := s.world.GetResource(cloud, kindNetwork, networkPath(project, name))
	if !ok {
		if name == defaultNetwork {
			return defaultNetworkOf(project), true
		}
		return networkRecord{}, false
	}
	var n networkRecord
	if err := json.Unmarshal(r.Body, &n); err != nil || n.Deleted {
		return networkRecord{}, false
	}
	return n, true
}

func defaultNetworkOf(project string) networkRecord {
	return networkRecord{Project: project, Name: defaultNetwork, Description: "Default network for the project", Auto: true,
		RoutingMode: "REGIONAL", MTU: networkMTU, ID: stableID("network\x00" + networkPath(project, defaultNetwork)), Created: projectCreatedAt}
}

// networks lists a project's networks by name.
func (s *Server) networks(project string) []networkRecord {
	var out []networkRecord
	defaultGone := false
	for _, r := range s.world.Resources(cloud, kindNetwork, nil) {
		var n networkRecord
		if json.Unmarshal(r.Body, &n) != nil || n.Project != project {
			continue
		}
		if n.Name == defaultNetwork {
			defaultGone = n.Deleted
		}
		if !n.Deleted {
			out = append(out, n)
		}
	}
	if !defaultGone && !slices.ContainsFunc(out, func(n networkRecord) bool { return n.Name == defaultNetwork }) {
		out = append(out, defaultNetworkOf(project))
	}
	slices.SortFunc(out, func(a, b networkRecord) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// renderNetwork is a network as networks.get returns it.
func (s *Server) renderNetwork(l links, n networkRecord) *computepb.Network {
	path := networkPath(n.Project, n.Name)
	out := &computepb.Network{
		Kind:                                  proto.String("compute#network"),
		Id:                                    proto.Uint64(n.ID),
		CreationTimestamp:                     proto.String(timestamp(n.Created)),
		Name:                                  proto.String(n.Name),
		SelfLink:                              proto.String(l.url(path)),
		SelfLinkWithId:                        proto.String(l.url(networkPath(n.Project, fmt.Sprint(n.ID)))),
		AutoCreateSubnetworks:                 proto.Bool(n.Auto),
		Mtu:                                   proto.Int32(n.MTU),
		RoutingConfig:                         &computepb.NetworkRoutingConfig{RoutingMode: proto.String(n.RoutingMode), BgpBestPathSelectionMode: proto.String("LEGACY")},
		NetworkFirewallPolicyEnforcementOrder: proto.String("AFTER_CLASSIC_FIREWALL"),
	}
	if n.Description != "" {
		out.Description = proto.String(n.Description)
	}
	for _, sub := range s.subnetworks(n.Project, "", func(sub subnetworkRecord) bool { return sub.Network == path }) {
		out.Subnetworks = append(out.Subnetworks, l.url(sub.path()))
	}
	return out
}

// insertNetwork serves networks.insert.
func (s *Server) insertNetwork(w http.ResponseWriter, r *http.Request, project string) error {
	var res computepb.Network
	if _, err := readInsert(r, &res, func(name string) error {
		return s.admit(r, OpNetworkInsert, project, "", "", networkPath(project, name))
	}); err != nil {
		return err
	}
	if res.AutoCreateSubnetworks == nil {
		// Without it GCE would make a legacy network, which it no
		// longer lets new projects have.
		return invalidField("resource.autoCreateSubnetworks", "", "Legacy networks are not supported: set autoCreateSubnetworks to make a VPC network in auto or custom mode.")
	}
	mode := cmp.Or(res.GetRoutingConfig().GetRoutingMode(), "REGIONAL")
	if mode != "REGIONAL" && mode != "GLOBAL" {
		return invalidField("resource.routingConfig.routingMode", mode, "Must be one of [GLOBAL, REGIONAL].")
	}
	mtu := cmp.Or(res.GetMtu(), networkMTU)
	if mtu < 1300 || mtu > 8896 {
		return invalidField("resource.mtu", fmt.Sprint(mtu), "MTU must be between 1300 and 8896.")
	}
	path := networkPath(project, res.GetName())
	if _, ok := s.network(project, res.GetName()); ok {
		return alreadyExists(path)
	}
	now := s.world.Now()
	n := networkRecord{Project: project, Name: res.GetName(), Description: res.GetDescription(), Auto: res.GetAutoCreateSubnetworks(),
		RoutingMode: mode, MTU: mtu, ID: stableID("network\x00" + path + "\x00" + now.String()), Created: now}
	body, _ := json.Marshal(n)
	s.world.PutResource(sim.Resource{Cloud: cloud, Kind: kindNetwork, ID: path, Body: body})
	op := s.startResourceOp(project, "", "insert", path, n.ID)
	return writeProto(w, s.renderResourceOp(linksOf(r), op))
}

// getNetwork serves networks.get.
func (s *Server) getNetwork(w http.ResponseWriter, r *http.Request, project, name string) error {
	path := networkPath(project, name)
	if err := s.admit(r, OpNetworkGet, project, "", "", path); err != nil {
		return err
	}
	n, ok := s.network(project, name)
	if !ok {
		return notFound(path)
	}
	return writeProto(w, s.renderNetwork(linksOf(r), n))
}

// listNetworks serves networks.list, paged by name.
func (s *Server) listNetworks(w http.ResponseWriter, r *http.Request, project string) error {
	collection := "projects/" + project + "/global/networks"
	q, invalid := parseNameQuery(r, collection)
	if err := admitted(s.admit(r, OpNetworkList, project, "", "", "projects/"+project), invalid); err != nil {
		return err
	}
	nets := keyedBy(s.networks(project), func(n networkRecord) (string, string) { return "global", n.Name })
	l := linksOf(r)
	items, next := page(r, collection, q, nets)
	return writeList(w, l, collection, next, &computepb.NetworkList{
		Kind:  proto.String("compute#networkList"),
		Items: renderAll(items, func(n keyed[networkRecord]) *computepb.Network { return s.renderNetwork(l, n.item) }),
	})
}

// deleteNetwork serves networks.delete: a network that an instance or a
// subnetwork of its own still uses is refused, naming the first user, as
// GCE does; an auto-mode network's subnetworks go with it.
func (s *Server) deleteNetwork(w http.ResponseWriter, r *http.Request, project, name string) error {
	_, idErr := requestIDOf(r)
	path := networkPath(project, name)
	if err := s.admit(r, OpNetworkDelete, project, "", "", path); err != nil {
		return err
	}
	if idErr != nil {
		return idErr
	}
	n, ok := s.network(project, name)
	if !ok {
		return notFound(path)
	}
	if user := s.networkUser(project, path, n.Auto); user != "" {
		return inUse("network", path, user)
	}
	if name == defaultNetwork {
		n.Deleted = true
		body, _ := json.Marshal(n)
		s.world.PutResource(sim.Resource{Cloud: cloud, Kind: kindNetwork, ID: path, Body: body})
	} else {
		s.world.DeleteResource(cloud, kindNetwork, path)
	}
	op := s.startResourceOp(project, "", "delete", path, n.ID)
	return writeProto(w, s.renderResourceOp(linksOf(r), op))
}

// networkUser names the first instance or stored subnetwork that uses a
// network, or "" if none does.
func (s *Server) networkUser(project, path string, auto bool) string {
	if insts := s.instancesOn(project, propNetwork, path); len(insts) > 0 {
		return insts[0].Scope + "/instances/" + insts[0].Name
	}
	if auto {
		return ""
	}
	for _, sub := range s.storedSubnetworks(project) {
		if sub.Network == path {
			return sub.path()
		}
	}
	return ""
}

// instancesOn lists a project's instances whose property prop names
// path, as a path or a URL.
func (s *Server) instancesOn(project, prop, path string) []*sim.Instance {
	prefix := "projects/" + project + "/zones/"
	return s.world.List(cloud, func(inst *sim.Instance) bool {
		if !strings.HasPrefix(inst.Scope, prefix) {
			return false
		}
		ref, _ := (links{}).relative(inst.Properties[prop])
		return ref == path
	})
}

// inUse is GCE's 400 for deleting what another resource still uses.
func inUse(kind, path, user string) *apiError {
	return &apiError{Status: http.StatusBadRequest, Reason: "resourceInUseByAnotherResource",
		Message: fmt.Sprintf("The %s resource '%s' is already being used by '%s'", kind, path, user)}
}
