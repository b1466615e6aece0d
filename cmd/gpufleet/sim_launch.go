// SPDX-License-Identifier: Apache-2.0

package main

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	azcloud "github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	azfake "github.com/Azure/azure-sdk-for-go/sdk/azcore/fake"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7"
	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/spf13/cobra"
	"google.golang.org/api/option"
	"google.golang.org/protobuf/proto"

	"github.com/gpufleet/gpufleet/providers/outbound"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// foreignLaunch is what `sim launch` starts: instances gpufleet does not
// own, launched through the emulator's endpoints with the clouds' own
// SDKs, as a user's own tooling would launch them.
type foreignLaunch struct {
	cloud, zone, instanceType string
	spot                      bool
	count                     int
	tags                      map[string]string
	// name names GCE instances and Azure VMs: the name and "-<n>".
	name string
	// project (GCE), subscription and resource group (Azure) say where.
	project, subscription, resourceGroup string
	endpoint                             string
}

func (a *app) simLaunchCommand() *cobra.Command {
	var l foreignLaunch
	var tags []string
	cmd := &cobra.Command{
		Use:   "launch",
		Short: "Launch instances gpufleet does not own in a running emulator, as any client would",
		Long: `launch starts instances in a running emulator (gpufleet sim serve) through
the cloud's own API, as the AWS CLI, az or gcloud would: without gpufleet's
ownership tags, with the tags --tag gives. They stand for what a team ran
before gpufleet, for gpufleet adopt to take over. The endpoint is the one
GPUFLEET_<CLOUD>_ENDPOINT names, or --endpoint; only loopback is allowed.`,
		Example: `  gpufleet sim launch --cloud aws --zone us-east-1a --type g6.2xlarge --count 5 --tag team=ml
  gpufleet sim launch --cloud gcp --zone us-central1-a --type g2-standard-4 --spot --project acme-gpu-fleet`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if l.tags, err = parseTags(tags); err != nil {
				return err
			}
			if l.count < 1 || l.count > 100 {
				return fmt.Errorf("--count must be from 1 to 100, not %d", l.count)
			}
			l.endpoint = cmp.Or(l.endpoint, os.Getenv("GPUFLEET_"+strings.ToUpper(l.cloud)+"_ENDPOINT"))
			if l.endpoint == "" {
				return fmt.Errorf("no endpoint for %s: start gpufleet sim serve and export GPUFLEET_%s_ENDPOINT, or pass --endpoint", l.cloud, strings.ToUpper(l.cloud))
			}
			if !emulatorEndpoint(l.endpoint) {
				return fmt.Errorf("--endpoint %s is not on loopback: sim launch only talks to the emulator", l.endpoint)
			}
			region, ok := regionOfZone(l.cloud, l.zone)
			if !ok {
				return fmt.Errorf("--zone %q is not a zone of %s in the catalog", l.zone, l.cloud)
			}
			var ids []string
			switch l.cloud {
			case catalog.AWS:
				ids, err = launchEC2(cmd.Context(), l, region)
			case catalog.Azure:
				ids, err = launchARM(cmd.Context(), l, region)
			case catalog.GCP:
				ids, err = launchGCE(cmd.Context(), l)
			default:
				return fmt.Errorf("--cloud must be aws, azure or gcp, not %q", l.cloud)
			}
			for _, id := range ids {
				fmt.Fprintf(a.stdout, "launched %s %s in %s (%s %s)\n", l.cloud, id, l.zone, l.instanceType, l.market())
			}
			return err
		},
	}
	cmd.Flags().StringVar(&l.cloud, "cloud", "", "aws, azure or gcp")
	cmd.Flags().StringVar(&l.zone, "zone", "", "zone to launch in, as the catalog names it (us-east-1a, eastus-1, us-central1-a)")
	cmd.Flags().StringVar(&l.instanceType, "type", "", "instance type (EC2), VM size (Azure) or machine type (GCE)")
	cmd.Flags().BoolVar(&l.spot, "spot", false, "launch spot instances")
	cmd.Flags().IntVar(&l.count, "count", 1, "how many to launch")
	cmd.Flags().StringArrayVar(&tags, "tag", nil, "a tag (label on GCE) KEY=VALUE to put on them; repeat for several")
	cmd.Flags().StringVar(&l.name, "name", "foreign", "name of GCE instances and Azure VMs, followed by -1, -2…")
	cmd.Flags().StringVar(&l.project, "project", "", "GCP project, with --cloud gcp")
	cmd.Flags().StringVar(&l.subscription, "subscription", "00000000-0000-0000-0000-000000000000", "Azure subscription, with --cloud azure")
	cmd.Flags().StringVar(&l.resourceGroup, "resource-group", "gpufleet", "Azure resource group, with --cloud azure")
	cmd.Flags().StringVar(&l.endpoint, "endpoint", "", "the emulator's endpoint for the cloud; GPUFLEET_<CLOUD>_ENDPOINT when empty")
	for _, name := range []string{"cloud", "zone", "type"} {
		cmd.MarkFlagRequired(name)
	}
	return cmd
}

func (l foreignLaunch) market() catalog.Market {
	if l.spot {
		return catalog.Spot
	}
	return catalog.OnDemand
}

// names are the GCE instance or Azure VM names of the launch.
func (l foreignLaunch) names() []string {
	out := make([]string, l.count)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", l.name, i+1)
	}
	return out
}

// parseTags reads KEY=VALUE pairs.
func parseTags(pairs []string) (map[string]string, error) {
	out := map[string]string{}
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--tag %q: want KEY=VALUE", p)
		}
		out[k] = v
	}
	return out, nil
}

func emulatorEndpoint(endpoint string) bool {
	u, err := outbound.CheckURL(endpoint, true)
	return err == nil && outbound.Loopback(u.Hostname())
}

// regionOfZone is the region a catalog zone is in.
func regionOfZone(cloud, zone string) (string, bool) {
	for _, r := range catalog.Default().RegionsOf(cloud) {
		if slices.Contains(r.Zones, zone) {
			return r.Name, true
		}
	}
	return "", false
}

// emulatorImage is the image the emulator boots from in each cloud: the
// ones gpufleet's schema defaults to.
const (
	ec2Image = "resolve:ssm:/aws/service/deeplearning/ami/x86_64/base-oss-nvidia-driver-gpu-ubuntu-22.04/latest/ami-id"
	gceImage = "projects/deeplearning-platform-release/global/images/family/common-cu124-ubuntu-2204"
)

func launchEC2(ctx context.Context, l foreignLaunch, region string) ([]string, error) {
	client := ec2.New(ec2.Options{
		Region: region, BaseEndpoint: awssdk.String(l.endpoint),
		Credentials: credentials.NewStaticCredentialsProvider("gpufleet-emulator", "gpufleet-emulator", ""),
	})
	in := &ec2.RunInstancesInput{
		ImageId: awssdk.String(ec2Image), InstanceType: types.InstanceType(l.instanceType),
		MinCount: awssdk.Int32(int32(l.count)), MaxCount: awssdk.Int32(int32(l.count)),
		Placement: &types.Placement{AvailabilityZone: awssdk.String(l.zone)},
	}
	if l.spot {
		in.InstanceMarketOptions = &types.InstanceMarketOptionsRequest{MarketType: types.MarketTypeSpot}
	}
	if len(l.tags) > 0 {
		spec := types.TagSpecification{ResourceType: types.ResourceTypeInstance}
		for _, k := range slices.Sorted(maps.Keys(l.tags)) {
			spec.Tags = append(spec.Tags, types.Tag{Key: awssdk.String(k), Value: awssdk.String(l.tags[k])})
		}
		in.TagSpecifications = []types.TagSpecification{spec}
	}
	out, err := client.RunInstances(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("launching in %s, %w", l.zone, err)
	}
	var ids []string
	for _, inst := range out.Instances {
		ids = append(ids, awssdk.ToString(inst.InstanceId))
	}
	return ids, nil
}

func launchARM(ctx context.Context, l foreignLaunch, region string) ([]string, error) {
	opts := &arm.ClientOptions{
		ClientOptions: policy.ClientOptions{
			Cloud:                           azcloud.Configuration{Services: map[azcloud.ServiceName]azcloud.ServiceConfiguration{azcloud.ResourceManager: {Endpoint: l.endpoint, Audience: "gpufleet-emulator"}}},
			InsecureAllowCredentialWithHTTP: true,
		},
		DisableRPRegistration: true,
	}
	vms, err := armcompute.NewVirtualMachinesClient(l.subscription, &azfake.TokenCredential{}, opts)
	if err != nil {
		return nil, err
	}
	zone := strings.TrimPrefix(l.zone, region+"-")
	subnet := fmt.Sprintf("/subscriptions/%s/resourceGroups/%s/providers/Microsoft.Network/virtualNetworks/gpu-%s/subnets/nodes", l.subscription, l.resourceGroup, region)
	var ids []string
	for _, name := range l.names() {
		vm := armcompute.VirtualMachine{
			Location: to.Ptr(region),
			Zones:    []*string{to.Ptr(zone)},
			Tags:     map[string]*string{},
			Properties: &armcompute.VirtualMachineProperties{
				HardwareProfile: &armcompute.HardwareProfile{VMSize: to.Ptr(armcompute.VirtualMachineSizeTypes(l.instanceType))},
				StorageProfile: &armcompute.StorageProfile{
					ImageReference: &armcompute.ImageReference{Publisher: to.Ptr("microsoft-dsvm"), Offer: to.Ptr("ubuntu-hpc"), SKU: to.Ptr("2204"), Version: to.Ptr("latest")},
					OSDisk:         &armcompute.OSDisk{CreateOption: to.Ptr(armcompute.DiskCreateOptionTypesFromImage), DeleteOption: to.Ptr(armcompute.DiskDeleteOptionTypesDelete)},
				},
				OSProfile: &armcompute.OSProfile{
					ComputerName: to.Ptr(name), AdminUsername: to.Ptr("azureuser"),
					LinuxConfiguration: &armcompute.LinuxConfiguration{
						DisablePasswordAuthentication: to.Ptr(true),
						SSH: &armcompute.SSHConfiguration{PublicKeys: []*armcompute.SSHPublicKey{{
							Path:    to.Ptr("/home/azureuser/.ssh/authorized_keys"),
							KeyData: to.Ptr("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHq3bWl2Zm9vYmFyYmF6cXV4cXV1eHF1dXpxdXV6 foreign@example.com"),
						}}},
					},
				},
				NetworkProfile: &armcompute.NetworkProfile{
					NetworkAPIVersion: to.Ptr(armcompute.NetworkAPIVersionTwoThousandTwenty1101),
					NetworkInterfaceConfigurations: []*armcompute.VirtualMachineNetworkInterfaceConfiguration{{
						Name: to.Ptr(name + "-nic"),
						Properties: &armcompute.VirtualMachineNetworkInterfaceConfigurationProperties{
							Primary:                     to.Ptr(true),
							DeleteOption:                to.Ptr(armcompute.DeleteOptionsDelete),
							EnableAcceleratedNetworking: to.Ptr(catalog.AcceleratedNetworking(l.instanceType)),
							IPConfigurations: []*armcompute.VirtualMachineNetworkInterfaceIPConfiguration{{
								Name:       to.Ptr(name + "-ip"),
								Properties: &armcompute.VirtualMachineNetworkInterfaceIPConfigurationProperties{Primary: to.Ptr(true), Subnet: &armcompute.SubResource{ID: to.Ptr(subnet)}},
							}},
						},
					}},
				},
			},
		}
		if l.spot {
			vm.Properties.Priority = to.Ptr(armcompute.VirtualMachinePriorityTypesSpot)
			vm.Properties.EvictionPolicy = to.Ptr(armcompute.VirtualMachineEvictionPolicyTypesDelete)
		}
		for k, v := range l.tags {
			vm.Tags[k] = to.Ptr(v)
		}
		poller, err := vms.BeginCreateOrUpdate(ctx, l.resourceGroup, name, vm, nil)
		if err == nil {
			_, err = poller.PollUntilDone(ctx, &runtime.PollUntilDoneOptions{Frequency: pollEvery})
		}
		if err != nil {
			return ids, fmt.Errorf("launching VM %s in %s, %w", name, l.zone, err)
		}
		ids = append(ids, name)
	}
	return ids, nil
}

// pollEvery is how often a launch looks again at an operation still
// running: the least azcore takes. The emulator's operations are mostly
// done at the first look, which comes at once.
const pollEvery = time.Second

func launchGCE(ctx context.Context, l foreignLaunch) ([]string, error) {
	if l.project == "" {
		return nil, fmt.Errorf("--project is required with --cloud gcp")
	}
	client, err := compute.NewInstancesRESTClient(ctx, option.WithEndpoint(l.endpoint), option.WithoutAuthentication())
	if err != nil {
		return nil, err
	}
	defer client.Close()
	provisioning := "STANDARD"
	if l.spot {
		provisioning = "SPOT"
	}
	var ids []string
	for _, name := range l.names() {
		op, err := client.Insert(ctx, &computepb.InsertInstanceRequest{
			Project: l.project, Zone: l.zone,
			InstanceResource: &computepb.Instance{
				Name:        proto.String(name),
				MachineType: proto.String(fmt.Sprintf("zones/%s/machineTypes/%s", l.zone, l.instanceType)),
				Labels:      l.tags,
				Scheduling:  &computepb.Scheduling{ProvisioningModel: proto.String(provisioning), OnHostMaintenance: proto.String("TERMINATE")},
				Disks: []*computepb.AttachedDisk{{
					Boot: proto.Bool(true), AutoDelete: proto.Bool(true),
					InitializeParams: &computepb.AttachedDiskInitializeParams{SourceImage: proto.String(gceImage)},
				}},
				NetworkInterfaces: []*computepb.NetworkInterface{{}},
			},
		})
		if err == nil {
			err = op.Wait(ctx)
		}
		if err == nil && op.Proto().GetError() != nil {
			err = fmt.Errorf("%v", op.Proto().GetError().GetErrors())
		}
		if err != nil {
			return ids, fmt.Errorf("launching instance %s in %s, %w", name, l.zone, err)
		}
		ids = append(ids, name)
	}
	return ids, nil
}
