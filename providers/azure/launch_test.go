// SPDX-License-Identifier: Apache-2.0

package azure

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/schema"
)

func TestReadLaunch(t *testing.T) {
	tests := []struct {
		name    string
		edit    func(*schema.Azure)
		wantErr string
	}{
		{name: "the test config", edit: func(*schema.Azure) {}},
		{name: "three parts", edit: func(c *schema.Azure) { c.Launch.Image = "canonical:ubuntu:24_04" }, wantErr: "publisher:offer:sku:version"},
		{name: "an empty part", edit: func(c *schema.Azure) { c.Launch.Image = "canonical::24_04:latest" }, wantErr: "publisher:offer:sku:version"},
		{name: "no image", edit: func(c *schema.Azure) { c.Launch.Image = "" }, wantErr: "publisher:offer:sku:version"},
		{name: "a negative disk", edit: func(c *schema.Azure) { c.Launch.DiskGB = -1 }, wantErr: "diskGB"},
		{name: "no SSH key", edit: func(c *schema.Azure) { c.Launch.SSHPublicKey = "" }, wantErr: "launch.sshPublicKey is required"},
		{name: "an SSH key of blanks", edit: func(c *schema.Azure) { c.Launch.SSHPublicKey = " \n" }, wantErr: "launch.sshPublicKey is required"},
		{name: "a user-assigned identity", edit: func(c *schema.Azure) { c.Launch.Identity = testIdentity }},
		{name: "an identity that is no identity's id", edit: func(c *schema.Azure) {
			c.Launch.Identity = "/subscriptions/" + testSub + "/resourceGroups/" + testRG + "/providers/Microsoft.Compute/virtualMachines/vm"
		}, wantErr: "launch.identity"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig()
			tt.edit(cfg)
			_, err := readLaunch(cfg)
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("got %v, want an error with %q", err, tt.wantErr)
			}
		})
	}
}

func TestVMFor(t *testing.T) {
	launch, err := readLaunch(testConfig())
	if err != nil {
		t.Fatal(err)
	}
	req := providers.CreateRequest{Token: "gf1-0123456789abcdef0123456789abcdef", Offer: spotT4, Fleet: "demo", Workload: "w", Labels: map[string]string{"team": "ml"}}
	vm := launch.vmFor("gf-demo-w-0123456789abcdef", "2", req)
	p := vm.Properties
	switch {
	case deref(vm.Location) != "eastus" || len(vm.Zones) != 1 || deref(vm.Zones[0]) != "2":
		t.Errorf("location %q zones %v", deref(vm.Location), vm.Zones)
	case deref(p.HardwareProfile.VMSize) != t4:
		t.Errorf("size %q", deref(p.HardwareProfile.VMSize))
	case deref(p.Priority) != armcompute.VirtualMachinePriorityTypesSpot || deref(p.EvictionPolicy) != armcompute.VirtualMachineEvictionPolicyTypesDelete || deref(p.BillingProfile.MaxPrice) != -1:
		t.Errorf("spot settings %v %v %+v", deref(p.Priority), deref(p.EvictionPolicy), p.BillingProfile)
	case deref(p.StorageProfile.ImageReference.Publisher) != "microsoft-dsvm" || deref(p.StorageProfile.ImageReference.Offer) != "ubuntu-hpc" ||
		deref(p.StorageProfile.ImageReference.SKU) != "2204" || deref(p.StorageProfile.ImageReference.Version) != "latest":
		t.Errorf("image %+v", p.StorageProfile.ImageReference)
	case deref(p.StorageProfile.OSDisk.DiskSizeGB) != 200 || deref(p.StorageProfile.OSDisk.DeleteOption) != armcompute.DiskDeleteOptionTypesDelete ||
		deref(p.StorageProfile.OSDisk.CreateOption) != armcompute.DiskCreateOptionTypesFromImage ||
		deref(p.StorageProfile.OSDisk.ManagedDisk.StorageAccountType) != armcompute.StorageAccountTypesPremiumLRS:
		t.Errorf("os disk %+v", p.StorageProfile.OSDisk)
	case p.OSProfile.CustomData != nil:
		t.Errorf("custom data without a bootstrap file")
	case vm.Identity != nil:
		t.Errorf("identity %+v without one configured", vm.Identity)
	case deref(p.OSProfile.ComputerName) != "gf-demo-w-0123456789abcdef" || deref(p.OSProfile.AdminUsername) != "gpufleet" || p.OSProfile.AdminPassword != nil:
		t.Errorf("os profile %+v", p.OSProfile)
	case !deref(p.OSProfile.LinuxConfiguration.DisablePasswordAuthentication) || len(p.OSProfile.LinuxConfiguration.SSH.PublicKeys) != 1 ||
		deref(p.OSProfile.LinuxConfiguration.SSH.PublicKeys[0].Path) != "/home/gpufleet/.ssh/authorized_keys":
		t.Errorf("linux configuration %+v", p.OSProfile.LinuxConfiguration)
	case deref(p.NetworkProfile.NetworkAPIVersion) == "" || len(p.NetworkProfile.NetworkInterfaceConfigurations) != 1:
		t.Errorf("network profile %+v", p.NetworkProfile)
	case deref(vm.Tags[providers.TagToken]) != req.Token || deref(vm.Tags[providers.TagFleet]) != "demo" || deref(vm.Tags["team"]) != "ml":
		t.Errorf("tags %v", tagValues(vm.Tags))
	}
	nic := p.NetworkProfile.NetworkInterfaceConfigurations[0].Properties
	if deref(nic.DeleteOption) != armcompute.DeleteOptionsDelete || !deref(nic.Primary) || !deref(nic.EnableAcceleratedNetworking) {
		t.Errorf("nic %+v", nic)
	}
	if got := p.OSProfile.LinuxConfiguration.SSH.PublicKeys[0]; deref(got.KeyData) != testConfig().Launch.SSHPublicKey {
		t.Errorf("ssh key %q", deref(got.KeyData))
	}
	if got := deref(nic.IPConfigurations[0].Properties.Subnet.ID); !strings.HasSuffix(got, "/subnets/nodes") {
		t.Errorf("subnet %q", got)
	}

	// On demand, in a region without a subnet, with no key or disk size,
	// and a name longer than a host name may be.
	launch.sshPublicKey, launch.diskGB, launch.subnets = "", 0, nil
	req.Offer = planner.OfferKey{Cloud: "azure", Region: "westus3", Zone: "westus3-1", InstanceType: t4, Market: "on-demand"}
	long := strings.Repeat("x", 80)
	vm = launch.vmFor(long, "1", req)
	p = vm.Properties
	switch {
	case p.Priority != nil || p.EvictionPolicy != nil || p.BillingProfile != nil:
		t.Errorf("on-demand VM has spot settings")
	case p.OSProfile.LinuxConfiguration.SSH != nil:
		t.Errorf("ssh keys without a key")
	case p.StorageProfile.OSDisk.DiskSizeGB != nil:
		t.Errorf("disk size without one")
	case p.NetworkProfile.NetworkInterfaceConfigurations[0].Properties.IPConfigurations[0].Properties.Subnet != nil:
		t.Errorf("subnet in a region without one")
	case len(deref(p.OSProfile.ComputerName)) != maxComputerName:
		t.Errorf("computer name of %d characters", len(deref(p.OSProfile.ComputerName)))
	}
}

func TestArmZone(t *testing.T) {
	tests := []struct {
		zone, region, want string
		ok                 bool
	}{
		{"eastus-1", "eastus", "1", true},
		{"eastus2-3", "eastus2", "3", true},
		{"", "eastus", "", true},
		{"eastus2-1", "eastus", "", false},
		{"eastus-", "eastus", "", false},
		{"1", "eastus", "", false},
	}
	for _, tt := range tests {
		got, ok := armZone(planner.OfferKey{Region: tt.region, Zone: tt.zone})
		if got != tt.want || ok != tt.ok {
			t.Errorf("armZone(%q in %q) = %q %v, want %q %v", tt.zone, tt.region, got, ok, tt.want, tt.ok)
		}
	}
}

func TestCheckBootstrap(t *testing.T) {
	tests := []struct {
		name    string
		b       *providers.Bootstrap
		wantErr string
	}{
		{"none", nil, ""},
		{"cloud-init", &providers.Bootstrap{Format: schema.BootstrapCloudInit, Data: []byte("#cloud-config\n")}, ""},
		{"a script at the limit", &providers.Bootstrap{Format: schema.BootstrapScript, Data: make([]byte, maxCustomData)}, ""},
		{"one byte over", &providers.Bootstrap{Format: schema.BootstrapScript, Data: make([]byte, maxCustomData+1)}, "65536 bytes, over the 65535"},
		{"an unknown format", &providers.Bootstrap{Format: "ignition", Data: []byte("{}")}, `bootstrap format "ignition"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkBootstrap(tt.b)
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("got %v, want an error with %q", err, tt.wantErr)
			}
		})
	}
	// The limit is Compute's: 65,535 bytes are 87,380 base64 characters.
	if n := base64.StdEncoding.EncodedLen(maxCustomData); n != 87380 {
		t.Errorf("%d bytes encode to %d characters", maxCustomData, n)
	}
}
