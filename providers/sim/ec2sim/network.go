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

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// propNetworkInterfaces lists the network interfaces a launch asked for
// (networkInterface, in JSON). An instance launched without them has none
// stored: its one interface is drawn from its subnet and groups.
const propNetworkInterfaces = "networkInterfaces"

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
	Groups              []string `json:"groups"`
	DeleteOnTermination bool     `json:"deleteOnTermination"`
	PublicIP            bool     `json:"publicIp,omitempty"`
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
			return &apiError{Status: http.StatusBadRequest, Code: "InvalidGroupId.Malformed", Message: fmt.Sprintf("Invalid id: %q (expecting \"sg-...\")", g)}
		}
	}
	return nil
}

// parseNetwork reads where the instances attach: the instance-level
// subnet and groups, or a list of network interfaces, never both, as EC2
// takes them. The primary interface's subnet and groups are kept as the
// instance's, which DescribeInstances shows and filters on.
func parseNetwork(form url.Values, region string, l *launch) *apiError {
	if len(indexes(form, "NetworkInterface")) > 0 {
		return parseNetworkInterfaces(form, region, l)
	}
	subnet := form.Get("SubnetId")
	switch {
	case subnet == "":
		subnet = defaultSubnet(l.zone)
	case !strings.HasPrefix(subnet, "subnet-"):
		return subnetNotFound(subnet)
	}
	l.properties[propSubnet] = subnet
	groups := list(form, "SecurityGroupId")
	if apiErr := checkGroups(groups); apiErr != nil {
		return apiErr
	}
	if len(groups) == 0 {
		groups = []string{defaultSecurityGroup(region)}
	}
	l.properties[propGroups] = strings.Join(groups, ",")
	return nil
}

func parseNetworkInterfaces(form url.Values, region string, l *launch) *apiError {
	switch {
	case form.Get("SubnetId") != "":
		return combination("Network interfaces and an instance-level subnet ID may not be specified on the same request")
	case len(list(form, "SecurityGroupId")) > 0:
		return combination("Network interfaces and an instance-level security groups may not be specified on the same request")
	}
	var nics []networkInterface
	for _, n := range indexes(form, "NetworkInterface") {
		nic, apiErr := parseInterface(form, fmt.Sprintf("NetworkInterface.%d.", n), region, l.zone)
		if apiErr != nil {
			return apiErr
		}
		nics = append(nics, nic)
	}
	if apiErr := checkInterfaces(nics, l.instanceType); apiErr != nil {
		return apiErr
	}
	primary := nics[0]
	for _, nic := range nics {
		if nic.Card == 0 && nic.Device == 0 {
			primary = nic
		}
	}
	l.properties[propSubnet] = primary.Subnet
	l.properties[propGroups] = strings.Join(primary.Groups, ",")
	data, err := json.Marshal(nics)
	if err != nil {
		return &apiError{Status: http.StatusInternalServerError, Code: "InternalError", Message: "An internal error has occurred"}
	}
	l.properties[propNetworkInterfaces] = string(data)
	return nil
}

func parseInterface(form url.Values, prefix, region, zone string) (networkInterface, *apiError) {
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
	switch {
	case nic.Subnet == "":
		nic.Subnet = defaultSubnet(zone)
	case !strings.HasPrefix(nic.Subnet, "subnet-"):
		return nic, subnetNotFound(nic.Subnet)
	}
	nic.Groups = list(form, prefix+"SecurityGroupId")
	if apiErr := checkGroups(nic.Groups); apiErr != nil {
		return nic, apiErr
	}
	if len(nic.Groups) == 0 {
		nic.Groups = []string{defaultSecurityGroup(region)}
	}
	var apiErr *apiError
	if nic.DeleteOnTermination, apiErr = boolParam(form, prefix+"DeleteOnTermination", true); apiErr != nil {
		return nic, apiErr
	}
	if nic.PublicIP, apiErr = boolParam(form, prefix+"AssociatePublicIpAddress", false); apiErr != nil {
		return nic, apiErr
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
		if nic.PublicIP && len(nics) > 1 {
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

// networkInterfaceXML is one item of an instance's networkInterfaceSet.
type networkInterfaceXML struct {
	NetworkInterfaceID string                `xml:"networkInterfaceId"`
	SubnetID           string                `xml:"subnetId"`
	VpcID              string                `xml:"vpcId"`
	OwnerID            string                `xml:"ownerId"`
	Status             string                `xml:"status"`
	MacAddress         string                `xml:"macAddress"`
	PrivateIPAddress   string                `xml:"privateIpAddress,omitempty"`
	PrivateDNSName     string                `xml:"privateDnsName,omitempty"`
	SourceDestCheck    bool                  `xml:"sourceDestCheck"`
	Groups             []groupXML            `xml:"groupSet>item"`
	Attachment         attachmentXML         `xml:"attachment"`
	PrivateIPAddresses []privateIPAddressXML `xml:"privateIpAddressesSet>item"`
	InterfaceType      string                `xml:"interfaceType"`
}

type attachmentXML struct {
	AttachmentID        string `xml:"attachmentId"`
	DeviceIndex         int    `xml:"deviceIndex"`
	NetworkCardIndex    int    `xml:"networkCardIndex"`
	Status              string `xml:"status"`
	AttachTime          string `xml:"attachTime"`
	DeleteOnTermination bool   `xml:"deleteOnTermination"`
}

type privateIPAddressXML struct {
	PrivateIPAddress string `xml:"privateIpAddress"`
	PrivateDNSName   string `xml:"privateDnsName"`
	Primary          bool   `xml:"primary"`
}

// interfacesOf is the instance's interfaces: those its launch asked for,
// or the one EC2 gives a launch that asked for none.
func interfacesOf(inst *sim.Instance) []networkInterface {
	if raw := inst.Properties[propNetworkInterfaces]; raw != "" {
		var nics []networkInterface
		if json.Unmarshal([]byte(raw), &nics) == nil && len(nics) > 0 {
			return nics
		}
	}
	var groups []string
	for _, g := range strings.Split(inst.Properties[propGroups], ",") {
		if g != "" {
			groups = append(groups, g)
		}
	}
	return []networkInterface{{Type: interfaceENA, Subnet: inst.Properties[propSubnet], Groups: groups, DeleteOnTermination: true}}
}

// renderInterfaces draws the instance's interfaces, primary first and then
// by network card and device. The primary has the instance's address;
// every other interface with an ENA has an address of its own, derived
// from the instance's sequence number and its place, so answers repeat.
func (s *Server) renderInterfaces(inst *sim.Instance) []networkInterfaceXML {
	nics := interfacesOf(inst)
	slices.SortStableFunc(nics, func(a, b networkInterface) int {
		return cmp.Or(cmp.Compare(a.Card, b.Card), cmp.Compare(a.Device, b.Device))
	})
	out := make([]networkInterfaceXML, 0, len(nics))
	secondary := 0
	for _, nic := range nics {
		seed := fmt.Sprintf("%s/%d/%d", inst.ID, nic.Card, nic.Device)
		x := networkInterfaceXML{
			NetworkInterfaceID: hashID("eni", seed),
			SubnetID:           nic.Subnet,
			VpcID:              vpcID(inst.Region),
			OwnerID:            s.opts.AccountID,
			Status:             "in-use",
			MacAddress:         macAddress(seed),
			SourceDestCheck:    true,
			Attachment: attachmentXML{
				AttachmentID:        hashID("eni-attach", seed),
				DeviceIndex:         nic.Device,
				NetworkCardIndex:    nic.Card,
				Status:              "attached",
				AttachTime:          timestamp(inst.LaunchedAt),
				DeleteOnTermination: nic.DeleteOnTermination,
			},
			InterfaceType: nic.Type,
		}
		for _, g := range nic.Groups {
			group := groupXML{GroupID: g}
			if g == defaultSecurityGroup(inst.Region) {
				group.GroupName = "default"
			}
			x.Groups = append(x.Groups, group)
		}
		if nic.hasAddress() {
			ip := privateIP(inst.Seq)
			if nic.Card != 0 || nic.Device != 0 {
				secondary++
				ip = secondaryIP(inst.Seq, secondary)
			}
			dns := fmt.Sprintf("ip-%s.%s", strings.ReplaceAll(ip, ".", "-"), internalDomain(inst.Region))
			x.PrivateIPAddress, x.PrivateDNSName = ip, dns
			x.PrivateIPAddresses = []privateIPAddressXML{{PrivateIPAddress: ip, PrivateDNSName: dns, Primary: true}}
		}
		out = append(out, x)
	}
	return out
}

// maxInterfaces bounds the interfaces of one instance the address scheme
// keeps apart: more than any instance type takes.
const maxInterfaces = 64

// secondaryIP is the address of the k-th (from 1) secondary interface with
// an ENA: in the upper half of 10.0.0.0/8, where primaries, numbered from
// the bottom, reach only past eight million instances.
func secondaryIP(seq uint64, k int) string {
	n := 1<<23 | (seq*maxInterfaces+uint64(k%maxInterfaces))&(1<<23-1)
	return fmt.Sprintf("10.%d.%d.%d", (n>>16)&0xff, (n>>8)&0xff, n&0xff)
}

// macAddress is a locally administered unicast address derived from seed.
func macAddress(seed string) string {
	h := hashID("", seed)[1:]
	return "02:" + h[5:7] + ":" + h[7:9] + ":" + h[9:11] + ":" + h[11:13] + ":" + h[13:15]
}
