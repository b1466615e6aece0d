// SPDX-License-Identifier: Apache-2.0

package ec2sim

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/netip"
	"slices"
	"strings"

	"github.com/gpufleet/gpufleet/providers/sim"
)

// The network model: VPCs, their subnets and security groups, just enough
// for a launch's references to be checked as EC2 checks them and for the
// AWS CLI's create, describe and delete calls to work. Every region has
// what a new account has, computed rather than stored: a default VPC,
// 172.31.0.0/16, with a default subnet, a /20, in each zone, and every
// VPC has its "default" security group. What clients create, and any
// default they change or delete, lives in the world's resource store, so
// it outlives the front.

// Resource kinds in the world's store.
const (
	kindVPC           = "vpc"
	kindSubnet        = "subnet"
	kindSecurityGroup = "securityGroup"
)

const (
	defaultVPCCIDR = "172.31.0.0/16"
	// defaultSubnetBits is the prefix length of a default subnet.
	defaultSubnetBits = 20
	defaultGroupName  = "default"
)

type vpcRecord struct {
	ID      string            `json:"id"`
	CIDR    string            `json:"cidr"`
	Default bool              `json:"default,omitempty"`
	Tags    map[string]string `json:"tags,omitempty"`
	// Deleted marks a default object a client deleted: the fixture stays
	// computed, and the record says it is gone.
	Deleted bool `json:"deleted,omitempty"`
}

type subnetRecord struct {
	ID   string `json:"id"`
	VPC  string `json:"vpc"`
	Zone string `json:"zone"`
	CIDR string `json:"cidr"`
	// Default is EC2's defaultForAz; MapPublicIP its mapPublicIpOnLaunch,
	// true for default subnets only unless changed.
	Default     bool              `json:"default,omitempty"`
	MapPublicIP bool              `json:"mapPublicIp,omitempty"`
	Tags        map[string]string `json:"tags,omitempty"`
	Deleted     bool              `json:"deleted,omitempty"`
}

// permission is one rule of a security group: a protocol ("-1" for all)
// and port range, from (ingress) or to (egress) CIDRs and groups.
type permission struct {
	Protocol string   `json:"protocol"`
	FromPort *int     `json:"fromPort,omitempty"`
	ToPort   *int     `json:"toPort,omitempty"`
	CIDRs    []string `json:"cidrs,omitempty"`
	Groups   []string `json:"groups,omitempty"`
}

type securityGroupRecord struct {
	ID          string            `json:"id"`
	VPC         string            `json:"vpc"`
	Name        string            `json:"name"`
	Description string            `json:"description"`
	Ingress     []permission      `json:"ingress,omitempty"`
	Egress      []permission      `json:"egress,omitempty"`
	Tags        map[string]string `json:"tags,omitempty"`
	Deleted     bool              `json:"deleted,omitempty"`
}

// id is a record's key in the store, for the generic listings.
func (v vpcRecord) id() string           { return v.ID }
func (v subnetRecord) id() string        { return v.ID }
func (v securityGroupRecord) id() string { return v.ID }

// The default objects' ids derive from where they are, so they are the
// same in every world and across restarts.

func defaultSubnet(zone string) string { return hashID("subnet", zone) }
func vpcID(region string) string       { return hashID("vpc", region) }

// defaultSecurityGroup is the default VPC's default group; its seed is
// apart from the VPC's, whose id would otherwise share its digits.
func defaultSecurityGroup(region string) string { return hashID("sg", "default-group/"+region) }

// defaultGroupOf is the id of a VPC's default group.
func defaultGroupOf(region string, v vpcRecord) string {
	if v.Default {
		return defaultSecurityGroup(region)
	}
	return hashID("sg", v.ID)
}

func defaultVPC(region string) vpcRecord {
	return vpcRecord{ID: vpcID(region), CIDR: defaultVPCCIDR, Default: true}
}

// defaultSubnets are the default VPC's subnets, one /20 a zone in the
// order the catalog lists the zones, as a new account's are laid out.
func (s *Server) defaultSubnets(region string) []subnetRecord {
	r, ok := s.world.Region(cloud, region)
	if !ok {
		return nil
	}
	base := netip.MustParsePrefix(defaultVPCCIDR).Addr().As4()
	var out []subnetRecord
	for i, zone := range r.Zones {
		a := base
		a[2] = byte(i * (1 << (24 - defaultSubnetBits)))
		prefix := netip.PrefixFrom(netip.AddrFrom4(a), defaultSubnetBits)
		out = append(out, subnetRecord{ID: defaultSubnet(zone), VPC: vpcID(region), Zone: zone, CIDR: prefix.String(), Default: true, MapPublicIP: true})
	}
	return out
}

// defaultGroup is a VPC's default group as EC2 creates it: traffic from
// its own members in, everything out.
func defaultGroup(region string, v vpcRecord) securityGroupRecord {
	id := defaultGroupOf(region, v)
	return securityGroupRecord{
		ID: id, VPC: v.ID, Name: defaultGroupName, Description: "default VPC security group",
		Ingress: []permission{{Protocol: "-1", Groups: []string{id}}},
		Egress:  []permission{{Protocol: "-1", CIDRs: []string{"0.0.0.0/0"}}},
	}
}

// stored reads the region's records of a kind from the world's store, by
// id, deleted ones included.
func stored[T any](s *Server, kind, region string, id func(T) string) (map[string]T, []T) {
	byID := map[string]T{}
	var order []T
	for _, r := range s.world.Resources(cloud, kind, func(r sim.Resource) bool { return r.Region == region }) {
		var v T
		if json.Unmarshal(r.Body, &v) != nil {
			continue
		}
		byID[id(v)] = v
		order = append(order, v)
	}
	return byID, order
}

// merge lists the fixtures, each replaced by its stored record if there
// is one, then the records that are no fixture, dropping deleted ones.
func merge[T any](fixtures []T, byID map[string]T, order []T, id func(T) string, deleted func(T) bool) []T {
	var out []T
	seen := map[string]bool{}
	for _, f := range fixtures {
		seen[id(f)] = true
		if v, ok := byID[id(f)]; ok {
			f = v
		}
		if !deleted(f) {
			out = append(out, f)
		}
	}
	for _, v := range order {
		if !seen[id(v)] && !deleted(v) {
			out = append(out, v)
		}
	}
	return out
}

func (s *Server) vpcs(region string) []vpcRecord {
	if _, ok := s.world.Region(cloud, region); !ok {
		return nil
	}
	byID, order := stored(s, kindVPC, region, vpcRecord.id)
	return merge([]vpcRecord{defaultVPC(region)}, byID, order, vpcRecord.id, func(v vpcRecord) bool { return v.Deleted })
}

func (s *Server) subnets(region string) []subnetRecord {
	byID, order := stored(s, kindSubnet, region, subnetRecord.id)
	return merge(s.defaultSubnets(region), byID, order, subnetRecord.id, func(v subnetRecord) bool { return v.Deleted })
}

// securityGroups lists the groups of the region's VPCs: each VPC's
// default group first, then the groups clients created.
func (s *Server) securityGroups(region string) []securityGroupRecord {
	var fixtures []securityGroupRecord
	for _, v := range s.vpcs(region) {
		fixtures = append(fixtures, defaultGroup(region, v))
	}
	byID, order := stored(s, kindSecurityGroup, region, securityGroupRecord.id)
	return merge(fixtures, byID, order, securityGroupRecord.id, func(v securityGroupRecord) bool { return v.Deleted })
}

func find[T any](items []T, match func(T) bool) (T, bool) {
	if i := slices.IndexFunc(items, match); i >= 0 {
		return items[i], true
	}
	var zero T
	return zero, false
}

func (s *Server) findVPC(region, id string) (vpcRecord, bool) {
	return find(s.vpcs(region), func(v vpcRecord) bool { return v.ID == id })
}

func (s *Server) findSubnet(region, id string) (subnetRecord, bool) {
	return find(s.subnets(region), func(v subnetRecord) bool { return v.ID == id })
}

func (s *Server) findSecurityGroup(region, id string) (securityGroupRecord, bool) {
	return find(s.securityGroups(region), func(v securityGroupRecord) bool { return v.ID == id })
}

// defaultVPCOf is the region's default VPC, unless a client deleted it.
func (s *Server) defaultVPCOf(region string) (vpcRecord, bool) {
	return find(s.vpcs(region), func(v vpcRecord) bool { return v.Default })
}

// put stores a record of the network model.
func (s *Server) put(kind, region, id string, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("encoding a %s: %v", kind, err)) // the records are plain data
	}
	s.world.PutResource(sim.Resource{Cloud: cloud, Kind: kind, ID: id, Region: region, Body: body})
}

// remove deletes a record, or marks a default object deleted, whose
// fixture would otherwise come back.
func (s *Server) remove(kind, region, id string, fixture bool, tombstone any) {
	if fixture {
		s.put(kind, region, id, tombstone)
		return
	}
	s.world.DeleteResource(cloud, kind, id)
}

// newNetworkID makes an id for a created object from what it is and when,
// so ids repeat from run to run without drawing on the world's seeded
// source (which would move every later instance id).
func (s *Server) newNetworkID(prefix, kind, region, what string) string {
	for n := 0; ; n++ {
		id := hashID(prefix, fmt.Sprintf("%s/%s/%s/%s/%d", region, kind, what, s.world.Now().Format("2006-01-02T15:04:05.000000000"), n))
		if _, taken := s.world.GetResource(cloud, kind, id); !taken {
			return id
		}
	}
}

// addressRange is the addresses a subnet hands out: all but the first four
// and the last, which AWS keeps.
func addressRange(cidr string) (first netip.Addr, count int, ok bool) {
	p, err := netip.ParsePrefix(cidr)
	if err != nil || !p.Addr().Is4() {
		return netip.Addr{}, 0, false
	}
	size := 1 << (32 - p.Bits())
	first = p.Masked().Addr()
	for range 4 {
		first = first.Next()
	}
	return first, size - 5, true
}

// usedAddresses are the private addresses the region's instances that
// still hold theirs (all but the terminated) have, by subnet.
func (s *Server) usedAddresses(region string) map[string]map[string]bool {
	used := map[string]map[string]bool{}
	for _, inst := range s.world.List(cloud, func(inst *sim.Instance) bool {
		return inst.Region == region && stateName(inst.State) != "terminated"
	}) {
		for _, nic := range interfacesOf(inst) {
			if nic.Address == "" {
				continue
			}
			if used[nic.Subnet] == nil {
				used[nic.Subnet] = map[string]bool{}
			}
			used[nic.Subnet][nic.Address] = true
		}
	}
	return used
}

// freeAddresses counts what a subnet has left.
func freeAddresses(sn subnetRecord, used map[string]bool) int {
	_, count, ok := addressRange(sn.CIDR)
	if !ok {
		return 0
	}
	return max(count-len(used), 0)
}

// nextAddress takes the lowest free address of a subnet and marks it used.
func nextAddress(sn subnetRecord, used map[string]bool) (string, bool) {
	first, count, ok := addressRange(sn.CIDR)
	if !ok {
		return "", false
	}
	a := first
	for range count {
		if !used[a.String()] {
			used[a.String()] = true
			return a.String(), true
		}
		a = a.Next()
	}
	return "", false
}

// publicAddress is the public IPv4 address of an instance's interface,
// derived from where it sits in its reservation so that it repeats.
func publicAddress(seed string) string {
	h := hashID("", seed)[1:]
	var b [3]byte
	fmt.Sscanf(h[:6], "%02x%02x%02x", &b[0], &b[1], &b[2])
	return fmt.Sprintf("54.%d.%d.%d", b[0], b[1], max(b[2]%254, 1))
}

// publicDNSName is the name EC2 gives a public address in a VPC with DNS
// hostnames on, as the default VPC has them.
func publicDNSName(region, ip string) string {
	host := "ec2-" + strings.ReplaceAll(ip, ".", "-")
	if region == "us-east-1" {
		return host + ".compute-1.amazonaws.com"
	}
	return host + "." + region + ".compute.amazonaws.com"
}

func privateDNSName(region, ip string) string {
	return fmt.Sprintf("ip-%s.%s", strings.ReplaceAll(ip, ".", "-"), internalDomain(region))
}

func (s *Server) arn(region, resource, id string) string {
	return fmt.Sprintf("arn:%s:ec2:%s:%s:%s/%s", partition(region), region, s.opts.AccountID, resource, id)
}

// parseCIDR parses a CIDR a client gave for a VPC or subnet: IPv4, its host
// bits clear, from /16 to /28 as EC2 allows.
func parseCIDR(raw, param string) (netip.Prefix, *apiError) {
	p, err := netip.ParsePrefix(raw)
	if err != nil || !p.Addr().Is4() || p.Masked() != p {
		return netip.Prefix{}, invalidValue("Value (%s) for parameter %s is invalid. This is not a valid CIDR block.", raw, param)
	}
	return p, nil
}

func validPrefixLength(p netip.Prefix) bool { return p.Bits() >= 16 && p.Bits() <= 28 }

// holds reports whether outer contains all of inner.
func holds(outer, inner netip.Prefix) bool {
	return outer.Bits() <= inner.Bits() && outer.Contains(inner.Addr())
}

// liveInstances lists the region's instances not yet terminated that pass
// keep, which hold on to their subnet and groups.
func (s *Server) liveInstances(region string, keep func(inst *sim.Instance) bool) []*sim.Instance {
	return s.world.List(cloud, func(inst *sim.Instance) bool {
		return inst.Region == region && stateName(inst.State) != "terminated" && keep(inst)
	})
}

func dependencyViolation(format string, args ...any) *apiError {
	return &apiError{Status: http.StatusBadRequest, Code: "DependencyViolation", Message: fmt.Sprintf(format, args...)}
}

// networkKind is the kind of the network model a well-formed id names,
// or "".
func networkKind(id string) string {
	switch {
	case vpcIDPattern.MatchString(id):
		return kindVPC
	case subnetIDPattern.MatchString(id):
		return kindSubnet
	case groupID.MatchString(id):
		return kindSecurityGroup
	}
	return ""
}

// tagNetwork checks that CreateTags can add tags to a VPC, subnet or
// group, and returns what adds them, so that a call naming several
// resources tags all or none. The caller holds s.mutations.
func (s *Server) tagNetwork(region, id string, set map[string]string) (func(), *apiError) {
	merged := func(have map[string]string) (map[string]string, *apiError) {
		out := maps.Clone(have)
		if out == nil {
			out = map[string]string{}
		}
		maps.Copy(out, set)
		if len(out) > maxTags {
			return nil, tagLimitExceeded()
		}
		return out, nil
	}
	switch networkKind(id) {
	case kindVPC:
		v, ok := s.findVPC(region, id)
		if !ok {
			return nil, vpcNotFound(id)
		}
		tags, apiErr := merged(v.Tags)
		if apiErr != nil {
			return nil, apiErr
		}
		v.Tags = tags
		return func() { s.put(kindVPC, region, id, v) }, nil
	case kindSubnet:
		sn, ok := s.findSubnet(region, id)
		if !ok {
			return nil, subnetNotFound(id)
		}
		tags, apiErr := merged(sn.Tags)
		if apiErr != nil {
			return nil, apiErr
		}
		sn.Tags = tags
		return func() { s.put(kindSubnet, region, id, sn) }, nil
	default:
		g, ok := s.findSecurityGroup(region, id)
		if !ok {
			return nil, groupNotFound(id)
		}
		tags, apiErr := merged(g.Tags)
		if apiErr != nil {
			return nil, apiErr
		}
		g.Tags = tags
		return func() { s.put(kindSecurityGroup, region, id, g) }, nil
	}
}
