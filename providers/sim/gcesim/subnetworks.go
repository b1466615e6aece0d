// SPDX-License-Identifier: Apache-2.0

package gcesim

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"time"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"

	"github.com/gpufleet/gpufleet/providers/sim"
)

// Subnetworks: an auto-mode network has one in every region, named as the
// network, in the region's range of 10.128.0.0/9 (computed, never
// stored); the ones a client makes are kept in the world's resource store.

// autoRanges are the ranges of auto-mode subnetworks, as GCE documents
// them for its regions.
var autoRanges = map[string]string{
	"us-central1":     "10.128.0.0/20",
	"europe-west1":    "10.132.0.0/20",
	"us-west1":        "10.138.0.0/20",
	"asia-east1":      "10.140.0.0/20",
	"us-east1":        "10.142.0.0/20",
	"asia-northeast1": "10.146.0.0/20",
	"asia-southeast1": "10.148.0.0/20",
	"us-east4":        "10.150.0.0/20",
	"europe-west4":    "10.164.0.0/20",
}

// autoRange is a region's auto-mode range; a region the table lacks gets
// one of 10.192.0.0/10, derived from its name.
func autoRange(region string) netip.Prefix {
	if r, ok := autoRanges[region]; ok {
		return netip.MustParsePrefix(r)
	}
	n := stableID("range\x00"+region) % 1024
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(192 + n>>4), byte(n&15) << 4, 0}), 20)
}

// subnetworkRecord is a subnetwork as the world keeps it.
type subnetworkRecord struct {
	Project     string `json:"project"`
	Region      string `json:"region"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Network is the network's path.
	Network               string    `json:"network"`
	Range                 string    `json:"range"`
	PrivateIPGoogleAccess bool      `json:"privateIpGoogleAccess,omitempty"`
	ID                    uint64    `json:"id"`
	Created               time.Time `json:"created"`
}

func subnetworkPath(project, region, name string) string {
	return regionPath(project, region) + "/subnetworks/" + name
}

func (sub subnetworkRecord) path() string { return subnetworkPath(sub.Project, sub.Region, sub.Name) }

func (sub subnetworkRecord) prefix() netip.Prefix {
	p, err := netip.ParsePrefix(sub.Range)
	if err != nil {
		return autoRange(sub.Region)
	}
	return p
}

// gateway is the second address of the range, which GCE reserves for it.
func (sub subnetworkRecord) gateway() netip.Addr { return sub.prefix().Addr().Next() }

// subnetwork finds a subnetwork, an auto-mode network's included.
func (s *Server) subnetwork(project, region, name string) (subnetworkRecord, bool) {
	if r, ok := s.world.GetResource(cloud, kindSubnetwork, subnetworkPath(project, region, name)); ok {
		var sub subnetworkRecord
		if err := json.Unmarshal(r.Body, &sub); err == nil {
			return sub, true
		}
	}
	if _, ok := s.world.Region(cloud, region); !ok {
		return subnetworkRecord{}, false
	}
	if n, ok := s.network(project, name); ok && n.Auto {
		return autoSubnetwork(n, region), true
	}
	return subnetworkRecord{}, false
}

func autoSubnetwork(n networkRecord, region string) subnetworkRecord {
	path := subnetworkPath(n.Project, region, n.Name)
	return subnetworkRecord{Project: n.Project, Region: region, Name: n.Name, Network: networkPath(n.Project, n.Name),
		Range: autoRange(region).String(), ID: stableID("subnetwork\x00" + path + "\x00" + fmt.Sprint(n.ID)), Created: n.Created}
}

// storedSubnetworks lists the subnetworks clients made in a project.
func (s *Server) storedSubnetworks(project string) []subnetworkRecord {
	var out []subnetworkRecord
	for _, r := range s.world.Resources(cloud, kindSubnetwork, nil) {
		var sub subnetworkRecord
		if json.Unmarshal(r.Body, &sub) == nil && sub.Project == project {
			out = append(out, sub)
		}
	}
	return out
}

// subnetworks lists a project's subnetworks of a region ("" for every
// region) that keep accepts, by region and name.
func (s *Server) subnetworks(project, region string, keep func(subnetworkRecord) bool) []subnetworkRecord {
	var out []subnetworkRecord
	for _, sub := range s.storedSubnetworks(project) {
		if region == "" || sub.Region == region {
			out = append(out, sub)
		}
	}
	for _, n := range s.networks(project) {
		if !n.Auto {
			continue
		}
		for _, reg := range s.world.Catalog().RegionsOf(cloud) {
			if region == "" || reg.Name == region {
				out = append(out, autoSubnetwork(n, reg.Name))
			}
		}
	}
	if keep != nil {
		out = slices.DeleteFunc(out, func(sub subnetworkRecord) bool { return !keep(sub) })
	}
	slices.SortFunc(out, func(a, b subnetworkRecord) int {
		return cmp.Or(cmp.Compare(a.Region, b.Region), cmp.Compare(a.Name, b.Name))
	})
	return out
}

// renderSubnetwork is a subnetwork as subnetworks.get returns it.
func renderSubnetwork(l links, sub subnetworkRecord) *computepb.Subnetwork {
	out := &computepb.Subnetwork{
		Kind:                  proto.String("compute#subnetwork"),
		Id:                    proto.Uint64(sub.ID),
		CreationTimestamp:     proto.String(timestamp(sub.Created)),
		Name:                  proto.String(sub.Name),
		Network:               proto.String(l.url(sub.Network)),
		IpCidrRange:           proto.String(sub.Range),
		GatewayAddress:        proto.String(sub.gateway().String()),
		Region:                proto.String(l.region(sub.Project, sub.Region)),
		SelfLink:              proto.String(l.url(sub.path())),
		PrivateIpGoogleAccess: proto.Bool(sub.PrivateIPGoogleAccess),
		Fingerprint:           proto.String(fingerprint(map[string]string{"range": sub.Range, "id": fmt.Sprint(sub.ID)})),
		Purpose:               proto.String("PRIVATE"),
		StackType:             proto.String("IPV4_ONLY"),
	}
	if sub.Description != "" {
		out.Description = proto.String(sub.Description)
	}
	return out
}

// insertSubnetwork serves subnetworks.insert: a subnetwork of an existing
// network, whose range is a private IPv4 range no other subnetwork of the
// network overlaps.
func (s *Server) insertSubnetwork(w http.ResponseWriter, r *http.Request, project, region string) error {
	var res computepb.Subnetwork
	if _, err := readInsert(r, &res, func(name string) error {
		return s.admitRegion(r, OpSubnetworkInsert, project, region, subnetworkPath(project, region, name))
	}); err != nil {
		return err
	}
	switch {
	case res.Network == nil:
		return requiredField("resource.network")
	case res.IpCidrRange == nil:
		return requiredField("resource.ipCidrRange")
	}
	l := linksOf(r)
	nref, ok := l.parseRef(res.GetNetwork(), ref{project: project, scope: "global", collection: "networks"})
	if !ok {
		return invalidField("resource.network", res.GetNetwork(), "The URL is malformed.")
	}
	n, ok := s.network(nref.project, nref.name)
	if !ok || nref.project != project {
		return invalidField("resource.network", nref.path(), "The referenced network resource cannot be found.")
	}
	prefix, err := netip.ParsePrefix(res.GetIpCidrRange())
	if err != nil || !prefix.Addr().Is4() || prefix.Masked() != prefix || prefix.Bits() > 29 || prefix.Bits() < 8 {
		return invalidField("resource.ipCidrRange", res.GetIpCidrRange(), "Invalid IPCidrRange: the range must be an IPv4 CIDR block between /8 and /29 with no bits set after its mask.")
	}
	if !prefix.Addr().IsPrivate() {
		return invalidField("resource.ipCidrRange", res.GetIpCidrRange(), "Invalid IPCidrRange: the range must be within the private ranges 10.0.0.0/8, 172.16.0.0/12 or 192.168.0.0/16.")
	}
	path := subnetworkPath(project, region, res.GetName())
	if _, exists := s.subnetwork(project, region, res.GetName()); exists {
		return alreadyExists(path)
	}
	for _, other := range s.subnetworks(project, "", func(sub subnetworkRecord) bool { return sub.Network == networkPath(project, n.Name) }) {
		if other.prefix().Overlaps(prefix) {
			return invalidField("resource.ipCidrRange", res.GetIpCidrRange(),
				fmt.Sprintf("Invalid IPCidrRange: %s conflicts with existing subnetwork '%s' in region '%s'.", prefix, other.Name, other.Region))
		}
	}
	now := s.world.Now()
	sub := subnetworkRecord{Project: project, Region: region, Name: res.GetName(), Description: res.GetDescription(),
		Network: networkPath(project, n.Name), Range: prefix.String(), PrivateIPGoogleAccess: res.GetPrivateIpGoogleAccess(),
		ID: stableID("subnetwork\x00" + path + "\x00" + now.String()), Created: now}
	body, _ := json.Marshal(sub)
	s.world.PutResource(sim.Resource{Cloud: cloud, Kind: kindSubnetwork, ID: path, Region: region, Body: body})
	op := s.startResourceOp(project, region, "insert", path, sub.ID)
	return writeProto(w, s.renderResourceOp(l, op))
}

// getSubnetwork serves subnetworks.get.
func (s *Server) getSubnetwork(w http.ResponseWriter, r *http.Request, project, region, name string) error {
	path := subnetworkPath(project, region, name)
	if err := s.admitRegion(r, OpSubnetworkGet, project, region, path); err != nil {
		return err
	}
	sub, ok := s.subnetwork(project, region, name)
	if !ok {
		return notFound(path)
	}
	return writeProto(w, renderSubnetwork(linksOf(r), sub))
}

// listSubnetworks serves subnetworks.list: a region's subnetworks by name.
func (s *Server) listSubnetworks(w http.ResponseWriter, r *http.Request, project, region string) error {
	collection := regionPath(project, region) + "/subnetworks"
	q, invalid := parseNameQuery(r, collection)
	if err := admitted(s.admitRegion(r, OpSubnetworkList, project, region, regionPath(project, region)), invalid); err != nil {
		return err
	}
	l := linksOf(r)
	items, next := page(r, collection, q, keyedSubnetworks(s.subnetworks(project, region, nil)))
	return writeList(w, l, collection, next, &computepb.SubnetworkList{
		Kind:  proto.String("compute#subnetworkList"),
		Items: renderAll(items, renderSubnetworkIn(l)),
	})
}

func keyedSubnetworks(subs []subnetworkRecord) []keyed[subnetworkRecord] {
	return keyedBy(subs, func(sub subnetworkRecord) (string, string) { return sub.Region, sub.Name })
}

// aggregatedSubnetworks serves subnetworks.aggregatedList: every region's
// subnetworks, paged across regions, keyed "regions/R", with a
// NO_RESULTS_ON_PAGE warning for regions without any on the page.
func (s *Server) aggregatedSubnetworks(w http.ResponseWriter, r *http.Request, project string) error {
	collection := "projects/" + project + "/aggregated/subnetworks"
	q, invalid := parseNameQuery(r, collection)
	if err := admitted(s.admitRegion(r, OpSubnetworkAggregatedList, project, "", "projects/"+project), invalid); err != nil {
		return err
	}
	l := linksOf(r)
	items, next := page(r, collection, q, keyedSubnetworks(s.subnetworks(project, "", nil)))
	return writeList(w, l, collection, next, &computepb.SubnetworkAggregatedList{
		Kind: proto.String("compute#subnetworkAggregatedList"),
		Items: aggregate(items, "regions/", s.allRegions(), renderSubnetworkIn(l),
			func(subs []*computepb.Subnetwork, warning *computepb.Warning) *computepb.SubnetworksScopedList {
				return &computepb.SubnetworksScopedList{Subnetworks: subs, Warning: warning}
			}),
	})
}

// renderSubnetworkIn renders the subnetworks of a page.
func renderSubnetworkIn(l links) func(keyed[subnetworkRecord]) *computepb.Subnetwork {
	return func(sub keyed[subnetworkRecord]) *computepb.Subnetwork { return renderSubnetwork(l, sub.item) }
}

// deleteSubnetwork serves subnetworks.delete for the subnetworks clients
// made; an auto-mode network's go only with their network.
func (s *Server) deleteSubnetwork(w http.ResponseWriter, r *http.Request, project, region, name string) error {
	_, idErr := requestIDOf(r)
	path := subnetworkPath(project, region, name)
	if err := s.admitRegion(r, OpSubnetworkDelete, project, region, path); err != nil {
		return err
	}
	if idErr != nil {
		return idErr
	}
	sub, ok := s.subnetwork(project, region, name)
	if !ok {
		return notFound(path)
	}
	if _, stored := s.world.GetResource(cloud, kindSubnetwork, path); !stored {
		return &apiError{Status: http.StatusBadRequest, Reason: "invalid",
			Message: fmt.Sprintf("The subnetwork resource '%s' belongs to an auto mode network and cannot be deleted on its own.", path)}
	}
	if insts := s.instancesOn(project, propSubnetwork, path); len(insts) > 0 {
		return inUse("subnetwork", path, insts[0].Scope+"/instances/"+insts[0].Name)
	}
	s.world.DeleteResource(cloud, kindSubnetwork, path)
	op := s.startResourceOp(project, region, "delete", path, sub.ID)
	return writeProto(w, s.renderResourceOp(linksOf(r), op))
}

// nicNetwork resolves an instance's network interface to the network and
// subnetwork it is on, as GCE does: no network means the default one; a
// subnetwork alone names its network; an auto-mode network without a
// subnetwork means its subnetwork of the instance's region; a custom-mode
// one needs a subnetwork, of that network and region.
func (s *Server) nicNetwork(l links, field, project, region string, nic *computepb.NetworkInterface) (subnetworkRecord, *apiError) {
	f := field + ".networkInterfaces[0]"
	var n networkRecord
	haveNetwork := nic.GetNetwork() != ""
	if haveNetwork || nic.GetSubnetwork() == "" {
		nref, ok := l.parseRef(cmp.Or(nic.GetNetwork(), defaultNetwork), ref{project: project, scope: "global", collection: "networks"})
		if !ok {
			return subnetworkRecord{}, invalidField(f+".network", nic.GetNetwork(), "The URL is malformed.")
		}
		found := false
		n, found = s.network(nref.project, nref.name)
		if !found || nref.project != project {
			return subnetworkRecord{}, invalidField(f+".network", nref.path(), "The referenced network resource cannot be found.")
		}
	}
	if nic.GetSubnetwork() == "" {
		if !n.Auto {
			return subnetworkRecord{}, invalidField(f, networkPath(n.Project, n.Name), "Subnetwork should be specified for custom subnetmode network")
		}
		return autoSubnetwork(n, region), nil
	}
	sref, ok := l.parseRef(nic.GetSubnetwork(), ref{project: project, scope: "regions", location: region, collection: "subnetworks"})
	if !ok {
		return subnetworkRecord{}, invalidField(f+".subnetwork", nic.GetSubnetwork(), "The URL is malformed.")
	}
	sub, found := s.subnetwork(sref.project, sref.location, sref.name)
	switch {
	case !found || sref.project != project:
		return subnetworkRecord{}, invalidField(f+".subnetwork", sref.path(), "The referenced subnetwork resource cannot be found.")
	case sref.location != region:
		return subnetworkRecord{}, invalidField(f+".subnetwork", sref.path(), "Subnetwork must be in the same region as the instance.")
	case haveNetwork && sub.Network != networkPath(n.Project, n.Name):
		return subnetworkRecord{}, invalidField(f+".subnetwork", sref.path(), "Subnetwork must belong to the network "+networkPath(n.Project, n.Name)+".")
	}
	return sub, nil
}

// addressIn is an instance's internal address in its subnetwork's range,
// derived from its place in the world so that it is the same on every
// read and restart; the first two addresses of a range are the
// network's and its gateway's, and the last two are reserved too.
func addressIn(prefix netip.Prefix, seq uint64) string {
	size := uint64(1) << (32 - prefix.Bits())
	if size <= 4 {
		return prefix.Addr().String()
	}
	a := prefix.Addr().As4()
	base := uint64(a[0])<<24 | uint64(a[1])<<16 | uint64(a[2])<<8 | uint64(a[3])
	n := base + 2 + seq%(size-4)
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}).String()
}
