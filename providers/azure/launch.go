// SPDX-License-Identifier: Apache-2.0

package azure

import (
	"encoding/base64"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7"

	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/schema"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// launchSpec is cfg.Launch, read and checked once.
type launchSpec struct {
	image         armcompute.ImageReference
	diskGB        int32
	adminUsername string
	sshPublicKey  string
	subnets       map[string]string
	// identity is the resource id of the user-assigned identity the VMs
	// run as, "" for none.
	identity string
}

const (
	defaultAdminUsername = "gpufleet"
	// maxComputerName is Linux's limit on a VM's host name in Azure.
	maxComputerName = 64
	// maxCustomData is the most custom data Compute takes, decoded: its
	// base64 may be 87,380 characters.
	maxCustomData = 65535
)

// userIdentityID is a user-assigned identity's resource id.
var userIdentityID = regexp.MustCompile(`(?i)^/subscriptions/[^/]+/resourcegroups/[^/]+/providers/Microsoft\.ManagedIdentity/userAssignedIdentities/[^/]+$`)

func readLaunch(cfg *schema.Azure) (launchSpec, error) {
	l := cfg.Launch
	parts := strings.Split(l.Image, ":")
	if len(parts) != 4 || slices.Contains(parts, "") {
		return launchSpec{}, fmt.Errorf("launch.image %q: want publisher:offer:sku:version", l.Image)
	}
	if l.DiskGB < 0 || l.DiskGB > 1<<16 {
		return launchSpec{}, fmt.Errorf("launch.diskGB %d is out of range", l.DiskGB)
	}
	spec := launchSpec{
		image: armcompute.ImageReference{
			Publisher: to.Ptr(parts[0]), Offer: to.Ptr(parts[1]), SKU: to.Ptr(parts[2]), Version: to.Ptr(parts[3]),
		},
		diskGB:        int32(l.DiskGB),
		adminUsername: l.AdminUsername,
		// A key pasted from a .pub file ends in a newline, which is no
		// part of the key.
		sshPublicKey: strings.TrimSpace(l.SSHPublicKey),
		subnets:      l.SubnetByRegion,
		identity:     l.Identity,
	}
	if spec.adminUsername == "" {
		spec.adminUsername = defaultAdminUsername
	}
	if spec.sshPublicKey == "" {
		// Password sign-in is off, so a VM without a key is one nobody can
		// sign in to, and ARM refuses it.
		return launchSpec{}, fmt.Errorf("launch.sshPublicKey is required: Azure VMs are created with password sign-in off")
	}
	if spec.identity != "" && !userIdentityID.MatchString(spec.identity) {
		return launchSpec{}, fmt.Errorf("launch.identity %q: want a user-assigned identity's resource id, /subscriptions/<id>/resourceGroups/<group>/providers/Microsoft.ManagedIdentity/userAssignedIdentities/<name>", spec.identity)
	}
	return spec, nil
}

// subnet is the subnet the NICs of a region's VMs join.
func (l launchSpec) subnet(region string) (string, bool) {
	s := l.subnets[region]
	return s, s != ""
}

// checkBootstrap refuses a bootstrap file Azure cannot take. Its message
// gives sizes only: the file holds secrets.
func checkBootstrap(b *providers.Bootstrap) error {
	switch {
	case b == nil:
		return nil
	case b.Format != schema.BootstrapCloudInit && b.Format != schema.BootstrapScript:
		return fmt.Errorf("bootstrap format %q: want %q or %q", b.Format, schema.BootstrapCloudInit, schema.BootstrapScript)
	case len(b.Data) > maxCustomData:
		return fmt.Errorf("the bootstrap file is %d bytes, over the %d bytes Azure takes as custom data", len(b.Data), maxCustomData)
	}
	return nil
}

// vmFor is the PUT body of the VM a create asks for. armZone is the zone's
// number within the region, "" for a regional VM.
func (l launchSpec) vmFor(name, armZone string, req providers.CreateRequest) armcompute.VirtualMachine {
	props := &armcompute.VirtualMachineProperties{
		HardwareProfile: &armcompute.HardwareProfile{VMSize: to.Ptr(armcompute.VirtualMachineSizeTypes(req.Offer.InstanceType))},
		StorageProfile: &armcompute.StorageProfile{
			ImageReference: to.Ptr(l.image),
			OSDisk: &armcompute.OSDisk{
				CreateOption: to.Ptr(armcompute.DiskCreateOptionTypesFromImage),
				// The disk goes with the VM, so a delete leaves nothing
				// billed behind.
				DeleteOption: to.Ptr(armcompute.DiskDeleteOptionTypesDelete),
				// Premium SSD: images, models and datasets load from it,
				// and every GPU series supports it.
				ManagedDisk: &armcompute.ManagedDiskParameters{StorageAccountType: to.Ptr(armcompute.StorageAccountTypesPremiumLRS)},
			},
		},
		OSProfile: &armcompute.OSProfile{
			ComputerName:  to.Ptr(name[:min(len(name), maxComputerName)]),
			AdminUsername: to.Ptr(l.adminUsername),
			LinuxConfiguration: &armcompute.LinuxConfiguration{
				DisablePasswordAuthentication: to.Ptr(true),
			},
		},
		NetworkProfile: &armcompute.NetworkProfile{
			// With networkInterfaceConfigurations the VM creates its own
			// NIC, and deletes it with itself.
			NetworkAPIVersion: to.Ptr(armcompute.NetworkAPIVersionTwoThousandTwenty1101),
			NetworkInterfaceConfigurations: []*armcompute.VirtualMachineNetworkInterfaceConfiguration{{
				Name: to.Ptr(name + "-nic"),
				Properties: &armcompute.VirtualMachineNetworkInterfaceConfigurationProperties{
					Primary:                     to.Ptr(true),
					DeleteOption:                to.Ptr(armcompute.DeleteOptionsDelete),
					EnableAcceleratedNetworking: to.Ptr(catalog.AcceleratedNetworking(req.Offer.InstanceType)),
					IPConfigurations: []*armcompute.VirtualMachineNetworkInterfaceIPConfiguration{{
						Name:       to.Ptr(name + "-ip"),
						Properties: &armcompute.VirtualMachineNetworkInterfaceIPConfigurationProperties{Primary: to.Ptr(true)},
					}},
				},
			}},
		},
	}
	if l.diskGB > 0 {
		props.StorageProfile.OSDisk.DiskSizeGB = to.Ptr(l.diskGB)
	}
	if l.sshPublicKey != "" {
		props.OSProfile.LinuxConfiguration.SSH = &armcompute.SSHConfiguration{PublicKeys: []*armcompute.SSHPublicKey{{
			Path:    to.Ptr("/home/" + l.adminUsername + "/.ssh/authorized_keys"),
			KeyData: to.Ptr(l.sshPublicKey),
		}}}
	}
	if subnet, ok := l.subnet(req.Offer.Region); ok {
		ip := props.NetworkProfile.NetworkInterfaceConfigurations[0].Properties.IPConfigurations[0]
		ip.Properties.Subnet = &armcompute.SubResource{ID: to.Ptr(subnet)}
	}
	if b := req.Bootstrap; b != nil && len(b.Data) > 0 {
		// cloud-init reads custom data whatever it holds: a cloud-config,
		// or a script it runs.
		props.OSProfile.CustomData = to.Ptr(base64.StdEncoding.EncodeToString(b.Data))
	}
	if req.Offer.Market == catalog.Spot {
		// Evicted VMs are deleted rather than kept deallocated, so an
		// eviction leaves no disk to pay for; -1 pays up to the on-demand
		// price, so a VM is never evicted for price alone.
		props.Priority = to.Ptr(armcompute.VirtualMachinePriorityTypesSpot)
		props.EvictionPolicy = to.Ptr(armcompute.VirtualMachineEvictionPolicyTypesDelete)
		props.BillingProfile = &armcompute.BillingProfile{MaxPrice: to.Ptr[float64](-1)}
	}
	vm := armcompute.VirtualMachine{
		Location:   to.Ptr(req.Offer.Region),
		Properties: props,
		Tags:       map[string]*string{},
	}
	if armZone != "" {
		vm.Zones = []*string{to.Ptr(armZone)}
	}
	if l.identity != "" {
		vm.Identity = &armcompute.VirtualMachineIdentity{
			Type:                   to.Ptr(armcompute.ResourceIdentityTypeUserAssigned),
			UserAssignedIdentities: map[string]*armcompute.UserAssignedIdentitiesValue{l.identity: {}},
		}
	}
	for k, v := range providers.OwnershipTags(req) {
		vm.Tags[k] = to.Ptr(v)
	}
	return vm
}
