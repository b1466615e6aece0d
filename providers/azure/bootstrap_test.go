// SPDX-License-Identifier: Apache-2.0

package azure

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

const (
	testIdentity = "/subscriptions/" + testSub + "/resourceGroups/" + testRG + "/providers/Microsoft.ManagedIdentity/userAssignedIdentities/gpu-nodes"
	// canary stands for a secret's value in a bootstrap file: it must
	// reach the VM's custom data and nothing else.
	canary = "canary-secret-4711"
)

var guidPattern = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

func bootstrapOf(format, data string) *providers.Bootstrap {
	return &providers.Bootstrap{Format: format, Data: []byte(data), Digest: "0123456789ab"}
}

// worldVM is the world's record of a VM the provider created.
func (e *env) worldVM(t *testing.T, name string) *sim.Instance {
	t.Helper()
	for _, inst := range e.world.List(catalog.Azure, nil) {
		if inst.Properties["name"] == name {
			return inst
		}
	}
	t.Fatalf("the world has no VM %s", name)
	return nil
}

// A create with a bootstrap file, an SSH key and an identity makes a VM
// that can do its work: read back through the SDK, it has all three, a
// NIC with accelerated networking in the region's subnet, and a premium
// OS disk; the file itself is in the VM's custom data, which ARM keeps
// and never returns.
func TestCreateBootstraps(t *testing.T) {
	tests := []struct {
		name   string
		offer  planner.OfferKey
		format string
		data   string
		subnet string
	}{
		{"cloud-config on a T4", onDemandT4, schema.BootstrapCloudInit,
			"#cloud-config\nwrite_files:\n- path: /etc/gpufleet/join\n  content: " + canary + "\n",
			"/subscriptions/" + testSub + "/resourceGroups/" + testRG + "/providers/Microsoft.Network/virtualNetworks/gpu/subnets/nodes"},
		{"a script on a regional A100", planner.OfferKey{Cloud: catalog.Azure, Region: "westus3", InstanceType: "Standard_NC24ads_A100_v4", Market: catalog.OnDemand},
			schema.BootstrapScript, "#!/bin/bash\nset -eu\necho " + canary + " > /etc/gpufleet/join\n",
			"/subscriptions/" + testSub + "/resourceGroups/" + testRG + "/providers/Microsoft.Network/virtualNetworks/gpu-westus3/subnets/nodes"},
	}
	e := newEnv(t, envConfig{edit: func(c *schema.Azure) { c.Launch.Identity = testIdentity }})
	e.holdIdentity(t, testIdentity)
	ctx := context.Background()
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := request(tt.offer, "demo", i)
			req.Bootstrap = bootstrapOf(tt.format, tt.data)
			inst, err := e.provider.Create(ctx, req)
			if err != nil {
				t.Fatal(err)
			}

			var raw *http.Response
			got, err := e.raw.Get(runtime.WithCaptureResponse(ctx, &raw), testRG, inst.ID, nil)
			if err != nil {
				t.Fatal(err)
			}
			body, err := runtime.Payload(raw)
			if err != nil {
				t.Fatal(err)
			}
			b64 := base64.StdEncoding.EncodeToString([]byte(tt.data))
			if strings.Contains(string(body), canary) || strings.Contains(string(body), b64[:40]) || strings.Contains(string(body), "customData") {
				t.Errorf("GET returns the custom data: %s", body)
			}

			p := got.Properties
			id := got.Identity
			switch {
			case id == nil || deref(id.Type) != armcompute.ResourceIdentityTypeUserAssigned || len(id.UserAssignedIdentities) != 1:
				t.Errorf("identity %+v", id)
			case id.UserAssignedIdentities[testIdentity] == nil ||
				!guidPattern.MatchString(deref(id.UserAssignedIdentities[testIdentity].PrincipalID)) ||
				!guidPattern.MatchString(deref(id.UserAssignedIdentities[testIdentity].ClientID)):
				t.Errorf("user-assigned identities %+v", id.UserAssignedIdentities)
			case p.OSProfile.CustomData != nil:
				t.Errorf("custom data returned")
			case !deref(p.OSProfile.LinuxConfiguration.DisablePasswordAuthentication):
				t.Errorf("password sign-in on")
			case len(p.OSProfile.LinuxConfiguration.SSH.PublicKeys) != 1:
				t.Errorf("ssh keys %+v", p.OSProfile.LinuxConfiguration.SSH)
			case deref(p.OSProfile.LinuxConfiguration.SSH.PublicKeys[0].Path) != "/home/gpufleet/.ssh/authorized_keys" ||
				deref(p.OSProfile.LinuxConfiguration.SSH.PublicKeys[0].KeyData) != testConfig().Launch.SSHPublicKey:
				t.Errorf("ssh key %+v", p.OSProfile.LinuxConfiguration.SSH.PublicKeys[0])
			case deref(p.StorageProfile.OSDisk.ManagedDisk.StorageAccountType) != armcompute.StorageAccountTypesPremiumLRS ||
				deref(p.StorageProfile.OSDisk.DiskSizeGB) != 200:
				t.Errorf("os disk %+v %+v", p.StorageProfile.OSDisk, p.StorageProfile.OSDisk.ManagedDisk)
			case deref(got.Tags[providers.TagBootstrap]) != req.Bootstrap.Digest:
				t.Errorf("%s tag %q, want %q", providers.TagBootstrap, deref(got.Tags[providers.TagBootstrap]), req.Bootstrap.Digest)
			}
			nics := p.NetworkProfile.NetworkInterfaceConfigurations
			if len(nics) != 1 || !deref(nics[0].Properties.EnableAcceleratedNetworking) {
				t.Fatalf("nic configurations %+v", nics)
			}
			if got := deref(nics[0].Properties.IPConfigurations[0].Properties.Subnet.ID); got != tt.subnet {
				t.Errorf("subnet %q, want %q", got, tt.subnet)
			}

			// The identity's ids are the same on every read.
			again, err := e.raw.Get(ctx, testRG, inst.ID, &armcompute.VirtualMachinesClientGetOptions{Expand: to.Ptr(armcompute.InstanceViewTypesInstanceView)})
			if err != nil {
				t.Fatal(err)
			}
			if a, b := again.Identity.UserAssignedIdentities[testIdentity], id.UserAssignedIdentities[testIdentity]; deref(a.PrincipalID) != deref(b.PrincipalID) || deref(a.ClientID) != deref(b.ClientID) {
				t.Errorf("identity ids changed between reads: %+v, then %+v", b, a)
			}

			vm := e.worldVM(t, inst.ID)
			if vm.Properties["customData"] != tt.data {
				t.Errorf("the world holds custom data %q, want %q", vm.Properties["customData"], tt.data)
			}
			if vm.Tags[providers.TagBootstrap] != req.Bootstrap.Digest {
				t.Errorf("world tags %v", vm.Tags)
			}
		})
	}

	// A listing shows neither the custom data nor anything of it.
	var raw *http.Response
	pager := e.raw.NewListPager(testRG, nil)
	page, err := pager.NextPage(runtime.WithCaptureResponse(ctx, &raw))
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Value) != len(tests) {
		t.Fatalf("listed %d VMs", len(page.Value))
	}
	if body, _ := runtime.Payload(raw); strings.Contains(string(body), canary) || strings.Contains(string(body), "customData") {
		t.Errorf("a list returns custom data: %s", body)
	}
	listed, err := e.provider.List(ctx, providers.Selector{})
	if err != nil {
		t.Fatal(err)
	}
	for _, inst := range listed {
		if inst.Bootstrap != "0123456789ab" {
			t.Errorf("%s lists with bootstrap %q", inst.ID, inst.Bootstrap)
		}
	}
}

// A bootstrap file over Compute's limit is refused before any call, with
// a message that gives its size and none of its content.
func TestCreateRefusesAnOversizedBootstrap(t *testing.T) {
	e := newEnv(t, envConfig{})
	req := request(onDemandT4, "demo", 0)
	data := strings.Repeat(canary+"\n", maxCustomData/len(canary)+1)
	req.Bootstrap = bootstrapOf(schema.BootstrapScript, "#!/bin/sh\n"+data)
	_, err := e.provider.Create(context.Background(), req)
	if !errors.Is(err, providers.ErrInvalid) {
		t.Fatalf("got %v, want ErrInvalid", err)
	}
	if msg := err.Error(); strings.Contains(msg, canary) || !strings.Contains(msg, "custom data") {
		t.Errorf("message %q", msg)
	}
	if n := e.world.Calls()["azure put"]; n != 0 {
		t.Errorf("%d PUTs reached ARM", n)
	}
	if n := len(e.leftovers(req.Token)); n != 0 {
		t.Errorf("%d VMs made", n)
	}
}

// A create in a region that has no subnet configured is refused before
// any call, naming the setting that is missing.
func TestCreateRefusesARegionWithoutASubnet(t *testing.T) {
	e := newEnv(t, envConfig{edit: func(c *schema.Azure) { delete(c.Launch.SubnetByRegion, "westus3") }})
	req := request(planner.OfferKey{Cloud: catalog.Azure, Region: "westus3", Zone: "westus3-1", InstanceType: "Standard_NC24ads_A100_v4", Market: catalog.OnDemand}, "demo", 0)
	_, err := e.provider.Create(context.Background(), req)
	if !errors.Is(err, providers.ErrInvalid) || !strings.Contains(err.Error(), "launch.subnetByRegion.westus3") {
		t.Fatalf("got %v, want ErrInvalid naming launch.subnetByRegion.westus3", err)
	}
	if n := e.world.Calls()["azure put"]; n != 0 {
		t.Errorf("%d PUTs reached ARM", n)
	}
	// The region that has one still launches.
	if _, err := e.provider.Create(context.Background(), request(onDemandT4, "demo", 0)); err != nil {
		t.Fatal(err)
	}
}

// Without an SSH key no one could sign in to a VM (password sign-in is
// off) and ARM would refuse it: the create fails at once.
func TestCreateRefusesALaunchWithoutAKey(t *testing.T) {
	e := newEnv(t, envConfig{edit: func(c *schema.Azure) { c.Launch.SSHPublicKey = "" }})
	_, err := e.provider.Create(context.Background(), request(onDemandT4, "demo", 0))
	if !errors.Is(err, providers.ErrInvalid) || !strings.Contains(err.Error(), "launch.sshPublicKey") {
		t.Fatalf("got %v, want ErrInvalid naming launch.sshPublicKey", err)
	}
	if n := e.world.Calls()["azure put"]; n != 0 {
		t.Errorf("%d PUTs reached ARM", n)
	}
}

// What the provider sends is what ARM takes: the emulator, which enforces
// custom data, SSH, identity and accelerated-networking rules as ARM
// does, accepts a VM of every Azure size of the catalog.
func TestCreateEveryCatalogSize(t *testing.T) {
	e := newEnv(t, envConfig{edit: func(c *schema.Azure) {
		c.Regions = nil
		c.Launch.Identity = testIdentity
		c.Launch.SubnetByRegion = map[string]string{}
		for _, r := range catalog.Default().RegionsOf(catalog.Azure) {
			c.Launch.SubnetByRegion[r.Name] = "/subscriptions/" + testSub + "/resourceGroups/" + testRG + "/providers/Microsoft.Network/virtualNetworks/gpu-" + r.Name + "/subnets/nodes"
		}
	}})
	e.holdIdentity(t, testIdentity)
	seen := map[string]bool{}
	for _, o := range catalog.Default().Offers {
		if o.Cloud != catalog.Azure || o.Market != catalog.OnDemand || seen[o.InstanceType] {
			continue
		}
		seen[o.InstanceType] = true
		req := request(planner.OfferKey{Cloud: o.Cloud, Region: o.Region, Zone: o.Zone, InstanceType: o.InstanceType, Market: o.Market}, "sizes", len(seen))
		req.Bootstrap = bootstrapOf(schema.BootstrapCloudInit, "#cloud-config\n")
		if _, err := e.provider.Create(context.Background(), req); err != nil {
			t.Errorf("%s: %v", o.InstanceType, err)
		}
	}
	if len(seen) < 5 {
		t.Fatalf("only %d sizes tried", len(seen))
	}
}

// A size without Accelerated Networking is created without it: ARM would
// refuse the VM otherwise.
func TestCreateWithoutAcceleratedNetworking(t *testing.T) {
	const nv6 = "Standard_NV6" // M60 GPUs, from before Accelerated Networking
	cat := catalog.Default()
	cat.Offers = append(cat.Offers, catalog.Offer{Cloud: catalog.Azure, Region: "eastus", InstanceType: nv6, Market: catalog.OnDemand,
		GPUModel: "M60", GPUs: 1, VCPUs: 6, MemoryGiB: 56, PriceMicros: 1_140_000})
	e := newEnv(t, envConfig{catalog: cat})
	ctx := context.Background()
	inst, err := e.provider.Create(ctx, request(planner.OfferKey{Cloud: catalog.Azure, Region: "eastus", Zone: "eastus-1", InstanceType: nv6, Market: catalog.OnDemand}, "demo", 0))
	if err != nil {
		t.Fatal(err)
	}
	got, err := e.raw.Get(ctx, testRG, inst.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if nic := got.Properties.NetworkProfile.NetworkInterfaceConfigurations[0].Properties; deref(nic.EnableAcceleratedNetworking) {
		t.Errorf("accelerated networking on %s", nv6)
	}
}

// An identity the subscription does not hold fails the create as ARM
// fails it: a request no retry fixes, naming the identity.
func TestCreateWithoutTheIdentity(t *testing.T) {
	e := newEnv(t, envConfig{edit: func(c *schema.Azure) { c.Launch.Identity = testIdentity }})
	_, err := e.provider.Create(context.Background(), request(onDemandT4, "demo", 0))
	var pe *providers.Error
	if !errors.As(err, &pe) || pe.Kind != providers.KindInvalid || pe.Code != "FailedIdentityOperation" || !strings.Contains(pe.Message, testIdentity) {
		t.Fatalf("create: %v, want an invalid request FailedIdentityOperation naming %s", err, testIdentity)
	}
	if n := len(e.world.List(catalog.Azure, nil)); n != 0 {
		t.Errorf("%d VMs after the refusal", n)
	}
}
