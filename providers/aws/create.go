// SPDX-License-Identifier: Apache-2.0

package aws

import (
	"context"
	"encoding/base64"
	"fmt"
	"maps"
	"slices"
	"strings"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// maxClientToken is EC2's limit on ClientToken.
const maxClientToken = 64

// maxUserData is EC2's limit on user data, before base64.
const maxUserData = 16384

// hopLimit is the metadata service's PUT response hop limit. IMDSv2's
// session token answers a PUT, and a container on a bridge network (a
// pod off the host network, a Docker container) is one hop further from
// the service than the node: with EC2's default of 1 its token never
// arrives, and the GPU workloads gpufleet launches run in containers.
const hopLimit = 2

// Create launches one instance with req.Token as its ClientToken, so a
// repeat — a retry, a crashed run, a second agent — gets the instance the
// first call launched.
func (p *Provider) Create(ctx context.Context, req providers.CreateRequest) (providers.Instance, error) {
	insts, err := p.launch(ctx, providers.BatchRequest{CreateRequest: req, Count: 1})
	if err != nil {
		return providers.Instance{}, err
	}
	return insts[0], nil
}

// CreateBatch launches up to req.Count instances in one RunInstances call,
// MinCount 1 and MaxCount the count, under the first node's token as the
// ClientToken: EC2 launches as many as the zone holds, and a repeat gets
// the same reservation. A repeat that asks for another count is refused by
// EC2 (IdempotentParameterMismatch) rather than launching a second set.
func (p *Provider) CreateBatch(ctx context.Context, req providers.BatchRequest) ([]providers.Instance, error) {
	insts, err := p.launch(ctx, req)
	if err != nil {
		return nil, err
	}
	if len(insts) < req.Count {
		return insts, &providers.Error{Kind: providers.KindCapacity, Cloud: catalog.AWS, Op: "create", Offer: req.Offer, Code: "InsufficientInstanceCapacity",
			Message: fmt.Sprintf("launched %d of %d: %s had room for no more", len(insts), req.Count, req.Offer.Zone)}
	}
	return insts, nil
}

func (p *Provider) launch(ctx context.Context, req providers.BatchRequest) ([]providers.Instance, error) {
	invalid := func(format string, args ...any) error {
		return &providers.Error{Kind: providers.KindInvalid, Cloud: catalog.AWS, Op: "create", Offer: req.Offer, Message: fmt.Sprintf(format, args...)}
	}
	switch {
	case req.Offer.Cloud != catalog.AWS:
		return nil, invalid("offer %s is not an AWS offer", req.Offer)
	case req.Token == "" || len(req.Token) > maxClientToken:
		return nil, invalid("token %q must have 1 to %d characters", req.Token, maxClientToken)
	case req.Fleet == "" || req.Workload == "":
		return nil, invalid("a create needs a fleet and a workload")
	case req.Count < 1 || req.Count > providers.MaxBatch:
		return nil, invalid("a batch of %d: it takes 1 to %d", req.Count, providers.MaxBatch)
	}
	tokens := req.Tokens()
	if tokens == nil {
		return nil, invalid("token %q names no batch of %d", req.Token, req.Count)
	}
	if b := req.Bootstrap; b != nil && len(b.Data) > maxUserData {
		// Refused here rather than sent: the file holds secrets, and EC2
		// would refuse it.
		return nil, invalid("the bootstrap file renders to %d bytes, over EC2's user data limit of %d", len(b.Data), maxUserData)
	}
	client, err := p.client("create", req.Offer.Region)
	if err != nil {
		return nil, err
	}
	var root string
	if p.cfg.Launch.DiskGB > 0 {
		image, err := p.image(req.Offer.Region)
		if err != nil {
			return nil, invalid("%v", err)
		}
		if root, err = p.rootDevice(ctx, client, req.Offer, image); err != nil {
			return nil, err
		}
	}
	in, err := p.runInput(req.CreateRequest, req.Count, root)
	if err != nil {
		return nil, invalid("%v", err)
	}

	callCtx, cancel := p.call(ctx)
	defer cancel()
	out, err := client.RunInstances(callCtx, in)
	if err != nil {
		return nil, classify("create", req.Offer, err)
	}
	if len(out.Instances) == 0 || len(out.Instances) > req.Count {
		return nil, &providers.Error{Kind: providers.KindUnavailable, Cloud: catalog.AWS, Op: "create", Offer: req.Offer,
			Message: fmt.Sprintf("RunInstances returned %d instances, want 1 to %d", len(out.Instances), req.Count)}
	}
	insts := make([]providers.Instance, len(out.Instances))
	for _, launched := range out.Instances {
		i := int(awssdk.ToInt32(launched.AmiLaunchIndex))
		if i < 0 || i >= len(insts) || insts[i].ID != "" {
			return nil, &providers.Error{Kind: providers.KindUnavailable, Cloud: catalog.AWS, Op: "create", Offer: req.Offer,
				Message: fmt.Sprintf("RunInstances returned launch index %d for %d instances", i, len(out.Instances))}
		}
		inst := providers.Instance{
			ID:         awssdk.ToString(launched.InstanceId),
			OfferKey:   offerKey(req.Offer.Region, launched),
			Fleet:      req.Fleet,
			Workload:   req.Workload,
			Token:      tokens[i],
			State:      instanceState(launched),
			LaunchedAt: awssdk.ToTime(launched.LaunchTime),
		}
		if !inst.State.Live() {
			// EC2 answers a reused ClientToken with the instances it
			// launched, for a day after they ended: the token is spent,
			// and only a new one launches a node.
			reason := ""
			if launched.StateReason != nil {
				reason = ": " + awssdk.ToString(launched.StateReason.Message)
			}
			return nil, &providers.Error{Kind: providers.KindTokenSpent, Cloud: catalog.AWS, Op: "create", Offer: req.Offer, Code: codeTokenReused,
				Message: fmt.Sprintf("token %s already launched %s, which is %s%s", req.Token, inst.ID, inst.State, reason)}
		}
		insts[i] = inst
	}
	return insts, nil
}

// runInput is the RunInstances request for a create, root the image's root
// device name (needed only to size the root volume). It is a pure function
// of the request, the configuration and the image, so a repeat sends the
// same parameters and EC2's idempotency check holds.
func (p *Provider) runInput(req providers.CreateRequest, count int, root string) (*ec2.RunInstancesInput, error) {
	launch := p.cfg.Launch
	zone := req.Offer.Zone
	image, err := p.image(req.Offer.Region)
	if err != nil {
		return nil, err
	}
	if zone == "" || req.Offer.InstanceType == "" {
		return nil, fmt.Errorf("offer %s names no zone or no instance type", req.Offer)
	}

	tags := providers.OwnershipTags(req)
	keys := slices.Sorted(maps.Keys(tags)) // a fixed order: EC2 compares a repeat's parameters
	sdkTags := make([]types.Tag, 0, len(keys))
	for _, k := range keys {
		sdkTags = append(sdkTags, types.Tag{Key: awssdk.String(k), Value: awssdk.String(tags[k])})
	}

	tokens := types.HttpTokensStateRequired
	switch launch.IMDS {
	case "", "required":
	case "optional":
		tokens = types.HttpTokensStateOptional
	default:
		return nil, fmt.Errorf("imds %q: want required or optional", launch.IMDS)
	}

	in := &ec2.RunInstancesInput{
		ClientToken:  awssdk.String(req.Token),
		ImageId:      awssdk.String(image),
		InstanceType: types.InstanceType(req.Offer.InstanceType),
		MinCount:     awssdk.Int32(1),
		MaxCount:     awssdk.Int32(int32(count)),
		Placement:    &types.Placement{AvailabilityZone: awssdk.String(zone)},
		TagSpecifications: []types.TagSpecification{
			{ResourceType: types.ResourceTypeInstance, Tags: sdkTags},
			{ResourceType: types.ResourceTypeVolume, Tags: sdkTags},
		},
		MetadataOptions: &types.InstanceMetadataOptionsRequest{
			HttpEndpoint:            types.InstanceMetadataEndpointStateEnabled,
			HttpTokens:              tokens,
			HttpPutResponseHopLimit: awssdk.Int32(hopLimit),
		},
	}
	if b := req.Bootstrap; b != nil && len(b.Data) > 0 {
		// A cloud-init file and a script both go as user data: cloud-init
		// runs a file that starts with #! as a script.
		in.UserData = awssdk.String(base64.StdEncoding.EncodeToString(b.Data))
	}
	if profile := launch.InstanceProfile; profile != "" {
		in.IamInstanceProfile = &types.IamInstanceProfileSpecification{Name: awssdk.String(profile)}
		if strings.HasPrefix(profile, "arn:") {
			in.IamInstanceProfile = &types.IamInstanceProfileSpecification{Arn: awssdk.String(profile)}
		}
	}
	if req.PlacementGroup != "" {
		in.Placement.GroupName = awssdk.String(req.PlacementGroup)
	}
	subnet := launch.SubnetByZone[zone]
	switch {
	case req.EFA < 0:
		return nil, fmt.Errorf("%d EFAs: want 0 or more", req.EFA)
	case req.EFA > 0:
		// The subnet and groups go on each interface: EC2 refuses them at
		// the instance level beside a list of interfaces.
		in.NetworkInterfaces = efaInterfaces(req.EFA, subnet, launch.SecurityGroups)
	default:
		if subnet != "" {
			in.SubnetId = awssdk.String(subnet)
		}
		if len(launch.SecurityGroups) > 0 {
			in.SecurityGroupIds = slices.Clone(launch.SecurityGroups)
		}
	}
	if launch.DiskGB > 0 {
		if root == "" {
			return nil, fmt.Errorf("the root device of %s is not known, so its volume cannot be sized", image)
		}
		in.BlockDeviceMappings = []types.BlockDeviceMapping{{
			DeviceName: awssdk.String(root),
			Ebs: &types.EbsBlockDevice{
				VolumeSize:          awssdk.Int32(int32(launch.DiskGB)),
				VolumeType:          types.VolumeTypeGp3,
				DeleteOnTermination: awssdk.Bool(true),
			},
		}}
	}
	switch req.Offer.Market {
	case catalog.Spot:
		// One-time and terminate: a reclaimed node is replaced by the
		// reconciler, not resumed by EC2. No MaxPrice: up to on-demand.
		in.InstanceMarketOptions = &types.InstanceMarketOptionsRequest{
			MarketType: types.MarketTypeSpot,
			SpotOptions: &types.SpotMarketOptions{
				SpotInstanceType:             types.SpotInstanceTypeOneTime,
				InstanceInterruptionBehavior: types.InstanceInterruptionBehaviorTerminate,
			},
		}
	case catalog.OnDemand:
	default:
		return nil, fmt.Errorf("unknown market %q", req.Offer.Market)
	}
	return in, nil
}

// efaInterfaces are the network interfaces of a node with n EFAs, laid out
// as AWS recommends for instances with several network cards, to keep to
// one IP address and clear of Linux's routing trouble with several: an ENA
// as the primary interface (network card 0, device 0), where an EFA-only
// interface may not go, since it has no IP address; an EFA-only interface
// beside it on card 0 (device 1); and one EFA-only interface on device 0 of
// each further card, 1 to n-1. Each is in the zone's subnet and the
// configured groups (EC2's defaults when unset), and ends with the node.
func efaInterfaces(n int, subnet string, groups []string) []types.InstanceNetworkInterfaceSpecification {
	nic := func(card, device int, kind string) types.InstanceNetworkInterfaceSpecification {
		spec := types.InstanceNetworkInterfaceSpecification{
			NetworkCardIndex:    awssdk.Int32(int32(card)),
			DeviceIndex:         awssdk.Int32(int32(device)),
			InterfaceType:       awssdk.String(kind),
			DeleteOnTermination: awssdk.Bool(true),
		}
		if subnet != "" {
			spec.SubnetId = awssdk.String(subnet)
		}
		if len(groups) > 0 {
			spec.Groups = slices.Clone(groups)
		}
		return spec
	}
	out := make([]types.InstanceNetworkInterfaceSpecification, 0, n+1)
	out = append(out, nic(0, 0, interfaceENA), nic(0, 1, interfaceEFAOnly))
	for card := 1; card < n; card++ {
		out = append(out, nic(card, 0, interfaceEFAOnly))
	}
	return out
}

// EC2's interface types: an ENA, and an EFA device without one.
const (
	interfaceENA     = "interface"
	interfaceEFAOnly = "efa-only"
)
