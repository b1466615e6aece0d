package ec2sim

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// Keys of the properties the front stores on an instance at launch and
// echoes back; the world keeps them without reading them.
const (
	propImage         = "imageId"
	propSubnet        = "subnetId"
	propGroups        = "securityGroupIds"
	propReservation   = "reservationId"
	propLaunchIndex   = "amiLaunchIndex"
	propClientToken   = "clientToken"
	propParamsDigest  = "paramsDigest"
	propSpotRequest   = "spotInstanceRequestId"
	propLaunchFailure = "launchFailure"
	// propUserData is the user data in standard base64.
	propUserData        = "userData"
	propInstanceProfile = "iamInstanceProfileArn"
	propRootDevice      = "rootDeviceName"
	// propBlockDevices lists the instance's EBS volumes (blockDevice, in
	// JSON); propVolumeTags are the tags the launch gave them.
	propBlockDevices     = "blockDevices"
	propVolumeTags       = "volumeTags"
	propHTTPTokens       = "metadata.httpTokens"
	propHTTPEndpoint     = "metadata.httpEndpoint"
	propHTTPProtocolIPv6 = "metadata.httpProtocolIpv6"
	propMetadataTags     = "metadata.instanceMetadataTags"
	propHopLimit         = "metadata.httpPutResponseHopLimit"
)

// EC2's instance state codes.
var stateCodes = map[string]int{
	"pending":       0,
	"running":       16,
	"shutting-down": 32,
	"terminated":    48,
	"stopping":      64,
	"stopped":       80,
}

// stateName is the world's state in EC2's words; they coincide for every
// state an EC2 instance reaches.
func stateName(s sim.State) string {
	if s == sim.StateFailed {
		return "terminated"
	}
	return string(s)
}

// State reasons, as EC2 words them. A launch reads "pending" until it runs,
// as RunInstances and DescribeInstances show it.
const (
	reasonPending         = "pending"
	reasonSpotTermination = "Server.SpotInstanceTermination"
	reasonUserShutdown    = "Client.UserInitiatedShutdown"
	reasonNoCapacity      = "Server.InsufficientInstanceCapacity"
)

var reasonMessages = map[string]string{
	reasonSpotTermination:  "Spot instance termination",
	reasonUserShutdown:     "User initiated shutdown",
	reasonNoCapacity:       "Insufficient capacity to satisfy launch request",
	"Server.InternalError": "Internal error on launch",
}

type stateXML struct {
	Code int    `xml:"code"`
	Name string `xml:"name"`
}

func stateOf(name string) stateXML { return stateXML{Code: stateCodes[name], Name: name} }

type tagXML struct {
	Key   string `xml:"key"`
	Value string `xml:"value"`
}

type groupXML struct {
	GroupID   string `xml:"groupId"`
	GroupName string `xml:"groupName,omitempty"`
}

type stateReasonXML struct {
	Code    string `xml:"code"`
	Message string `xml:"message"`
}

type placementXML struct {
	AvailabilityZone string `xml:"availabilityZone"`
	GroupName        string `xml:"groupName"`
	GroupID          string `xml:"groupId,omitempty"`
	Tenancy          string `xml:"tenancy"`
}

type instanceXML struct {
	InstanceID         string                   `xml:"instanceId"`
	ImageID            string                   `xml:"imageId"`
	State              stateXML                 `xml:"instanceState"`
	PrivateDNSName     string                   `xml:"privateDnsName"`
	Reason             string                   `xml:"reason"`
	AMILaunchIndex     int                      `xml:"amiLaunchIndex"`
	InstanceType       string                   `xml:"instanceType"`
	LaunchTime         string                   `xml:"launchTime"`
	Placement          placementXML             `xml:"placement"`
	MonitoringState    string                   `xml:"monitoring>state"`
	SubnetID           string                   `xml:"subnetId,omitempty"`
	VpcID              string                   `xml:"vpcId,omitempty"`
	PrivateIPAddress   string                   `xml:"privateIpAddress,omitempty"`
	Groups             []groupXML               `xml:"groupSet>item"`
	NetworkInterfaces  []networkInterfaceXML    `xml:"networkInterfaceSet>item"`
	StateReason        *stateReasonXML          `xml:"stateReason,omitempty"`
	Architecture       string                   `xml:"architecture"`
	RootDeviceType     string                   `xml:"rootDeviceType"`
	RootDeviceName     string                   `xml:"rootDeviceName"`
	BlockDevices       []instanceBlockDeviceXML `xml:"blockDeviceMapping>item"`
	IamInstanceProfile *iamProfileXML           `xml:"iamInstanceProfile,omitempty"`
	MetadataOptions    *metadataOptionsXML      `xml:"metadataOptions,omitempty"`
	InstanceLifecycle  string                   `xml:"instanceLifecycle,omitempty"`
	SpotRequestID      string                   `xml:"spotInstanceRequestId,omitempty"`
	VirtualizationType string                   `xml:"virtualizationType"`
	ClientToken        string                   `xml:"clientToken,omitempty"`
	Tags               []tagXML                 `xml:"tagSet>item"`
	Hypervisor         string                   `xml:"hypervisor"`
	EbsOptimized       bool                     `xml:"ebsOptimized"`
}

type reservationXML struct {
	ReservationID string        `xml:"reservationId"`
	OwnerID       string        `xml:"ownerId"`
	Groups        []groupXML    `xml:"groupSet>item"`
	Instances     []instanceXML `xml:"instancesSet>item"`
}

// renderInstance draws an instance as EC2 describes it. A fresh launch
// always reads pending, as RunInstances answers, whatever the world's
// pending time.
func (s *Server) renderInstance(inst *sim.Instance, fresh bool) instanceXML {
	state := stateName(inst.State)
	if fresh {
		state = "pending"
	}
	index, _ := strconv.Atoi(inst.Properties[propLaunchIndex])
	x := instanceXML{
		InstanceID:         inst.ID,
		ImageID:            inst.Properties[propImage],
		State:              stateOf(state),
		AMILaunchIndex:     index,
		InstanceType:       inst.InstanceType,
		LaunchTime:         timestamp(inst.LaunchedAt),
		Placement:          placementXML{AvailabilityZone: inst.Zone, GroupName: inst.Properties[propPlacementGroup], GroupID: inst.Properties[propPlacementGroupID], Tenancy: "default"},
		MonitoringState:    "disabled",
		Architecture:       "x86_64",
		RootDeviceType:     "ebs",
		RootDeviceName:     rootDeviceName(inst),
		BlockDevices:       renderDevices(inst, state),
		IamInstanceProfile: renderInstanceProfile(inst),
		MetadataOptions:    renderMetadataOptions(inst, fresh),
		VirtualizationType: "hvm",
		ClientToken:        inst.Properties[propClientToken],
		Hypervisor:         "xen",
		EbsOptimized:       true,
	}
	// EC2 releases a terminated instance's network interfaces, and with
	// them the address, DNS name, subnet and groups.
	if state != "terminated" {
		ip := privateIP(inst.Seq)
		x.PrivateIPAddress = ip
		x.PrivateDNSName = fmt.Sprintf("ip-%s.%s", strings.ReplaceAll(ip, ".", "-"), internalDomain(inst.Region))
		x.SubnetID = inst.Properties[propSubnet]
		x.VpcID = vpcID(inst.Region)
		for _, g := range strings.Split(inst.Properties[propGroups], ",") {
			if g == "" {
				continue
			}
			// EC2 names every group; the only name the front knows is the
			// default group's.
			group := groupXML{GroupID: g}
			if g == defaultSecurityGroup(inst.Region) {
				group.GroupName = "default"
			}
			x.Groups = append(x.Groups, group)
		}
		x.NetworkInterfaces = s.renderInterfaces(inst)
	}
	if inst.Market == catalog.Spot {
		x.InstanceLifecycle = "spot"
		x.SpotRequestID = inst.Properties[propSpotRequest]
	}
	if code := stateReason(inst, state); code == reasonPending {
		x.StateReason = &stateReasonXML{Code: code, Message: code}
	} else if code != "" {
		x.StateReason = &stateReasonXML{Code: code, Message: code + ": " + reasonMessages[code]}
		if code == reasonUserShutdown {
			x.Reason = fmt.Sprintf("User initiated (%s GMT)", inst.EndedAt.UTC().Format(time.DateTime))
		}
	}
	for k, v := range inst.Tags {
		x.Tags = append(x.Tags, tagXML{Key: k, Value: v})
	}
	slices.SortFunc(x.Tags, func(a, b tagXML) int { return cmp.Compare(a.Key, b.Key) })
	return x
}

// timestamp is a time as EC2 writes it.
func timestamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// stateReason says why an instance is in its state, as EC2 records it: a
// launch is pending, an ended instance carries why it ended, and a running
// one has none.
func stateReason(inst *sim.Instance, state string) string {
	if state == "pending" {
		return reasonPending
	}
	if state != "terminated" && state != "shutting-down" {
		return ""
	}
	switch {
	case inst.Preempted:
		return reasonSpotTermination
	case inst.Properties[propLaunchFailure] != "":
		return inst.Properties[propLaunchFailure]
	}
	return reasonUserShutdown
}

// reservations groups instances, already in launch order, into their
// reservations as DescribeInstances lists them.
func (s *Server) reservations(insts []*sim.Instance) []reservationXML {
	var out []reservationXML
	for _, inst := range insts {
		id := inst.Properties[propReservation]
		if n := len(out); n == 0 || out[n-1].ReservationID != id {
			out = append(out, reservationXML{ReservationID: id, OwnerID: s.opts.AccountID})
		}
		last := &out[len(out)-1]
		last.Instances = append(last.Instances, s.renderInstance(inst, false))
	}
	return out
}

// The identifiers of the network an instance lands in are derived, not
// stored: every zone has one default subnet, every region one VPC with one
// default security group, as a fresh AWS account does.

func hashID(prefix, seed string) string {
	h := fnv.New64a()
	h.Write([]byte(seed))
	return fmt.Sprintf("%s-%017x", prefix, h.Sum64()&0xfffffffffffffff)
}

func defaultSubnet(zone string) string          { return hashID("subnet", zone) }
func vpcID(region string) string                { return hashID("vpc", region) }
func defaultSecurityGroup(region string) string { return hashID("sg", region) }

func privateIP(seq uint64) string {
	n := seq + 4 // the first addresses of a subnet are AWS's
	return fmt.Sprintf("10.%d.%d.%d", (n>>16)&0xff, (n>>8)&0xff, n&0xff)
}

func internalDomain(region string) string {
	if region == "us-east-1" {
		return "ec2.internal"
	}
	return region + ".compute.internal"
}
