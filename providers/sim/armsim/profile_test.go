// SPDX-License-Identifier: Apache-2.0

package armsim

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

const (
	identityA = "/subscriptions/" + testSub + "/resourceGroups/" + testRG + "/providers/Microsoft.ManagedIdentity/userAssignedIdentities/nodes-a"
	identityB = "/subscriptions/" + testSub + "/resourceGroups/" + testRG + "/providers/Microsoft.ManagedIdentity/userAssignedIdentities/nodes-b"
	// nv6 is an NV-series size, whose M60 GPUs predate Accelerated
	// Networking: ARM refuses it there.
	nv6 = "Standard_NV6"
	// secret stands for a secret's value in custom data.
	secret = "canary-secret-4711"
)

var guidPattern = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func withCustomData(data string) vmOption {
	return func(vm *armcompute.VirtualMachine) {
		vm.Properties.OSProfile.CustomData = to.Ptr(base64.StdEncoding.EncodeToString([]byte(data)))
	}
}

func withRawCustomData(raw string) vmOption {
	return func(vm *armcompute.VirtualMachine) { vm.Properties.OSProfile.CustomData = to.Ptr(raw) }
}

func userAssigned(ids ...string) vmOption {
	return func(vm *armcompute.VirtualMachine) {
		vm.Identity = &armcompute.VirtualMachineIdentity{Type: to.Ptr(armcompute.ResourceIdentityTypeUserAssigned),
			UserAssignedIdentities: map[string]*armcompute.UserAssignedIdentitiesValue{}}
		for _, id := range ids {
			vm.Identity.UserAssignedIdentities[id] = &armcompute.UserAssignedIdentitiesValue{}
		}
	}
}

func acceleratedNIC(on bool) vmOption {
	return func(vm *armcompute.VirtualMachine) {
		vm.Properties.NetworkProfile.NetworkInterfaceConfigurations[0].Properties.EnableAcceleratedNetworking = to.Ptr(on)
	}
}

func noPassword(vm *armcompute.VirtualMachine) { vm.Properties.OSProfile.AdminPassword = nil }

// refusal asserts a create failed with an ARM error of that code, status
// and target, and returns its message.
func refusal(t *testing.T, err error, code string, status int, target string) string {
	t.Helper()
	re := responseError(t, err, code, status)
	body, _ := runtime.Payload(re.RawResponse)
	var e errorBody
	if jerr := json.Unmarshal(body, &e); jerr != nil {
		t.Fatalf("error body %s: %v", body, jerr)
	}
	if e.Error.Target != target {
		t.Fatalf("target %q, want %q: %s", e.Error.Target, target, body)
	}
	return e.Error.Message
}

// rawGet is a VM's GET as it crosses the wire.
func (f *front) rawGet(t *testing.T, name string) string {
	t.Helper()
	resp := rawRequest(t, "GET", f.url+vmPath+name+"?api-version="+APIVersion, nil, nil)
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", name, resp.StatusCode, body)
	}
	return string(body)
}

// Custom data is taken in base64 up to Compute's limit, kept decoded for
// the VM's first boot, and never returned.
func TestCustomData(t *testing.T) {
	f := newFront(t, frontConfig{})
	data := "#cloud-config\nwrite_files:\n- path: /etc/join\n  content: " + secret + "\n"
	vm := f.mustCreate(t, "with-data", vmRequest("eastus", t4, inZone("1"), withCustomData(data)))
	if vm.Properties.OSProfile.CustomData != nil {
		t.Error("the create's answer returns custom data")
	}
	inst, ok := f.world.Get(deref(vm.Properties.VMID))
	if !ok || inst.Properties[propCustomData] != data {
		t.Fatalf("the world holds %q, want %q", inst.Properties[propCustomData], data)
	}
	got, err := f.get(t, "with-data")
	if err != nil {
		t.Fatal(err)
	}
	if got.Properties.OSProfile.CustomData != nil {
		t.Error("GET returns custom data")
	}
	if body := f.rawGet(t, "with-data"); strings.Contains(body, "customData") || strings.Contains(body, secret) {
		t.Errorf("GET returns custom data: %s", body)
	}
	resp := rawRequest(t, "GET", f.url+vmPath[:len(vmPath)-1]+"?api-version="+APIVersion, nil, nil)
	if body, _ := io.ReadAll(resp.Body); strings.Contains(string(body), "customData") || strings.Contains(string(body), secret) {
		t.Errorf("a list returns custom data: %s", body)
	}

	// At the limit: 65,535 bytes, 87,380 characters of base64.
	full := strings.Repeat("x", 65535)
	if n := len(base64.StdEncoding.EncodeToString([]byte(full))); n != maxCustomData {
		t.Fatalf("the limit's data encodes to %d characters", n)
	}
	f.mustCreate(t, "at-the-limit", vmRequest("eastus", t4, inZone("1"), withCustomData(full)))

	for _, tt := range []struct {
		name string
		opt  vmOption
	}{
		{"one byte over", withCustomData(secret + strings.Repeat("x", 65536-len(secret)))},
		{"not base64", withRawCustomData(secret + "!")},
		{"base64 cut short", withRawCustomData(base64.StdEncoding.EncodeToString([]byte(secret))[:10])},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := f.create(t, "refused", vmRequest("eastus", t4, inZone("1"), tt.opt))
			msg := refusal(t, err, "InvalidParameter", http.StatusBadRequest, "customData")
			if msg != "Custom data in OSProfile must be in Base64 encoding and with a maximum length of 87380 characters." {
				t.Errorf("message %q", msg)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("the refusal repeats the data: %v", err)
			}
		})
	}
	if _, err := f.get(t, "refused"); err == nil {
		t.Error("a refused create made a VM")
	}

	// Custom data is fixed at creation: a PUT may repeat it or leave it
	// out, not change it.
	for _, tt := range []struct {
		name string
		opt  vmOption
		ok   bool
	}{
		{"the same", withCustomData(data), true},
		{"left out", func(*armcompute.VirtualMachine) {}, true},
		{"another", withCustomData(data + "# more\n"), false},
	} {
		t.Run("update with "+tt.name, func(t *testing.T) {
			_, err := f.create(t, "with-data", vmRequest("eastus", t4, inZone("1"), tt.opt))
			if tt.ok && err != nil {
				t.Fatal(err)
			}
			if !tt.ok {
				refusal(t, err, "PropertyChangeNotAllowed", http.StatusConflict, "customData")
			}
			if inst, _ := f.world.Get(deref(vm.Properties.VMID)); inst.Properties[propCustomData] != data {
				t.Errorf("the world holds %q after the update", inst.Properties[propCustomData])
			}
		})
	}
}

// A Linux VM needs a way in: SSH keys at the admin's authorized_keys, or a
// password that is not disabled.
func TestLinuxAuthentication(t *testing.T) {
	f := newFront(t, frontConfig{})
	vm := f.mustCreate(t, "keys-only", vmRequest("eastus", t4, inZone("1"), noPassword))
	keys := vm.Properties.OSProfile.LinuxConfiguration.SSH.PublicKeys
	if len(keys) != 1 || deref(keys[0].Path) != "/home/gpufleet/.ssh/authorized_keys" || !strings.HasPrefix(deref(keys[0].KeyData), "ssh-ed25519 ") {
		t.Errorf("public keys %+v", vm.Properties.OSProfile.LinuxConfiguration.SSH)
	}
	got, err := f.get(t, "keys-only")
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Properties.OSProfile.LinuxConfiguration.SSH.PublicKeys) != 1 || got.Properties.OSProfile.AdminPassword != nil {
		t.Errorf("GET os profile %+v", got.Properties.OSProfile)
	}
	f.mustCreate(t, "password-only", vmRequest("eastus", t4, inZone("1"), func(vm *armcompute.VirtualMachine) {
		vm.Properties.OSProfile.LinuxConfiguration = nil
	}))

	noKeys := func(vm *armcompute.VirtualMachine) { vm.Properties.OSProfile.LinuxConfiguration.SSH = nil }
	const noAuth = "Authentication using either SSH or by user name and password must be enabled in Linux profile."
	tests := []struct {
		name   string
		opts   []vmOption
		target string
		text   string
	}{
		{"password sign-in off and no key", []vmOption{noKeys}, "linuxConfiguration", noAuth},
		{"an empty key list", []vmOption{noPassword, func(vm *armcompute.VirtualMachine) {
			vm.Properties.OSProfile.LinuxConfiguration.SSH.PublicKeys = nil
		}}, "linuxConfiguration", noAuth},
		{"neither a key nor a password", []vmOption{noKeys, noPassword, func(vm *armcompute.VirtualMachine) {
			vm.Properties.OSProfile.LinuxConfiguration.DisablePasswordAuthentication = nil
		}}, "linuxConfiguration", noAuth},
		{"a key for another user", []vmOption{func(vm *armcompute.VirtualMachine) {
			vm.Properties.OSProfile.LinuxConfiguration.SSH.PublicKeys[0].Path = to.Ptr("/home/root/.ssh/authorized_keys")
		}}, "linuxConfiguration.ssh.publicKeys.path", "limited to its default value /home/gpufleet/.ssh/authorized_keys"},
		{"a key that is no key", []vmOption{func(vm *armcompute.VirtualMachine) {
			vm.Properties.OSProfile.LinuxConfiguration.SSH.PublicKeys[0].KeyData = to.Ptr("-----BEGIN OPENSSH PRIVATE KEY-----")
		}}, "linuxConfiguration.ssh.publicKeys.keyData", "keyData is invalid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := f.create(t, "refused", vmRequest("eastus", t4, append([]vmOption{inZone("1")}, tt.opts...)...))
			if msg := refusal(t, err, "InvalidParameter", http.StatusBadRequest, tt.target); !strings.Contains(msg, tt.text) {
				t.Errorf("message %q lacks %q", msg, tt.text)
			}
		})
	}
	// Windows has no Linux profile to check.
	f.mustCreate(t, "windows", vmRequest("eastus", t4, inZone("1"), noKeys, func(vm *armcompute.VirtualMachine) {
		vm.Properties.OSProfile.LinuxConfiguration = nil
		vm.Properties.OSProfile.WindowsConfiguration = &armcompute.WindowsConfiguration{}
	}))
}

// A VM's managed identity is kept and returned with the ids Entra ID gives
// it: the same for every VM of one identity, on every read.
func TestIdentity(t *testing.T) {
	f := newFront(t, frontConfig{})
	if err := f.world.SetAccount(sim.Account{Identities: []string{identityA, identityB}}); err != nil {
		t.Fatal(err)
	}
	a1 := f.mustCreate(t, "a1", vmRequest("eastus", t4, inZone("1"), userAssigned(identityA)))
	a2 := f.mustCreate(t, "a2", vmRequest("eastus", t4, inZone("2"), userAssigned(identityA)))
	b := f.mustCreate(t, "b", vmRequest("eastus", t4, inZone("1"), userAssigned(identityB)))
	ids := func(vm armcompute.VirtualMachine, id string) (string, string) {
		t.Helper()
		if vm.Identity == nil || deref(vm.Identity.Type) != armcompute.ResourceIdentityTypeUserAssigned || len(vm.Identity.UserAssignedIdentities) != 1 {
			t.Fatalf("identity %+v", vm.Identity)
		}
		v := vm.Identity.UserAssignedIdentities[id]
		if v == nil || !guidPattern.MatchString(deref(v.PrincipalID)) || !guidPattern.MatchString(deref(v.ClientID)) || deref(v.PrincipalID) == deref(v.ClientID) {
			t.Fatalf("identity %s: %+v", id, v)
		}
		if vm.Identity.PrincipalID != nil || vm.Identity.TenantID != nil {
			t.Errorf("a user-assigned identity has a system principal %q", deref(vm.Identity.PrincipalID))
		}
		return deref(v.PrincipalID), deref(v.ClientID)
	}
	p1, c1 := ids(a1, identityA)
	got, err := f.get(t, "a1")
	if err != nil {
		t.Fatal(err)
	}
	if p, c := ids(got, identityA); p != p1 || c != c1 {
		t.Errorf("GET reads %s %s, the create %s %s", p, c, p1, c1)
	}
	if p, c := ids(a2, identityA); p != p1 || c != c1 {
		t.Errorf("two VMs of one identity read %s %s and %s %s", p1, c1, p, c)
	}
	if p, _ := ids(b, identityB); p == p1 {
		t.Error("two identities share a principal")
	}
	pager := f.vms.NewListPager(testRG, nil)
	page, err := pager.NextPage(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, vm := range page.Value {
		if vm.Identity == nil || len(vm.Identity.UserAssignedIdentities) != 1 {
			t.Errorf("%s lists with identity %+v", deref(vm.Name), vm.Identity)
		}
	}

	sys := f.mustCreate(t, "system", vmRequest("eastus", t4, inZone("1"), func(vm *armcompute.VirtualMachine) {
		vm.Identity = &armcompute.VirtualMachineIdentity{Type: to.Ptr(armcompute.ResourceIdentityTypeSystemAssigned)}
	}))
	if !guidPattern.MatchString(deref(sys.Identity.PrincipalID)) || deref(sys.Identity.TenantID) == "" || sys.Identity.UserAssignedIdentities != nil {
		t.Errorf("system-assigned identity %+v", sys.Identity)
	}
	none := f.mustCreate(t, "none", vmRequest("eastus", t4, inZone("1"), func(vm *armcompute.VirtualMachine) {
		vm.Identity = &armcompute.VirtualMachineIdentity{Type: to.Ptr(armcompute.ResourceIdentityTypeNone)}
	}))
	if none.Identity != nil {
		t.Errorf("identity None reads %+v", none.Identity)
	}

	tests := []struct {
		name         string
		opt          vmOption
		code, target string
		status       int
	}{
		{"user-assigned without ids", userAssigned(), "MissingIdentityIds", "", http.StatusBadRequest},
		{"system-assigned with ids", func(vm *armcompute.VirtualMachine) {
			userAssigned(identityA)(vm)
			vm.Identity.Type = to.Ptr(armcompute.ResourceIdentityTypeSystemAssigned)
		}, "InvalidParameter", "resourceIdentity.identityIds", http.StatusBadRequest},
		{"an unknown type", func(vm *armcompute.VirtualMachine) {
			vm.Identity = &armcompute.VirtualMachineIdentity{Type: to.Ptr(armcompute.ResourceIdentityType("Borrowed"))}
		}, "InvalidParameter", "identity.type", http.StatusBadRequest},
		{"an id that is no identity's", userAssigned("/subscriptions/" + testSub + "/resourceGroups/" + testRG + "/providers/Microsoft.Compute/virtualMachines/a1"),
			"InvalidParameter", "identity.userAssignedIdentities", http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := f.create(t, "refused", vmRequest("eastus", t4, inZone("1"), tt.opt))
			refusal(t, err, tt.code, tt.status, tt.target)
		})
	}

	// Compute relays Managed Identity's refusal of one the subscription
	// does not hold, whatever the case of the ones it does.
	missing := strings.Replace(identityA, "nodes-a", "nodes-c", 1)
	_, err = f.create(t, "refused", vmRequest("eastus", t4, inZone("1"), userAssigned(strings.ToLower(identityB), missing)))
	re := responseError(t, err, "FailedIdentityOperation", http.StatusBadRequest)
	want := `Identity operation for resource '/subscriptions/` + testSub + `/resourceGroups/` + testRG + `/providers/Microsoft.Compute/virtualMachines/refused' failed with error 'Failed to perform resource identity operation. Status: 'BadRequest'. Response: '{\"error\":{\"code\":\"BadRequest\",\"message\":\"Resource '` + missing + `' was not found.\"}}'.'.`
	if !strings.Contains(re.Error(), want) {
		t.Errorf("error %v, want %s", err, want)
	}

	// The emulator does not change a VM's identity; the same one, or none
	// said, is no change.
	if _, err := f.create(t, "a1", vmRequest("eastus", t4, inZone("1"), userAssigned(identityA))); err != nil {
		t.Fatal(err)
	}
	if _, err := f.create(t, "a1", vmRequest("eastus", t4, inZone("1"))); err != nil {
		t.Fatal(err)
	}
	_, err = f.create(t, "a1", vmRequest("eastus", t4, inZone("1"), userAssigned(identityB)))
	refusal(t, err, "PropertyChangeNotAllowed", http.StatusConflict, "identity")
	if got, _ := f.get(t, "a1"); got.Identity == nil || got.Identity.UserAssignedIdentities[identityA] == nil {
		t.Errorf("identity after the updates %+v", got.Identity)
	}
}

// withNV6 is the default catalog and an NV6 on demand in eastus, a size
// that does not support accelerated networking.
func withNV6() *catalog.Catalog {
	cat := catalog.Default()
	cat.Offers = append(cat.Offers, catalog.Offer{Cloud: catalog.Azure, Region: "eastus", InstanceType: nv6, Market: catalog.OnDemand,
		GPUModel: "M60", GPUs: 1, VCPUs: 6, MemoryGiB: 56, PriceMicros: 1_140_000})
	return cat
}

// Accelerated networking is taken on the NICs of the sizes that support
// it and refused, as ARM refuses it, on the others; Resource SKUs says
// which are which.
func TestAcceleratedNetworking(t *testing.T) {
	f := newFront(t, frontConfig{world: sim.Config{Catalog: withNV6()}})

	vm := f.mustCreate(t, "fast", vmRequest("eastus", t4, inZone("1"), acceleratedNIC(true)))
	if nic := vm.Properties.NetworkProfile.NetworkInterfaceConfigurations[0].Properties; !deref(nic.EnableAcceleratedNetworking) {
		t.Errorf("nic %+v", nic)
	}
	got, err := f.get(t, "fast")
	if err != nil {
		t.Fatal(err)
	}
	nic := got.Properties.NetworkProfile.NetworkInterfaceConfigurations[0].Properties
	if !deref(nic.EnableAcceleratedNetworking) || !strings.HasSuffix(deref(nic.IPConfigurations[0].Properties.Subnet.ID), "/subnets/nodes") {
		t.Errorf("GET nic %+v", nic)
	}
	f.mustCreate(t, "slow", vmRequest("eastus", nv6, inZone("1"), acceleratedNIC(false)))

	_, err = f.create(t, "refused", vmRequest("eastus", nv6, inZone("1"), acceleratedNIC(true)))
	msg := refusal(t, err, "VMSizeIsNotPermittedToEnableAcceleratedNetworking", http.StatusBadRequest, "")
	if !strings.HasPrefix(msg, "Virtual Machine size "+nv6+" is not in the allowed list of VM sizes for accelerated networking to be enabled on Network Interface "+vmPath+"refused. Allowed sizes: ") ||
		!strings.Contains(msg, t4) || strings.Contains(msg, nv6+",") || strings.Contains(msg, ", "+nv6) {
		t.Errorf("message %q", msg)
	}

	skus, _, err := f.skusIn(t, "location eq 'eastus'")
	if err != nil {
		t.Fatal(err)
	}
	for size, want := range map[string]string{t4: "True", a100: "True", nv6: "False"} {
		sku := skuNamed(skus, size, "eastus")
		if sku == nil {
			t.Fatalf("%s not listed", size)
		}
		var got string
		for _, c := range sku.Capabilities {
			if deref(c.Name) == "AcceleratedNetworkingEnabled" {
				got = deref(c.Value)
			}
		}
		if got != want {
			t.Errorf("%s: AcceleratedNetworkingEnabled %q, want %q", size, got, want)
		}
	}
}

// The OS disk's type and size are kept and returned; a type Compute does
// not know, or one for data disks only, is refused.
func TestOSDisk(t *testing.T) {
	f := newFront(t, frontConfig{})
	disk := func(typ armcompute.StorageAccountTypes) vmOption {
		return func(vm *armcompute.VirtualMachine) {
			vm.Properties.StorageProfile.OSDisk.ManagedDisk = &armcompute.ManagedDiskParameters{StorageAccountType: to.Ptr(typ)}
		}
	}
	f.mustCreate(t, "premium", vmRequest("eastus", t4, inZone("1"), disk(armcompute.StorageAccountTypesPremiumLRS)))
	got, err := f.get(t, "premium")
	if err != nil {
		t.Fatal(err)
	}
	osd := got.Properties.StorageProfile.OSDisk
	if deref(osd.ManagedDisk.StorageAccountType) != armcompute.StorageAccountTypesPremiumLRS || deref(osd.DiskSizeGB) != 256 {
		t.Errorf("os disk %+v %+v", osd, osd.ManagedDisk)
	}
	for _, typ := range []armcompute.StorageAccountTypes{"Gold_LRS", armcompute.StorageAccountTypesUltraSSDLRS} {
		_, err := f.create(t, "refused", vmRequest("eastus", t4, inZone("1"), disk(typ)))
		refusal(t, err, "InvalidParameter", http.StatusBadRequest, "storageProfile.osDisk.managedDisk.storageAccountType")
	}
}
