// SPDX-License-Identifier: Apache-2.0

package ec2sim

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/gpufleet/gpufleet/schema/catalog"
)

// propNetworkInterfaces lists an instance's network interfaces
// (networkInterface, in JSON), with the addresses they were given; an
// instance that left the emulator before they were stored has its one
// interface drawn from its subnet and groups.
const propNetworkInterfaces = "networkInterfaces"

// propVPC is the VPC of the instance's primary interface.
const propVPC = "vpcId"

// EC2's interface types at launch: an ENA ("interface"), an EFA with its
// ENA ("efa"), and an EFA device alone ("efa-only"), which has no IP
// address and so cannot be an instance's primary interface.
const (
	interfaceENA     = "interface"
	interfaceEFA     = "efa"
	interfaceEFAOnly = "efa-only"
)

// networkInterface is one interface a launch creates, as the front stores
// it on each instance of the reservation.
type networkInterface struct {
	Card                int      `json:"card"`
	Device              int      `json:"device"`
	Type                string   `json:"type"`
	Subnet              string   `json:"subnet"`
	VPC                 string   `json:"vpc,omitempty"`
	Groups              []string `json:"groups"`
	GroupNames          []string `json:"groupNames,omitempty"`
	DeleteOnTermination bool     `json:"deleteOnTermination"`
	// PublicIP says the interface gets a public address; askedPublic is
	// what the launch said of it, nil for nothing, which leaves it to the
	// subnet.
	PublicIP    bool  `json:"publicIp,omitempty"`
	askedPublic *bool `json:"-"`
	// Address and PublicAddress are the interface's own, given at launch.
	Address       string `json:"address,omitempty"`
	PublicAddress string `json:"publicAddress,omitempty"`
}

func (n networkInterface) efa() bool { return n.Type == interfaceEFA || n.Type == interfaceEFAOnly }

// hasAddress reports whether the interface has an ENA, and with it a
// private IP address; an EFA-only device speaks SRD over its MAC address.
func (n networkInterface) hasAddress() bool { return n.Type != interfaceEFAOnly }

func combination(format string, args ...any) *apiError {
	return &apiError{Status: http.StatusBadRequest, Code: "InvalidParameterCombination", Message: fmt.Sprintf(format, args...)}
}

func subnetNotFound(subnet string) *apiError {
	return &apiError{Status: http.StatusBadRequest, Code: "InvalidSubnetID.NotFound", Message: fmt.Sprintf("The subnet ID '%s' does not exist", subnet)}
}

func checkGroups(groups []string) *apiError {
	for _, g := range groups {
		if !groupID.MatchString(g) {
			return malformedID("InvalidGroupId.Malformed", g, "sg")
		}
	}
	return nil
}

// launchSubnetID is the subnet a RunInstances names for its primary
// interface, if any: where the launch goes when it names no zone.
func launchSubnetID(form url.Values) string {
	if subnet := form.Get("SubnetId"); subnet != "" {
		return subnet
	}
	for _, n := range indexes(form, "NetworkInterface") {
		prefix := fmt.Sprintf("NetworkInterface.%d.", n)
		if form.Get(prefix+"DeviceIndex") == "0" && cmp.Or(form.Get(prefix+"NetworkCardIndex"), "0") == "0" {
			return form.Get(prefix + "SubnetId")
		}
	}
	return ""
}

// parseNetwork reads where the instances attach: the instance-level
// subnet and groups, or a list of network interfaces, never both, as EC2
// takes them, and checks each subnet and group against the network model.
// The primary interface's subnet and groups are kept as the instance's,
// which DescribeInstances shows and filters on.
func (s *Server) parseNetwork(form url.Values, region string, l *launch) *apiError {
	if len(indexes(form, "NetworkInterface")) > 0 {
		return s.parseNetworkInterfaces(form, region, l)
	}
	nic := networkInterface{Type: interfaceENA, DeleteOnTermination: true, Subnet: form.Get("SubnetId"), Groups: list(form, "SecurityGroupId")}
	if apiErr := checkGroups(nic.Groups); apiErr != nil {
		return apiErr
	}
	names := list(form, "SecurityGroup")
	if len(names) > 0 && nic.Subnet != "" {
		return combination("The parameter groupName cannot be used with the parameter subnet")
	}
	if apiErr := s.attach(region, l.zone, &nic, names); apiErr != nil {
		return apiErr
	}
	nic.PublicIP = s.mapsPublicIP(region, nic.Subnet)
	return s.keepInterfaces(l, []networkInterface{nic})
}

func (s *Server) parseNetworkInterfaces(form url.Values, region string, l *launch) *apiError {
	switch {
	case form.Get("SubnetId") != "":
		return combination("Network interfaces and an instance-level subnet ID may not be specified on the same request")
	case len(list(form, "SecurityGroupId")) > 0 || len(list(form, "SecurityGroup")) > 0:
		return combination("Network interfaces and an instance-level security groups may not be specified on the same request")
	}
	var nics []networkInterface
	for _, n := range indexes(form, "NetworkInterface") {
		nic, apiErr := parseInterface(form, fmt.Sprintf("NetworkInterface.%d.", n))
		if apiErr != nil {
			return apiErr
		}
		nics = append(nics, nic)
	}
	if apiErr := checkInterfaces(nics, l.instanceType); apiErr != nil {
		return apiErr
	}
	for i := range nics {
		if apiErr := s.attach(region, l.zone, &nics[i], nil); apiErr != nil {
			return apiErr
		}
		// EC2 gives a public address of its own accord only to a launch of
		// one interface, in a subnet that maps them.
		switch asked := nics[i].askedPublic; {
		case asked != nil:
			nics[i].PublicIP = *asked
		case len(nics) == 1:
			nics[i].PublicIP = s.mapsPublicIP(region, nics[i].Subnet)
		}
	}
	return s.keepInterfaces(l, nics)
}

// keepInterfaces records a launch's interfaces, the primary's subnet,
// VPC and groups as the instance's. Every subnet is in the launch's zone:
// attach saw to it.
func (s *Server) keepInterfaces(l *launch, nics []networkInterface) *apiError {
	primary := nics[0]
	for _, nic := range nics {
		if nic.Card == 0 && nic.Device == 0 {
			primary = nic
		}
	}
	l.nics = nics
	l.properties[propSubnet] = primary.Subnet
	l.properties[propVPC] = primary.VPC
	l.properties[propGroups] = strings.Join(primary.Groups, ",")
	return nil
}

// attach resolves an interface's subnet and groups, or the default ones
// of the zone and VPC, and checks they exist and belong together, with
// EC2's errors. names are groups asked for by name, in the default VPC.
func (s *Server) attach(region, zone string, nic *networkInterface, names []string) *apiError {
	var sn subnetRecord
	if nic.Subnet == "" {
		def, apiErr := s.defaultSubnetIn(region, zone)
		if apiErr != nil {
			return apiErr
		}
		sn = def
	} else {
		found, ok := s.findSubnet(region, nic.Subnet)
		if !ok {
			return subnetNotFound(nic.Subnet)
		}
		if found.Zone != zone {
			return invalidValue("Value (%s) for parameter availabilityZone is invalid. Subnet '%s' is in the availability zone %s", zone, found.ID, found.Zone)
		}
		sn = found
	}
	nic.Subnet, nic.VPC = sn.ID, sn.VPC
	groups := s.securityGroups(region)
	for _, name := range names {
		g, ok := find(groups, func(g securityGroupRecord) bool { return g.VPC == sn.VPC && g.Name == name })
		if !ok {
			return &apiError{Status: http.StatusBadRequest, Code: "InvalidGroup.NotFound", Message: fmt.Sprintf("The security group '%s' does not exist in default VPC '%s'", name, sn.VPC)}
		}
		if !slices.Contains(nic.Groups, g.ID) {
			nic.Groups = append(nic.Groups, g.ID)
		}
	}
	if len(nic.Groups) == 0 {
		vpc, _ := s.findVPC(region, sn.VPC)
		nic.Groups = []string{defaultGroupOf(region, vpc)}
	}
	nic.GroupNames = nil
	for _, id := range nic.Groups {
		g, ok := find(groups, func(g securityGroupRecord) bool { return g.ID == id })
		switch {
		case !ok:
			return &apiError{Status: http.StatusBadRequest, Code: "InvalidGroup.NotFound", Message: fmt.Sprintf("The security group '%s' does not exist in VPC '%s'", id, sn.VPC)}
		case g.VPC != sn.VPC:
			return &apiError{Status: http.StatusBadRequest, Code: "InvalidParameter", Message: fmt.Sprintf("Security group %s and subnet %s belong to different networks.", id, sn.ID)}
		}
		nic.GroupNames = append(nic.GroupNames, g.Name)
	}
	return nil
}

// defaultSubnetIn is the default subnet of a zone, which a launch that
// names no subnet goes into.
func (s *Server) defaultSubnetIn(region, zone string) (subnetRecord, *apiError) {
	vpc, ok := s.defaultVPCOf(region)
	if !ok {
		return subnetRecord{}, &apiError{Status: http.StatusBadRequest, Code: "VPCIdNotSpecified", Message: "No default VPC for this user. GroupName is only supported for EC2-Classic and default VPC."}
	}
	found := false
	for _, sn := range s.subnets(region) {
		if sn.VPC == vpc.ID && sn.Default {
			found = true
			if sn.Zone == zone {
				return sn, nil
			}
		}
	}
	if !found {
		return subnetRecord{}, &apiError{Status: http.StatusBadRequest, Code: "MissingInput", Message: fmt.Sprintf("No subnets found for the default VPC '%s'. Please specify a subnet.", vpc.ID)}
	}
	return subnetRecord{}, &apiError{Status: http.StatusBadRequest, Code: "MissingInput", Message: fmt.Sprintf("No default subnet for availability zone: '%s'.", zone)}
}

func (s *Server) mapsPublicIP(region, subnet string) bool {
	sn, ok := s.findSubnet(region, subnet)
	return ok && sn.MapPublicIP
}

func parseInterface(form url.Values, prefix string) (networkInterface, *apiError) {
	nic := networkInterface{Type: interfaceENA, DeleteOnTermination: true}
	if form.Get(prefix+"NetworkInterfaceId") != "" {
		// Attaching an existing interface needs interfaces the front does
		// not keep apart from their instances.
		return nic, &apiError{Status: http.StatusBadRequest, Code: "Unsupported", Message: "Launching with an existing network interface is not supported by this endpoint."}
	}
	raw := form.Get(prefix + "DeviceIndex")
	if raw == "" {
		return nic, missingParameter(prefix + "DeviceIndex")
	}
	device, err := strconv.Atoi(raw)
	if err != nil || device < 0 {
		return nic, invalidValue("Value (%s) for parameter deviceIndex is invalid. Expected a non-negative integer.", raw)
	}
	nic.Device = device
	if raw := form.Get(prefix + "NetworkCardIndex"); raw != "" {
		card, err := strconv.Atoi(raw)
		if err != nil || card < 0 {
			return nic, invalidValue("Value (%s) for parameter networkCardIndex is invalid. Expected a non-negative integer.", raw)
		}
		nic.Card = card
	}
	switch t := form.Get(prefix + "InterfaceType"); t {
	case "", interfaceENA:
	case interfaceEFA, interfaceEFAOnly:
		nic.Type = t
	default:
		return nic, invalidValue("Value (%s) for parameter interfaceType is invalid. Valid values: %s, %s, %s", t, interfaceENA, interfaceEFA, interfaceEFAOnly)
	}
	nic.Subnet = form.Get(prefix + "SubnetId")
	nic.Groups = list(form, prefix+"SecurityGroupId")
	if apiErr := checkGroups(nic.Groups); apiErr != nil {
		return nic, apiErr
	}
	var apiErr *apiError
	if nic.DeleteOnTermination, apiErr = boolParam(form, prefix+"DeleteOnTermination", true); apiErr != nil {
		return nic, apiErr
	}
	if form.Get(prefix+"AssociatePublicIpAddress") != "" {
		asked, apiErr := boolParam(form, prefix+"AssociatePublicIpAddress", false)
		if apiErr != nil {
			return nic, apiErr
		}
		nic.askedPublic = &asked
	}
	return nic, nil
}

func boolParam(form url.Values, key string, def bool) (bool, *apiError) {
	switch raw := form.Get(key); raw {
	case "":
		return def, nil
	case "true":
		return true, nil
	case "false":
		return false, nil
	default:
		return false, invalidValue("Value (%s) for parameter %s is invalid. Expected a boolean.", raw, key)
	}
}

// checkInterfaces holds a launch's interfaces to EC2's rules: one primary,
// at network card 0 and device 0, with an ENA; each card and device taken
// once; a public address only on a launch of one interface; EFA only on a
// type that has it, and no more EFAs than the type takes
// (catalog.EFAInterfaces).
func checkInterfaces(nics []networkInterface, instanceType string) *apiError {
	seen := map[[2]int]bool{}
	efas := 0
	var primary *networkInterface
	for i, nic := range nics {
		at := [2]int{nic.Card, nic.Device}
		if seen[at] {
			return invalidValue("Each network interface requires a unique device index on its network card: network card %d, device index %d is given more than once.", nic.Card, nic.Device)
		}
		seen[at] = true
		if nic.Card == 0 && nic.Device == 0 {
			primary = &nics[i]
		}
		if nic.efa() {
			efas++
		}
	}
	switch {
	case primary == nil:
		return combination("Primary network interface required when secondary network interface(s) specified")
	case primary.Type == interfaceEFAOnly:
		return combination("An EFA-only network interface cannot be the primary network interface (network card 0, device index 0).")
	}
	for _, nic := range nics {
		if nic.askedPublic != nil && *nic.askedPublic && len(nics) > 1 {
			return combination("The associatePublicIPAddress parameter cannot be specified when launching with multiple network interfaces.")
		}
	}
	if efas == 0 {
		return nil
	}
	switch limit := catalog.EFAInterfaces(instanceType); {
	case limit == 0:
		return combination("The instance type %s does not support Elastic Fabric Adapters (interface type efa or efa-only).", instanceType)
	case efas > limit:
		return combination("The instance type %s supports at most %d EFA interfaces, and the request specifies %d.", instanceType, limit, efas)
	}
	return nil
}

// addressPlan hands a launch's instances their addresses from the free
// ones of their subnets, lowest first. The caller holds s.mutations, so
// no other launch takes the same ones.
type addressPlan struct {
	subnets map[string]subnetRecord
	used    map[string]map[string]bool
}

// planAddresses finds how many instances of a launch its subnets have
// addresses for, between minCount and maxCount, or EC2's error when fewer
// than minCount fit.
func (s *Server) planAddresses(region string, nics []networkInterface, minCount, maxCount int) (*addressPlan, int, *apiError) {
	p := &addressPlan{subnets: map[string]subnetRecord{}, used: s.usedAddresses(region)}
	need := map[string]int{}
	groups := s.securityGroups(region)
	for _, nic := range nics {
		// What the launch named may have been deleted since it was read.
		sn, ok := s.findSubnet(region, nic.Subnet)
		if !ok {
			return nil, 0, subnetNotFound(nic.Subnet)
		}
		for _, g := range nic.Groups {
			if !slices.ContainsFunc(groups, func(have securityGroupRecord) bool { return have.ID == g }) {
				return nil, 0, &apiError{Status: http.StatusBadRequest, Code: "InvalidGroup.NotFound", Message: fmt.Sprintf("The security group '%s' does not exist in VPC '%s'", g, sn.VPC)}
			}
		}
		p.subnets[sn.ID] = sn
		if p.used[sn.ID] == nil {
			p.used[sn.ID] = map[string]bool{}
		}
		if nic.hasAddress() {
			need[sn.ID]++
		}
	}
	fit := maxCount
	for id, n := range need {
		fit = min(fit, freeAddresses(p.subnets[id], p.used[id])/n)
	}
	if fit < minCount {
		return nil, 0, &apiError{Status: http.StatusBadRequest, Code: "InsufficientFreeAddressesInSubnet", Message: "Insufficient Free IP addresses in subnet."}
	}
	return p, fit, nil
}

// assign gives one instance's interfaces their private and public
// addresses and returns them as the instance stores them; seed places the
// instance in its reservation.
func (p *addressPlan) assign(nics []networkInterface, seed string) string {
	own := slices.Clone(nics)
	for i := range own {
		nic := &own[i]
		if nic.hasAddress() {
			nic.Address, _ = nextAddress(p.subnets[nic.Subnet], p.used[nic.Subnet])
		}
		if nic.PublicIP {
			nic.PublicAddress = publicAddress(fmt.Sprintf("%s/%d/%d", seed, nic.Card, nic.Device))
		}
	}
	raw, _ := json.Marshal(own)
	return string(raw)
}
