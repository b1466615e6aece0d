// SPDX-License-Identifier: Apache-2.0

package ec2sim

import (
	"encoding/xml"
	"fmt"
	"net/http"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/gpufleet/gpufleet/providers/sim"
)

var subnetIDPattern = regexp.MustCompile(`^subnet-([0-9a-f]{8}|[0-9a-f]{17})$`)

type subnetXML struct {
	SubnetID                string                   `xml:"subnetId"`
	SubnetArn               string                   `xml:"subnetArn"`
	State                   string                   `xml:"state"`
	OwnerID                 string                   `xml:"ownerId"`
	VpcID                   string                   `xml:"vpcId"`
	CIDRBlock               string                   `xml:"cidrBlock"`
	AvailableIPAddressCount int                      `xml:"availableIpAddressCount"`
	AvailabilityZone        string                   `xml:"availabilityZone"`
	AvailabilityZoneID      string                   `xml:"availabilityZoneId"`
	DefaultForAz            bool                     `xml:"defaultForAz"`
	MapPublicIPOnLaunch     bool                     `xml:"mapPublicIpOnLaunch"`
	MapCustomerOwnedIP      bool                     `xml:"mapCustomerOwnedIpOnLaunch"`
	AssignIPv6OnCreation    bool                     `xml:"assignIpv6AddressOnCreation"`
	Tags                    []tagXML                 `xml:"tagSet>item"`
	EnableDNS64             bool                     `xml:"enableDns64"`
	IPv6Native              bool                     `xml:"ipv6Native"`
	PrivateDNSNameOptions   privateDNSNameOptionsXML `xml:"privateDnsNameOptionsOnLaunch"`
}

type createSubnetResponse struct {
	XMLName   xml.Name  `xml:"CreateSubnetResponse"`
	Xmlns     string    `xml:"xmlns,attr"`
	RequestID string    `xml:"requestId"`
	Subnet    subnetXML `xml:"subnet"`
}

type describeSubnetsResponse struct {
	XMLName   xml.Name    `xml:"DescribeSubnetsResponse"`
	Xmlns     string      `xml:"xmlns,attr"`
	RequestID string      `xml:"requestId"`
	Subnets   []subnetXML `xml:"subnetSet>item"`
	NextToken string      `xml:"nextToken,omitempty"`
}

func (s *Server) renderSubnet(region string, sn subnetRecord, used map[string]bool) subnetXML {
	return subnetXML{
		SubnetID:                sn.ID,
		SubnetArn:               s.arn(region, "subnet", sn.ID),
		State:                   "available",
		OwnerID:                 s.opts.AccountID,
		VpcID:                   sn.VPC,
		CIDRBlock:               sn.CIDR,
		AvailableIPAddressCount: freeAddresses(sn, used),
		AvailabilityZone:        sn.Zone,
		AvailabilityZoneID:      s.zoneID(sn.Zone),
		DefaultForAz:            sn.Default,
		MapPublicIPOnLaunch:     sn.MapPublicIP,
		Tags:                    sortedTags(sn.Tags),
		PrivateDNSNameOptions:   privateDNSNameOptionsXML{HostnameType: "ip-name"},
	}
}

// subnetFilterNames are the filters DescribeSubnets takes here, with the
// older spellings EC2 still reads.
var subnetFilterNames = map[string]bool{
	"availability-zone": true, "availabilityZone": true, "availability-zone-id": true, "availabilityZoneId": true,
	"available-ip-address-count": true, "cidr-block": true, "cidr": true, "cidrBlock": true,
	"default-for-az": true, "defaultForAz": true, "map-public-ip-on-launch": true, "owner-id": true,
	"state": true, "subnet-arn": true, "subnet-id": true, "tag-key": true, "vpc-id": true,
}

func subnetValues(x subnetXML) map[string][]string {
	v := map[string][]string{
		"availability-zone": {x.AvailabilityZone}, "availability-zone-id": {x.AvailabilityZoneID},
		"available-ip-address-count": {strconv.Itoa(x.AvailableIPAddressCount)}, "cidr-block": {x.CIDRBlock},
		"default-for-az": {strconv.FormatBool(x.DefaultForAz)}, "map-public-ip-on-launch": {strconv.FormatBool(x.MapPublicIPOnLaunch)},
		"owner-id": {x.OwnerID}, "state": {x.State}, "subnet-arn": {x.SubnetArn}, "subnet-id": {x.SubnetID}, "vpc-id": {x.VpcID},
	}
	v["availabilityZone"], v["availabilityZoneId"] = v["availability-zone"], v["availability-zone-id"]
	v["cidr"], v["cidrBlock"], v["defaultForAz"] = v["cidr-block"], v["cidr-block"], v["default-for-az"]
	return v
}

// subnetZone is where CreateSubnet puts a subnet: the zone it names, by
// name or id, or the region's first.
func (s *Server) subnetZone(req *request) (string, *apiError) {
	r, _ := s.world.Region(cloud, req.region)
	zone, zoneID := req.form.Get("AvailabilityZone"), req.form.Get("AvailabilityZoneId")
	switch {
	case zone != "" && zoneID != "":
		return "", combination("The parameter availabilityZone cannot be used with the parameter availabilityZoneId")
	case zoneID != "":
		z, ok := s.zoneByID(req.region, zoneID)
		if !ok {
			return "", invalidValue("Value (%s) for parameter availabilityZoneId is invalid. Subnets can currently only be created in the following availability zones: %s.", zoneID, strings.Join(r.Zones, ", "))
		}
		return z, nil
	case zone != "":
		if !slices.Contains(r.Zones, zone) {
			return "", invalidValue("Value (%s) for parameter availabilityZone is invalid. Subnets can currently only be created in the following availability zones: %s.", zone, strings.Join(r.Zones, ", "))
		}
		return zone, nil
	}
	return r.Zones[0], nil
}

func (s *Server) createSubnet(req *request) (any, *apiError) {
	if apiErr := s.admit(req); apiErr != nil {
		return nil, apiErr
	}
	form := req.form
	vpc := form.Get("VpcId")
	if vpc == "" {
		return nil, missingParameter("VpcId")
	}
	raw := form.Get("CidrBlock")
	if raw == "" {
		return nil, missingParameter("CidrBlock")
	}
	prefix, apiErr := parseCIDR(raw, "cidrBlock")
	if apiErr != nil {
		return nil, apiErr
	}
	zone, apiErr := s.subnetZone(req)
	if apiErr != nil {
		return nil, apiErr
	}
	tags, apiErr := specTags(form, "subnet")
	if apiErr != nil {
		return nil, apiErr
	}

	s.mutations.Lock()
	defer s.mutations.Unlock()
	v, ok := s.findVPC(req.region, vpc)
	if !ok {
		return nil, vpcNotFound(vpc)
	}
	if !validPrefixLength(prefix) || !holds(vpcPrefix(v), prefix) {
		return nil, &apiError{Status: http.StatusBadRequest, Code: "InvalidSubnet.Range", Message: fmt.Sprintf("The CIDR '%s' is invalid.", raw)}
	}
	for _, other := range s.subnets(req.region) {
		if o, err := netip.ParsePrefix(other.CIDR); err == nil && other.VPC == vpc && o.Overlaps(prefix) {
			return nil, &apiError{Status: http.StatusBadRequest, Code: "InvalidSubnet.Conflict", Message: fmt.Sprintf("The CIDR '%s' conflicts with another subnet", raw)}
		}
	}
	if apiErr := req.dryRunStop(); apiErr != nil {
		return nil, apiErr
	}
	sn := subnetRecord{ID: s.newNetworkID("subnet", kindSubnet, req.region, vpc+"/"+prefix.String()), VPC: vpc, Zone: zone, CIDR: prefix.String(), Tags: tags}
	s.put(kindSubnet, req.region, sn.ID, sn)
	return createSubnetResponse{Xmlns: xmlns, RequestID: req.id, Subnet: s.renderSubnet(req.region, sn, nil)}, nil
}

func (s *Server) describeSubnets(req *request) (any, *apiError) {
	q, apiErr := s.openDescribe(req, subnetFilterNames, "subnets")
	if apiErr != nil {
		return nil, apiErr
	}
	picked, apiErr := pickByID(s.subnets(req.region), unique(list(req.form, "SubnetId")), subnetRecord.id, subnetNotFound)
	if apiErr != nil {
		return nil, apiErr
	}
	used := s.usedAddresses(req.region)
	subnets, next, apiErr := selectPage(q, picked, func(sn subnetRecord) (subnetXML, bool) {
		x := s.renderSubnet(req.region, sn, used[sn.ID])
		return x, matchesTagged(q.filters, subnetValues(x), sn.Tags)
	})
	if apiErr != nil {
		return nil, apiErr
	}
	return describeSubnetsResponse{Xmlns: xmlns, RequestID: req.id, Subnets: subnets, NextToken: next}, nil
}

// deleteSubnet removes a subnet no instance is in any more; a default
// subnet can go too, as on EC2.
func (s *Server) deleteSubnet(req *request) (any, *apiError) {
	id, apiErr := s.targetID(req, "SubnetId", subnetIDPattern, "InvalidSubnetID.Malformed", "subnet")
	if apiErr != nil {
		return nil, apiErr
	}

	s.mutations.Lock()
	defer s.mutations.Unlock()
	sn, ok := s.findSubnet(req.region, id)
	if !ok {
		return nil, subnetNotFound(id)
	}
	inSubnet := s.liveInstances(req.region, func(inst *sim.Instance) bool {
		return slices.ContainsFunc(interfacesOf(inst), func(nic networkInterface) bool { return nic.Subnet == id })
	})
	if len(inSubnet) > 0 {
		return nil, dependencyViolation("The subnet '%s' has dependencies and cannot be deleted.", id)
	}
	if apiErr := req.dryRunStop(); apiErr != nil {
		return nil, apiErr
	}
	s.remove(kindSubnet, req.region, id, sn.Default, subnetRecord{ID: id, VPC: sn.VPC, Zone: sn.Zone, Default: true, Deleted: true})
	return s.done(req), nil
}
