// SPDX-License-Identifier: Apache-2.0

package ec2sim

import (
	"encoding/xml"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/gpufleet/gpufleet/providers/sim"
)

// maxSecurityGroupName is EC2's limit on a group's name and description.
const maxSecurityGroupName = 255

type groupPairXML struct {
	UserID  string `xml:"userId"`
	GroupID string `xml:"groupId"`
}

type ipRangeXML struct {
	CIDRIP string `xml:"cidrIp"`
}

type ipPermissionXML struct {
	IPProtocol string         `xml:"ipProtocol"`
	FromPort   *int           `xml:"fromPort,omitempty"`
	ToPort     *int           `xml:"toPort,omitempty"`
	Groups     []groupPairXML `xml:"groups>item"`
	IPRanges   []ipRangeXML   `xml:"ipRanges>item"`
	IPv6Ranges []struct{}     `xml:"ipv6Ranges>item"`
	PrefixList []struct{}     `xml:"prefixListIds>item"`
}

type securityGroupXML struct {
	OwnerID             string            `xml:"ownerId"`
	GroupID             string            `xml:"groupId"`
	GroupName           string            `xml:"groupName"`
	GroupDescription    string            `xml:"groupDescription"`
	VpcID               string            `xml:"vpcId"`
	IPPermissions       []ipPermissionXML `xml:"ipPermissions>item"`
	IPPermissionsEgress []ipPermissionXML `xml:"ipPermissionsEgress>item"`
	Tags                []tagXML          `xml:"tagSet>item"`
	SecurityGroupArn    string            `xml:"securityGroupArn"`
}

type createSecurityGroupResponse struct {
	XMLName          xml.Name `xml:"CreateSecurityGroupResponse"`
	Xmlns            string   `xml:"xmlns,attr"`
	RequestID        string   `xml:"requestId"`
	Return           bool     `xml:"return"`
	GroupID          string   `xml:"groupId"`
	SecurityGroupArn string   `xml:"securityGroupArn"`
	Tags             []tagXML `xml:"tagSet>item"`
}

type describeSecurityGroupsResponse struct {
	XMLName   xml.Name           `xml:"DescribeSecurityGroupsResponse"`
	Xmlns     string             `xml:"xmlns,attr"`
	RequestID string             `xml:"requestId"`
	Groups    []securityGroupXML `xml:"securityGroupInfo>item"`
	NextToken string             `xml:"nextToken,omitempty"`
}

type deleteSecurityGroupResponse struct {
	XMLName   xml.Name `xml:"DeleteSecurityGroupResponse"`
	Xmlns     string   `xml:"xmlns,attr"`
	RequestID string   `xml:"requestId"`
	Return    bool     `xml:"return"`
	GroupID   string   `xml:"groupId"`
}

type securityGroupRuleXML struct {
	RuleID       string `xml:"securityGroupRuleId"`
	GroupID      string `xml:"groupId"`
	GroupOwnerID string `xml:"groupOwnerId"`
	IsEgress     bool   `xml:"isEgress"`
	IPProtocol   string `xml:"ipProtocol"`
	FromPort     int    `xml:"fromPort"`
	ToPort       int    `xml:"toPort"`
	CIDRIPv4     string `xml:"cidrIpv4,omitempty"`
	Referenced   *struct {
		GroupID string `xml:"groupId"`
		UserID  string `xml:"userId"`
	} `xml:"referencedGroupInfo,omitempty"`
}

type authorizeResponse struct {
	XMLName   xml.Name
	Xmlns     string                 `xml:"xmlns,attr"`
	RequestID string                 `xml:"requestId"`
	Return    bool                   `xml:"return"`
	Rules     []securityGroupRuleXML `xml:"securityGroupRuleSet>item"`
}

func groupNotFound(id string) *apiError {
	return &apiError{Status: http.StatusBadRequest, Code: "InvalidGroup.NotFound", Message: fmt.Sprintf("The security group '%s' does not exist", id)}
}

func groupNameNotFound(name, vpc string) *apiError {
	return &apiError{Status: http.StatusBadRequest, Code: "InvalidGroup.NotFound", Message: fmt.Sprintf("The security group '%s' does not exist in default VPC '%s'", name, vpc)}
}

func (s *Server) renderPermissions(perms []permission) []ipPermissionXML {
	var out []ipPermissionXML
	for _, p := range perms {
		x := ipPermissionXML{IPProtocol: p.Protocol, FromPort: p.FromPort, ToPort: p.ToPort}
		for _, g := range p.Groups {
			x.Groups = append(x.Groups, groupPairXML{UserID: s.opts.AccountID, GroupID: g})
		}
		for _, c := range p.CIDRs {
			x.IPRanges = append(x.IPRanges, ipRangeXML{CIDRIP: c})
		}
		out = append(out, x)
	}
	return out
}

func (s *Server) renderSecurityGroup(region string, g securityGroupRecord) securityGroupXML {
	return securityGroupXML{
		OwnerID:             s.opts.AccountID,
		GroupID:             g.ID,
		GroupName:           g.Name,
		GroupDescription:    g.Description,
		VpcID:               g.VPC,
		IPPermissions:       s.renderPermissions(g.Ingress),
		IPPermissionsEgress: s.renderPermissions(g.Egress),
		Tags:                sortedTags(g.Tags),
		SecurityGroupArn:    s.arn(region, "security-group", g.ID),
	}
}

var securityGroupFilterNames = map[string]bool{
	"description": true, "group-id": true, "group-name": true, "owner-id": true, "tag-key": true, "vpc-id": true,
	"ip-permission.cidr": true, "ip-permission.from-port": true, "ip-permission.group-id": true,
	"ip-permission.protocol": true, "ip-permission.to-port": true, "ip-permission.user-id": true,
	"egress.ip-permission.cidr": true, "egress.ip-permission.from-port": true, "egress.ip-permission.group-id": true,
	"egress.ip-permission.protocol": true, "egress.ip-permission.to-port": true, "egress.ip-permission.user-id": true,
}

func (s *Server) securityGroupValues(g securityGroupRecord) map[string][]string {
	v := map[string][]string{
		"description": {g.Description}, "group-id": {g.ID}, "group-name": {g.Name},
		"owner-id": {s.opts.AccountID}, "vpc-id": {g.VPC},
	}
	for prefix, perms := range map[string][]permission{"ip-permission.": g.Ingress, "egress.ip-permission.": g.Egress} {
		for _, p := range perms {
			v[prefix+"protocol"] = append(v[prefix+"protocol"], p.Protocol)
			v[prefix+"cidr"] = append(v[prefix+"cidr"], p.CIDRs...)
			v[prefix+"group-id"] = append(v[prefix+"group-id"], p.Groups...)
			if len(p.Groups) > 0 {
				v[prefix+"user-id"] = append(v[prefix+"user-id"], s.opts.AccountID)
			}
			if p.FromPort != nil {
				v[prefix+"from-port"] = append(v[prefix+"from-port"], strconv.Itoa(*p.FromPort))
			}
			if p.ToPort != nil {
				v[prefix+"to-port"] = append(v[prefix+"to-port"], strconv.Itoa(*p.ToPort))
			}
		}
	}
	return v
}

// groupVPC is the VPC a call about groups by name, or a create, is about:
// the one it names, else the default VPC.
func (s *Server) groupVPC(region, id string) (vpcRecord, *apiError) {
	if id != "" {
		v, ok := s.findVPC(region, id)
		if !ok {
			return vpcRecord{}, vpcNotFound(id)
		}
		return v, nil
	}
	v, ok := s.defaultVPCOf(region)
	if !ok {
		return vpcRecord{}, &apiError{Status: http.StatusBadRequest, Code: "VPCIdNotSpecified", Message: "No default VPC for this user"}
	}
	return v, nil
}

func (s *Server) createSecurityGroup(req *request) (any, *apiError) {
	if apiErr := s.admit(req); apiErr != nil {
		return nil, apiErr
	}
	form := req.form
	name, description := form.Get("GroupName"), form.Get("GroupDescription")
	switch {
	case name == "":
		return nil, missingParameter("GroupName")
	case description == "":
		return nil, missingParameter("GroupDescription")
	case len(name) > maxSecurityGroupName:
		return nil, invalidValue("Value (%s) for parameter groupName is invalid. The length must be at most %d characters.", name, maxSecurityGroupName)
	case len(description) > maxSecurityGroupName:
		return nil, invalidValue("Value (%s) for parameter GroupDescription is invalid. The length must be at most %d characters.", description, maxSecurityGroupName)
	case strings.HasPrefix(strings.ToLower(name), "sg-"):
		return nil, invalidValue("Group names may not be in the format sg-*.")
	case name == defaultGroupName:
		return nil, &apiError{Status: http.StatusBadRequest, Code: "InvalidGroup.Reserved", Message: "The security group 'default' is reserved"}
	}
	tags, apiErr := specTags(form, "security-group")
	if apiErr != nil {
		return nil, apiErr
	}

	s.mutations.Lock()
	defer s.mutations.Unlock()
	v, apiErr := s.groupVPC(req.region, form.Get("VpcId"))
	if apiErr != nil {
		return nil, apiErr
	}
	for _, g := range s.securityGroups(req.region) {
		if g.VPC == v.ID && g.Name == name {
			return nil, &apiError{Status: http.StatusBadRequest, Code: "InvalidGroup.Duplicate", Message: fmt.Sprintf("The security group '%s' already exists for VPC '%s'", name, v.ID)}
		}
	}
	if apiErr := req.dryRunStop(); apiErr != nil {
		return nil, apiErr
	}
	// A new group lets everything out and nothing in.
	g := securityGroupRecord{
		ID: s.newNetworkID("sg", kindSecurityGroup, req.region, v.ID+"/"+name), VPC: v.ID, Name: name, Description: description,
		Egress: []permission{{Protocol: "-1", CIDRs: []string{"0.0.0.0/0"}}}, Tags: tags,
	}
	s.put(kindSecurityGroup, req.region, g.ID, g)
	return createSecurityGroupResponse{Xmlns: xmlns, RequestID: req.id, Return: true, GroupID: g.ID,
		SecurityGroupArn: s.arn(req.region, "security-group", g.ID), Tags: sortedTags(tags)}, nil
}

func (s *Server) describeSecurityGroups(req *request) (any, *apiError) {
	q, apiErr := s.openDescribe(req, securityGroupFilterNames, "securitygroups")
	if apiErr != nil {
		return nil, apiErr
	}
	ids, names := unique(list(req.form, "GroupId")), unique(list(req.form, "GroupName"))
	if apiErr := checkGroups(ids); apiErr != nil {
		return nil, apiErr
	}
	all := s.securityGroups(req.region)
	var picked []securityGroupRecord
	// A call that names groups by name alone wants only those.
	if len(ids) > 0 || len(names) == 0 {
		if picked, apiErr = pickByID(all, ids, securityGroupRecord.id, groupNotFound); apiErr != nil {
			return nil, apiErr
		}
	}
	if len(names) > 0 {
		// Names are looked up in the default VPC, where they are unique.
		v, apiErr := s.groupVPC(req.region, "")
		if apiErr != nil {
			return nil, apiErr
		}
		for _, name := range names {
			g, ok := find(all, func(g securityGroupRecord) bool { return g.VPC == v.ID && g.Name == name })
			if !ok {
				return nil, groupNameNotFound(name, v.ID)
			}
			if !slices.ContainsFunc(picked, func(p securityGroupRecord) bool { return p.ID == g.ID }) {
				picked = append(picked, g)
			}
		}
	}
	groups, next, apiErr := selectPage(q, picked, func(g securityGroupRecord) (securityGroupXML, bool) {
		if !matchesTagged(q.filters, s.securityGroupValues(g), g.Tags) {
			return securityGroupXML{}, false
		}
		return s.renderSecurityGroup(req.region, g), true
	})
	if apiErr != nil {
		return nil, apiErr
	}
	return describeSecurityGroupsResponse{Xmlns: xmlns, RequestID: req.id, Groups: groups, NextToken: next}, nil
}

// securityGroupOf is the group a call names by id, or by name in the
// default VPC.
func (s *Server) securityGroupOf(req *request) (securityGroupRecord, *apiError) {
	id, name := req.form.Get("GroupId"), req.form.Get("GroupName")
	switch {
	case id != "":
		if apiErr := checkGroups([]string{id}); apiErr != nil {
			return securityGroupRecord{}, apiErr
		}
		g, ok := s.findSecurityGroup(req.region, id)
		if !ok {
			return securityGroupRecord{}, groupNotFound(id)
		}
		return g, nil
	case name != "":
		v, apiErr := s.groupVPC(req.region, "")
		if apiErr != nil {
			return securityGroupRecord{}, apiErr
		}
		g, ok := find(s.securityGroups(req.region), func(g securityGroupRecord) bool { return g.VPC == v.ID && g.Name == name })
		if !ok {
			return securityGroupRecord{}, groupNameNotFound(name, v.ID)
		}
		return g, nil
	}
	return securityGroupRecord{}, &apiError{Status: http.StatusBadRequest, Code: "MissingParameter", Message: "The request must contain the parameter groupName or groupId"}
}

// deleteSecurityGroup removes a group no instance uses and no other
// group's rule names; a VPC's default group goes only with its VPC.
func (s *Server) deleteSecurityGroup(req *request) (any, *apiError) {
	if apiErr := s.admit(req); apiErr != nil {
		return nil, apiErr
	}
	s.mutations.Lock()
	defer s.mutations.Unlock()
	g, apiErr := s.securityGroupOf(req)
	if apiErr != nil {
		return nil, apiErr
	}
	if g.Name == defaultGroupName {
		return nil, &apiError{Status: http.StatusBadRequest, Code: "CannotDelete", Message: fmt.Sprintf("the specified group: \"%s\" name: \"default\" cannot be deleted by a user", g.ID)}
	}
	users := s.liveInstances(req.region, func(inst *sim.Instance) bool {
		return slices.ContainsFunc(interfacesOf(inst), func(nic networkInterface) bool { return slices.Contains(nic.Groups, g.ID) })
	})
	referenced := slices.ContainsFunc(s.securityGroups(req.region), func(other securityGroupRecord) bool {
		return other.ID != g.ID && slices.ContainsFunc(append(slices.Clone(other.Ingress), other.Egress...), func(p permission) bool { return slices.Contains(p.Groups, g.ID) })
	})
	if len(users) > 0 || referenced {
		return nil, dependencyViolation("resource %s has a dependent object", g.ID)
	}
	if apiErr := req.dryRunStop(); apiErr != nil {
		return nil, apiErr
	}
	s.world.DeleteResource(cloud, kindSecurityGroup, g.ID)
	return deleteSecurityGroupResponse{Xmlns: xmlns, RequestID: req.id, Return: true, GroupID: g.ID}, nil
}

// parsePermissions reads the rules an Authorize call adds: IpPermissions.N
// (what the SDKs and the CLI's --ip-permissions send), or the older
// single-rule parameters the CLI's --protocol, --port and --cidr become.
func parsePermissions(req *request, egress bool) ([]permission, *apiError) {
	form := req.form
	var perms []permission
	for _, n := range indexes(form, "IpPermissions") {
		prefix := fmt.Sprintf("IpPermissions.%d.", n)
		p := permission{Protocol: form.Get(prefix + "IpProtocol")}
		var apiErr *apiError
		if p.FromPort, apiErr = portParam(form.Get(prefix+"FromPort"), "fromPort"); apiErr != nil {
			return nil, apiErr
		}
		if p.ToPort, apiErr = portParam(form.Get(prefix+"ToPort"), "toPort"); apiErr != nil {
			return nil, apiErr
		}
		for _, m := range indexes(form, prefix+"IpRanges") {
			p.CIDRs = append(p.CIDRs, form.Get(fmt.Sprintf("%sIpRanges.%d.CidrIp", prefix, m)))
		}
		for _, m := range indexes(form, prefix+"Groups") {
			p.Groups = append(p.Groups, form.Get(fmt.Sprintf("%sGroups.%d.GroupId", prefix, m)))
		}
		perms = append(perms, p)
	}
	if protocol := form.Get("IpProtocol"); protocol != "" && !egress {
		p := permission{Protocol: protocol}
		var apiErr *apiError
		if p.FromPort, apiErr = portParam(form.Get("FromPort"), "fromPort"); apiErr != nil {
			return nil, apiErr
		}
		if p.ToPort, apiErr = portParam(form.Get("ToPort"), "toPort"); apiErr != nil {
			return nil, apiErr
		}
		if cidr := form.Get("CidrIp"); cidr != "" {
			p.CIDRs = []string{cidr}
		}
		perms = append(perms, p)
	}
	if len(perms) == 0 {
		return nil, missingParameter("IpPermissions")
	}
	for i, p := range perms {
		protocol := strings.ToLower(p.Protocol)
		if name, ok := protocolNumbers[protocol]; ok {
			protocol = name
		}
		switch protocol {
		case "-1", "all":
			perms[i].Protocol, perms[i].FromPort, perms[i].ToPort = "-1", nil, nil
		case "tcp", "udp", "icmp":
			perms[i].Protocol = protocol
			if p.FromPort == nil || p.ToPort == nil {
				return nil, invalidValue("Invalid value 'Must specify both from and to ports with TCP/UDP.' for portRange")
			}
		case "":
			return nil, missingParameter("IpProtocol")
		default:
			return nil, invalidValue("Invalid value '%s' for IP protocol. Unknown protocol.", p.Protocol)
		}
		if len(p.CIDRs) == 0 && len(p.Groups) == 0 {
			return nil, missingParameter("source or destination of the rule (CidrIp or a group)")
		}
		for _, c := range p.CIDRs {
			if _, err := netip.ParsePrefix(c); err != nil {
				return nil, invalidValue("CIDR block %s is malformed", c)
			}
		}
	}
	return perms, nil
}

// protocolNumbers are the IP protocol numbers EC2 takes for the protocols
// it names.
var protocolNumbers = map[string]string{"6": "tcp", "17": "udp", "1": "icmp"}

func portParam(raw, name string) (*int, *apiError) {
	if raw == "" {
		return nil, nil
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < -1 || n > 65535 {
		return nil, invalidValue("Invalid value '%s' for %s", raw, name)
	}
	return &n, nil
}

func samePorts(a, b *int) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func (s *Server) authorizeIngress(req *request) (any, *apiError) { return s.authorize(req, false) }
func (s *Server) authorizeEgress(req *request) (any, *apiError)  { return s.authorize(req, true) }

// authorize adds rules to a group, one per CIDR or group, refusing one the
// group has already, as EC2 does.
func (s *Server) authorize(req *request, egress bool) (any, *apiError) {
	if apiErr := s.admit(req); apiErr != nil {
		return nil, apiErr
	}
	perms, apiErr := parsePermissions(req, egress)
	if apiErr != nil {
		return nil, apiErr
	}
	s.mutations.Lock()
	defer s.mutations.Unlock()
	g, apiErr := s.securityGroupOf(req)
	if apiErr != nil {
		return nil, apiErr
	}
	rules := &g.Ingress
	if egress {
		rules = &g.Egress
	}
	out := authorizeResponse{XMLName: xml.Name{Local: req.action + "Response"}, Xmlns: xmlns, RequestID: req.id, Return: true}
	for _, p := range perms {
		for _, ref := range p.Groups {
			if _, ok := s.findSecurityGroup(req.region, ref); !ok {
				return nil, groupNotFound(ref)
			}
		}
		for _, one := range splitPermission(p) {
			if slices.ContainsFunc(*rules, func(have permission) bool { return sameRule(have, one) }) {
				return nil, &apiError{Status: http.StatusBadRequest, Code: "InvalidPermission.Duplicate", Message: fmt.Sprintf("the specified rule %q already exists", describeRule(one))}
			}
			*rules = append(*rules, one)
			rule := securityGroupRuleXML{
				RuleID: hashID("sgr", fmt.Sprintf("%s/%v/%s", g.ID, egress, describeRule(one))), GroupID: g.ID, GroupOwnerID: s.opts.AccountID,
				IsEgress: egress, IPProtocol: one.Protocol, FromPort: -1, ToPort: -1,
			}
			if one.FromPort != nil {
				rule.FromPort, rule.ToPort = *one.FromPort, *one.ToPort
			}
			if len(one.CIDRs) > 0 {
				rule.CIDRIPv4 = one.CIDRs[0]
			} else {
				rule.Referenced = &struct {
					GroupID string `xml:"groupId"`
					UserID  string `xml:"userId"`
				}{GroupID: one.Groups[0], UserID: s.opts.AccountID}
			}
			out.Rules = append(out.Rules, rule)
		}
	}
	if apiErr := req.dryRunStop(); apiErr != nil {
		return nil, apiErr
	}
	s.put(kindSecurityGroup, req.region, g.ID, g)
	return out, nil
}

// splitPermission makes one rule of each CIDR and group a permission
// names, the unit EC2 counts and refuses duplicates of.
func splitPermission(p permission) []permission {
	var out []permission
	for _, c := range p.CIDRs {
		out = append(out, permission{Protocol: p.Protocol, FromPort: p.FromPort, ToPort: p.ToPort, CIDRs: []string{c}})
	}
	for _, g := range p.Groups {
		out = append(out, permission{Protocol: p.Protocol, FromPort: p.FromPort, ToPort: p.ToPort, Groups: []string{g}})
	}
	return out
}

func sameRule(a, b permission) bool {
	return a.Protocol == b.Protocol && samePorts(a.FromPort, b.FromPort) && samePorts(a.ToPort, b.ToPort) &&
		slices.Equal(a.CIDRs, b.CIDRs) && slices.Equal(a.Groups, b.Groups)
}

// describeRule words a rule as EC2's duplicate error does.
func describeRule(p permission) string {
	peer := strings.Join(append(slices.Clone(p.CIDRs), p.Groups...), ", ")
	protocol := strings.ToUpper(p.Protocol)
	if p.Protocol == "-1" {
		protocol = "ALL"
	}
	ports := ""
	if p.FromPort != nil {
		ports = fmt.Sprintf(", from port: %d, to port: %d", *p.FromPort, *p.ToPort)
	}
	return fmt.Sprintf("peer: %s, %s%s, ALLOW", peer, protocol, ports)
}
