// SPDX-License-Identifier: Apache-2.0

package ec2sim

import (
	"encoding/xml"
	"fmt"
	"net/http"
	"net/netip"
	"regexp"
	"strconv"
)

var vpcIDPattern = regexp.MustCompile(`^vpc-([0-9a-f]{8}|[0-9a-f]{17})$`)

// maxVPCs is EC2's default quota of VPCs a region.
const maxVPCs = 5

type cidrBlockStateXML struct {
	State string `xml:"state"`
}

type cidrAssociationXML struct {
	AssociationID string            `xml:"associationId"`
	CIDRBlock     string            `xml:"cidrBlock"`
	State         cidrBlockStateXML `xml:"cidrBlockState"`
}

type vpcXML struct {
	VpcID            string               `xml:"vpcId"`
	OwnerID          string               `xml:"ownerId"`
	State            string               `xml:"state"`
	CIDRBlock        string               `xml:"cidrBlock"`
	CIDRAssociations []cidrAssociationXML `xml:"cidrBlockAssociationSet>item"`
	DHCPOptionsID    string               `xml:"dhcpOptionsId"`
	Tags             []tagXML             `xml:"tagSet>item"`
	InstanceTenancy  string               `xml:"instanceTenancy"`
	IsDefault        bool                 `xml:"isDefault"`
}

type createVpcResponse struct {
	XMLName   xml.Name `xml:"CreateVpcResponse"`
	Xmlns     string   `xml:"xmlns,attr"`
	RequestID string   `xml:"requestId"`
	Vpc       vpcXML   `xml:"vpc"`
}

type describeVpcsResponse struct {
	XMLName   xml.Name `xml:"DescribeVpcsResponse"`
	Xmlns     string   `xml:"xmlns,attr"`
	RequestID string   `xml:"requestId"`
	Vpcs      []vpcXML `xml:"vpcSet>item"`
	NextToken string   `xml:"nextToken,omitempty"`
}

func vpcNotFound(id string) *apiError {
	return &apiError{Status: http.StatusBadRequest, Code: "InvalidVpcID.NotFound", Message: fmt.Sprintf("The vpc ID '%s' does not exist", id)}
}

// renderVPC draws a VPC, available once created: EC2 answers CreateVpc
// with pending and has it available at once.
func (s *Server) renderVPC(region string, v vpcRecord, state string) vpcXML {
	return vpcXML{
		VpcID:     v.ID,
		OwnerID:   s.opts.AccountID,
		State:     state,
		CIDRBlock: v.CIDR,
		CIDRAssociations: []cidrAssociationXML{{
			AssociationID: hashID("vpc-cidr-assoc", v.ID), CIDRBlock: v.CIDR, State: cidrBlockStateXML{State: "associated"},
		}},
		// Every VPC of a region gets the region's default DHCP options.
		DHCPOptionsID:   hashID("dopt", region),
		Tags:            sortedTags(v.Tags),
		InstanceTenancy: "default",
		IsDefault:       v.Default,
	}
}

var vpcFilterNames = map[string]bool{
	"cidr": true, "cidr-block-association.cidr-block": true, "cidr-block-association.association-id": true,
	"cidr-block-association.state": true, "dhcp-options-id": true, "is-default": true, "owner-id": true,
	"state": true, "tag-key": true, "vpc-id": true,
}

func vpcValues(x vpcXML) map[string][]string {
	a := x.CIDRAssociations[0]
	return map[string][]string{
		"cidr": {x.CIDRBlock}, "cidr-block-association.cidr-block": {a.CIDRBlock},
		"cidr-block-association.association-id": {a.AssociationID}, "cidr-block-association.state": {a.State.State},
		"dhcp-options-id": {x.DHCPOptionsID}, "is-default": {strconv.FormatBool(x.IsDefault)},
		"owner-id": {x.OwnerID}, "state": {x.State}, "vpc-id": {x.VpcID},
	}
}

func (s *Server) createVpc(req *request) (any, *apiError) {
	if apiErr := s.admit(req); apiErr != nil {
		return nil, apiErr
	}
	form := req.form
	raw := form.Get("CidrBlock")
	if raw == "" {
		return nil, &apiError{Status: http.StatusBadRequest, Code: "MissingParameter", Message: "Either 'cidrBlock' or 'ipv4IpamPoolId' should be provided."}
	}
	prefix, apiErr := parseCIDR(raw, "cidrBlock")
	if apiErr != nil {
		return nil, apiErr
	}
	if !validPrefixLength(prefix) {
		return nil, &apiError{Status: http.StatusBadRequest, Code: "InvalidVpc.Range", Message: fmt.Sprintf("The CIDR '%s' is invalid.", raw)}
	}
	switch t := form.Get("InstanceTenancy"); t {
	case "", "default":
	case "dedicated":
		return nil, &apiError{Status: http.StatusBadRequest, Code: "Unsupported", Message: "Dedicated tenancy is not supported by this endpoint."}
	default:
		return nil, invalidValue("Value (%s) for parameter instanceTenancy is invalid.", t)
	}
	tags, apiErr := specTags(form, "vpc")
	if apiErr != nil {
		return nil, apiErr
	}

	s.mutations.Lock()
	defer s.mutations.Unlock()
	if len(s.vpcs(req.region)) >= maxVPCs {
		return nil, &apiError{Status: http.StatusBadRequest, Code: "VpcLimitExceeded", Message: "The maximum number of VPCs has been reached."}
	}
	if apiErr := req.dryRunStop(); apiErr != nil {
		return nil, apiErr
	}
	v := vpcRecord{ID: s.newNetworkID("vpc", kindVPC, req.region, prefix.String()), CIDR: prefix.String(), Tags: tags}
	s.put(kindVPC, req.region, v.ID, v)
	return createVpcResponse{Xmlns: xmlns, RequestID: req.id, Vpc: s.renderVPC(req.region, v, "pending")}, nil
}

func (s *Server) describeVpcs(req *request) (any, *apiError) {
	q, apiErr := s.openDescribe(req, vpcFilterNames, "vpcs")
	if apiErr != nil {
		return nil, apiErr
	}
	picked, apiErr := pickByID(s.vpcs(req.region), unique(list(req.form, "VpcId")), vpcRecord.id, vpcNotFound)
	if apiErr != nil {
		return nil, apiErr
	}
	vpcs, next, apiErr := selectPage(q, picked, func(v vpcRecord) (vpcXML, bool) {
		x := s.renderVPC(req.region, v, "available")
		return x, matchesTagged(q.filters, vpcValues(x), v.Tags)
	})
	if apiErr != nil {
		return nil, apiErr
	}
	return describeVpcsResponse{Xmlns: xmlns, RequestID: req.id, Vpcs: vpcs, NextToken: next}, nil
}

// deleteVpc removes a VPC that has nothing left in it but its default
// group, which goes with it.
func (s *Server) deleteVpc(req *request) (any, *apiError) {
	id, apiErr := s.targetID(req, "VpcId", vpcIDPattern, "InvalidVpcID.Malformed", "vpc")
	if apiErr != nil {
		return nil, apiErr
	}

	s.mutations.Lock()
	defer s.mutations.Unlock()
	v, ok := s.findVPC(req.region, id)
	if !ok {
		return nil, vpcNotFound(id)
	}
	inUse := false
	for _, sn := range s.subnets(req.region) {
		inUse = inUse || sn.VPC == id
	}
	def := defaultGroupOf(req.region, v)
	for _, g := range s.securityGroups(req.region) {
		inUse = inUse || g.VPC == id && g.ID != def
	}
	if inUse {
		return nil, dependencyViolation("The vpc '%s' has dependencies and cannot be deleted.", id)
	}
	if apiErr := req.dryRunStop(); apiErr != nil {
		return nil, apiErr
	}
	s.world.DeleteResource(cloud, kindSecurityGroup, def)
	s.remove(kindVPC, req.region, id, v.Default, vpcRecord{ID: id, Default: true, Deleted: true})
	return s.done(req), nil
}

// vpcPrefix is a VPC's CIDR.
func vpcPrefix(v vpcRecord) netip.Prefix {
	p, _ := netip.ParsePrefix(v.CIDR)
	return p
}
