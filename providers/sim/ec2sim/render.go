// SPDX-License-Identifier: Apache-2.0

package ec2sim

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"time"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// Keys of the properties the front stores on an instance at launch and
// echoes back; the world keeps them without reading them.
const (
	propImage        = "imageId"
	propSubnet       = "subnetId"
	propGroups       = "securityGroupIds"
	propReservation  = "reservationId"
	propLaunchIndex  = "amiLaunchIndex"
	propClientToken  = "clientToken"
	propParamsDigest = "paramsDigest"
	propSpotRequest  = "spotInstanceRequestId"
	// A spot launch's request: its type (one-time or persistent), what
	// an interruption does, and the maximum price when one was given.
	propSpotType         = "spot.type"
	propSpotInterruption = "spot.interruptionBehavior"
	propSpotMaxPrice     = "spot.maxPrice"
	propLaunchFailure    = "launchFailure"
	// propUserData is the user data in standard base64.
	propUserData        = "userData"
	propInstanceProfile = "iamInstanceProfileArn"
	propRootDevice      = "rootDeviceName"
	propKeyName         = "keyName"
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

type cpuOptionsXML struct {
	CoreCount      int `xml:"coreCount"`
	ThreadsPerCore int `xml:"threadsPerCore"`
}

type capacityReservationSpecXML struct {
	Preference string `xml:"capacityReservationPreference"`
}

type privateDNSNameOptionsXML struct {
	HostnameType string `xml:"hostnameType"`
	ARecord      bool   `xml:"enableResourceNameDnsARecord"`
	AAAARecord   bool   `xml:"enableResourceNameDnsAAAARecord"`
}

type maintenanceOptionsXML struct {
	AutoRecovery    string `xml:"autoRecovery"`
	RebootMigration string `xml:"rebootMigration"`
}

type instanceXML struct {
	InstanceID               string                     `xml:"instanceId"`
	ImageID                  string                     `xml:"imageId"`
	State                    stateXML                   `xml:"instanceState"`
	PrivateDNSName           string                     `xml:"privateDnsName"`
	DNSName                  string                     `xml:"dnsName"`
	Reason                   string                     `xml:"reason"`
	KeyName                  string                     `xml:"keyName,omitempty"`
	AMILaunchIndex           int                        `xml:"amiLaunchIndex"`
	InstanceType             string                     `xml:"instanceType"`
	LaunchTime               string                     `xml:"launchTime"`
	Placement                placementXML               `xml:"placement"`
	MonitoringState          string                     `xml:"monitoring>state"`
	SubnetID                 string                     `xml:"subnetId,omitempty"`
	VpcID                    string                     `xml:"vpcId,omitempty"`
	PrivateIPAddress         string                     `xml:"privateIpAddress,omitempty"`
	IPAddress                string                     `xml:"ipAddress,omitempty"`
	SourceDestCheck          *bool                      `xml:"sourceDestCheck,omitempty"`
	Groups                   []groupXML                 `xml:"groupSet>item"`
	NetworkInterfaces        []networkInterfaceXML      `xml:"networkInterfaceSet>item"`
	StateReason              *stateReasonXML            `xml:"stateReason,omitempty"`
	Architecture             string                     `xml:"architecture"`
	RootDeviceType           string                     `xml:"rootDeviceType"`
	RootDeviceName           string                     `xml:"rootDeviceName"`
	BlockDevices             []instanceBlockDeviceXML   `xml:"blockDeviceMapping>item"`
	IamInstanceProfile       *iamProfileXML             `xml:"iamInstanceProfile,omitempty"`
	MetadataOptions          *metadataOptionsXML        `xml:"metadataOptions,omitempty"`
	InstanceLifecycle        string                     `xml:"instanceLifecycle,omitempty"`
	SpotRequestID            string                     `xml:"spotInstanceRequestId,omitempty"`
	VirtualizationType       string                     `xml:"virtualizationType"`
	ClientToken              string                     `xml:"clientToken,omitempty"`
	Tags                     []tagXML                   `xml:"tagSet>item"`
	Hypervisor               string                     `xml:"hypervisor"`
	EbsOptimized             bool                       `xml:"ebsOptimized"`
	EnaSupport               bool                       `xml:"enaSupport"`
	CPUOptions               *cpuOptionsXML             `xml:"cpuOptions,omitempty"`
	CapacityReservationSpec  capacityReservationSpecXML `xml:"capacityReservationSpecification"`
	HibernationConfigured    bool                       `xml:"hibernationOptions>configured"`
	EnclaveEnabled           bool                       `xml:"enclaveOptions>enabled"`
	PlatformDetails          string                     `xml:"platformDetails"`
	UsageOperation           string                     `xml:"usageOperation"`
	UsageOperationUpdateTime string                     `xml:"usageOperationUpdateTime"`
	PrivateDNSNameOptions    privateDNSNameOptionsXML   `xml:"privateDnsNameOptions"`
	MaintenanceOptions       maintenanceOptionsXML      `xml:"maintenanceOptions"`
	CurrentInstanceBootMode  string                     `xml:"currentInstanceBootMode"`
	BandwidthWeighting       string                     `xml:"networkPerformanceOptions>bandwidthWeighting"`
	OperatorManaged          bool                       `xml:"operator>managed"`
}

type reservationXML struct {
	ReservationID string        `xml:"reservationId"`
	OwnerID       string        `xml:"ownerId"`
	Groups        []groupXML    `xml:"groupSet>item"`
	Instances     []instanceXML `xml:"instancesSet>item"`
}

// renderInstance draws an instance as EC2 describes it. A fresh launch
// always reads pending, as RunInstances answers, whatever the world's
// pending time, and has no public address yet.
func (s *Server) renderInstance(inst *sim.Instance, fresh bool) instanceXML {
	state := stateName(inst.State)
	if fresh {
		state = "pending"
	}
	index, _ := strconv.Atoi(inst.Properties[propLaunchIndex])
	launched := timestamp(inst.LaunchedAt)
	x := instanceXML{
		InstanceID:               inst.ID,
		ImageID:                  inst.Properties[propImage],
		State:                    stateOf(state),
		KeyName:                  inst.Properties[propKeyName],
		AMILaunchIndex:           index,
		InstanceType:             inst.InstanceType,
		LaunchTime:               launched,
		Placement:                placementXML{AvailabilityZone: inst.Zone, GroupName: inst.Properties[propPlacementGroup], GroupID: inst.Properties[propPlacementGroupID], Tenancy: "default"},
		MonitoringState:          "disabled",
		Architecture:             "x86_64",
		RootDeviceType:           "ebs",
		RootDeviceName:           rootDeviceName(inst),
		BlockDevices:             renderDevices(inst, state),
		IamInstanceProfile:       renderInstanceProfile(inst),
		MetadataOptions:          renderMetadataOptions(inst, fresh),
		VirtualizationType:       "hvm",
		ClientToken:              inst.Properties[propClientToken],
		Hypervisor:               "xen",
		EbsOptimized:             true,
		EnaSupport:               true,
		CPUOptions:               s.cpuOptions(inst.InstanceType),
		CapacityReservationSpec:  capacityReservationSpecXML{Preference: "open"},
		PlatformDetails:          "Linux/UNIX",
		UsageOperation:           "RunInstances",
		UsageOperationUpdateTime: launched,
		PrivateDNSNameOptions:    privateDNSNameOptionsXML{HostnameType: "ip-name"},
		MaintenanceOptions:       maintenanceOptionsXML{AutoRecovery: "default", RebootMigration: "default"},
		CurrentInstanceBootMode:  "legacy-bios",
		BandwidthWeighting:       "default",
	}
	// EC2 releases a terminated instance's network interfaces, and with
	// them the addresses, DNS names, subnet and groups.
	if state != "terminated" {
		nics := interfacesOf(inst)
		primary := primaryInterface(nics)
		x.PrivateIPAddress = primary.Address
		x.PrivateDNSName = privateDNSName(inst.Region, primary.Address)
		x.SubnetID = primary.Subnet
		x.VpcID = primary.VPC
		check := true
		x.SourceDestCheck = &check
		x.Groups = groupsXML(inst.Region, primary)
		if fresh {
			for i := range nics {
				nics[i].PublicAddress = ""
			}
		}
		x.NetworkInterfaces = s.renderInterfaces(inst, nics)
		if a := s.association(inst.Region, primary); primary.PublicAddress != "" && !fresh {
			x.IPAddress, x.DNSName = a.PublicIP, a.PublicDNSName
		}
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

// cpuOptions are a type's default cores and threads, as an instance
// launched without CpuOptions runs with them.
func (s *Server) cpuOptions(instanceType string) *cpuOptionsXML {
	for _, o := range s.world.Catalog().Offers {
		if o.Cloud == cloud && o.InstanceType == instanceType {
			if o.VCPUs < 2 {
				return &cpuOptionsXML{CoreCount: max(o.VCPUs, 1), ThreadsPerCore: 1}
			}
			return &cpuOptionsXML{CoreCount: o.VCPUs / 2, ThreadsPerCore: 2}
		}
	}
	return nil
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
	if state == "stopping" || state == "stopped" {
		return reasonUserShutdown
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

// hashID makes an EC2-style id, 17 hex digits, from a seed.
func hashID(prefix, seed string) string {
	h := fnv.New64a()
	h.Write([]byte(seed))
	return fmt.Sprintf("%s-%017x", prefix, h.Sum64()&0xfffffffffffffff)
}

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
