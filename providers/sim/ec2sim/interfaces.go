// SPDX-License-Identifier: Apache-2.0

package ec2sim

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/gpufleet/gpufleet/providers/sim"
)

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
	Association        *associationXML       `xml:"association,omitempty"`
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
	PrivateIPAddress string          `xml:"privateIpAddress"`
	PrivateDNSName   string          `xml:"privateDnsName"`
	Primary          bool            `xml:"primary"`
	Association      *associationXML `xml:"association,omitempty"`
}

// interfacesOf is the instance's interfaces as its launch gave them, with
// their addresses. An instance launched before the front stored them gets
// them derived from its sequence number, as the front then did.
func interfacesOf(inst *sim.Instance) []networkInterface {
	var nics []networkInterface
	if raw := inst.Properties[propNetworkInterfaces]; raw != "" {
		if json.Unmarshal([]byte(raw), &nics) != nil {
			nics = nil
		}
	}
	if len(nics) == 0 {
		var groups []string
		for _, g := range strings.Split(inst.Properties[propGroups], ",") {
			if g != "" {
				groups = append(groups, g)
			}
		}
		nics = []networkInterface{{Type: interfaceENA, Subnet: inst.Properties[propSubnet], Groups: groups, DeleteOnTermination: true}}
	}
	secondary := 0
	for i := range nics {
		nic := &nics[i]
		if nic.VPC == "" {
			nic.VPC = cmp.Or(inst.Properties[propVPC], vpcID(inst.Region))
		}
		if nic.Address != "" || !nic.hasAddress() {
			continue
		}
		if nic.Card == 0 && nic.Device == 0 {
			nic.Address = privateIP(inst.Seq)
		} else {
			secondary++
			nic.Address = secondaryIP(inst.Seq, secondary)
		}
	}
	slices.SortStableFunc(nics, func(a, b networkInterface) int {
		return cmp.Or(cmp.Compare(a.Card, b.Card), cmp.Compare(a.Device, b.Device))
	})
	return nics
}

// primaryInterface is the interface at card 0, device 0.
func primaryInterface(nics []networkInterface) networkInterface {
	for _, nic := range nics {
		if nic.Card == 0 && nic.Device == 0 {
			return nic
		}
	}
	return nics[0]
}

// groupsXML names an interface's groups; an instance launched before the
// front kept names knows only the default group's.
func groupsXML(region string, nic networkInterface) []groupXML {
	var out []groupXML
	for i, g := range nic.Groups {
		group := groupXML{GroupID: g}
		switch {
		case i < len(nic.GroupNames):
			group.GroupName = nic.GroupNames[i]
		case g == defaultSecurityGroup(region):
			group.GroupName = defaultGroupName
		}
		out = append(out, group)
	}
	return out
}

// renderInterfaces draws the instance's interfaces, primary first and then
// by network card and device, each with the addresses its launch gave it.
func (s *Server) renderInterfaces(inst *sim.Instance, nics []networkInterface) []networkInterfaceXML {
	out := make([]networkInterfaceXML, 0, len(nics))
	for _, nic := range nics {
		seed := fmt.Sprintf("%s/%d/%d", inst.ID, nic.Card, nic.Device)
		x := networkInterfaceXML{
			NetworkInterfaceID: hashID("eni", seed),
			SubnetID:           nic.Subnet,
			VpcID:              nic.VPC,
			OwnerID:            s.opts.AccountID,
			Status:             "in-use",
			MacAddress:         macAddress(seed),
			SourceDestCheck:    true,
			Groups:             groupsXML(inst.Region, nic),
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
		if nic.Address != "" {
			dns := privateDNSName(inst.Region, nic.Address)
			x.PrivateIPAddress, x.PrivateDNSName = nic.Address, dns
			ip := privateIPAddressXML{PrivateIPAddress: nic.Address, PrivateDNSName: dns, Primary: true}
			if nic.PublicAddress != "" {
				x.Association = s.association(inst.Region, nic)
				ip.Association = x.Association
			}
			x.PrivateIPAddresses = []privateIPAddressXML{ip}
		}
		out = append(out, x)
	}
	return out
}

type associationXML struct {
	PublicIP      string `xml:"publicIp"`
	PublicDNSName string `xml:"publicDnsName"`
	IPOwnerID     string `xml:"ipOwnerId"`
}

// association is an interface's public address, owned by Amazon as an
// auto-assigned one is; it has a DNS name in the default VPC only, the one
// with DNS hostnames on.
func (s *Server) association(region string, nic networkInterface) *associationXML {
	a := &associationXML{PublicIP: nic.PublicAddress, IPOwnerID: "amazon"}
	if nic.VPC == vpcID(region) {
		a.PublicDNSName = publicDNSName(region, nic.PublicAddress)
	}
	return a
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
