// SPDX-License-Identifier: Apache-2.0

package armsim

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7"

	"github.com/gpufleet/gpufleet/schema/catalog"
)

// maxCustomData is the most base64 Compute takes in osProfile.customData:
// 87,380 characters, which decode to at most 65,535 bytes.
const maxCustomData = 87380

// parseCustomData checks osProfile.customData as Compute does and returns
// it decoded; "" when there is none. Compute answers malformed and
// oversized data alike, and its message never repeats the data.
func parseCustomData(osp *armcompute.OSProfile) (string, *armError) {
	if osp == nil || osp.CustomData == nil || *osp.CustomData == "" {
		return "", nil
	}
	raw := *osp.CustomData
	data, err := base64.StdEncoding.DecodeString(raw)
	if len(raw) > maxCustomData || err != nil {
		return "", errPtr(errInvalid("customData", "Custom data in OSProfile must be in Base64 encoding and with a maximum length of %d characters.", maxCustomData))
	}
	return string(data), nil
}

// checkLinuxAuth requires a way to sign in to a Linux VM, as Compute
// does: SSH keys, or a password that is not disabled. Each key must read
// as an OpenSSH public key, written to the admin's authorized_keys, the
// only path the Linux provisioning agent supports.
func checkLinuxAuth(osp *armcompute.OSProfile) *armError {
	if osp == nil || osp.WindowsConfiguration != nil {
		return nil
	}
	lc := osp.LinuxConfiguration
	var keys []*armcompute.SSHPublicKey
	if lc != nil && lc.SSH != nil {
		keys = lc.SSH.PublicKeys
	}
	passwordOff := lc != nil && lc.DisablePasswordAuthentication != nil && *lc.DisablePasswordAuthentication
	password := !passwordOff && osp.AdminPassword != nil && *osp.AdminPassword != ""
	if len(keys) == 0 && !password {
		return errPtr(errInvalid("linuxConfiguration", "Authentication using either SSH or by user name and password must be enabled in Linux profile."))
	}
	want := "/home/" + deref(osp.AdminUsername) + "/.ssh/authorized_keys"
	for _, k := range keys {
		if k == nil {
			return errPtr(errInvalid("linuxConfiguration.ssh.publicKeys", "The value of parameter linuxConfiguration.ssh.publicKeys is invalid."))
		}
		if k.Path != nil && *k.Path != want {
			return errPtr(errInvalid("linuxConfiguration.ssh.publicKeys.path", "Destination path for SSH public keys is currently limited to its default value %s due to a known issue in Linux provisioning agent.", want))
		}
		if !openSSHKey(deref(k.KeyData)) {
			return errPtr(errInvalid("linuxConfiguration.ssh.publicKeys.keyData", "The value of parameter linuxConfiguration.ssh.publicKeys.keyData is invalid."))
		}
	}
	return nil
}

// sshKeyTypes are the key types Compute accepts.
var sshKeyTypes = []string{"ssh-rsa", "ssh-ed25519", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521"}

// openSSHKey reports whether s starts as an OpenSSH public key does: a
// known type, then the key. Compute also decodes the key; the emulator
// does not, so that fake keys in tests serve.
func openSSHKey(s string) bool {
	fields := strings.Fields(s)
	return len(fields) >= 2 && slices.Contains(sshKeyTypes, fields[0])
}

// checkOSDisk checks the OS disk's managed disk type.
func checkOSDisk(st *armcompute.StorageProfile) *armError {
	if st == nil || st.OSDisk == nil || st.OSDisk.ManagedDisk == nil || st.OSDisk.ManagedDisk.StorageAccountType == nil {
		return nil
	}
	typ := *st.OSDisk.ManagedDisk.StorageAccountType
	const target = "storageProfile.osDisk.managedDisk.storageAccountType"
	if !slices.Contains(armcompute.PossibleStorageAccountTypesValues(), typ) {
		var allowed []string
		for _, v := range armcompute.PossibleStorageAccountTypesValues() {
			allowed = append(allowed, "'"+string(v)+"'")
		}
		return errPtr(errInvalid(target, "The value '%s' of parameter 'storageAccountType' is not valid. Allowed values are %s.", typ, strings.Join(allowed, ", ")))
	}
	if typ == armcompute.StorageAccountTypesUltraSSDLRS {
		return errPtr(errInvalid(target, "Storage account type '%s' can be used with data disks only, not with the OS disk.", typ))
	}
	return nil
}

// checkNICs refuses accelerated networking on the NICs a VM creates for a
// size that does not support it, as Compute does, listing the sizes of the
// region that do.
func (s *Server) checkNICs(np *armcompute.NetworkProfile, ref vmRef, spec vmSpec) *armError {
	if catalog.AcceleratedNetworking(spec.size) {
		return nil
	}
	for _, nic := range np.NetworkInterfaceConfigurations {
		if nic == nil || nic.Properties == nil || !deref(nic.Properties.EnableAcceleratedNetworking) {
			continue
		}
		return errPtr(s.errAccelerated(spec, ref.id()))
	}
	return nil
}

// vmIdentity is a VM's managed identity as stored: its type and the
// user-assigned identities' resource ids, as the request spelled them.
type vmIdentity struct {
	typ armcompute.ResourceIdentityType
	ids []string
}

func (v vmIdentity) system() bool {
	return v.typ == armcompute.ResourceIdentityTypeSystemAssigned || v.typ == armcompute.ResourceIdentityTypeSystemAssignedUserAssigned
}

func (v vmIdentity) user() bool {
	return v.typ == armcompute.ResourceIdentityTypeUserAssigned || v.typ == armcompute.ResourceIdentityTypeSystemAssignedUserAssigned
}

// none is an identity of type None or no identity at all: alike once the
// VM exists.
func (v vmIdentity) none() bool {
	return v.typ == "" || v.typ == armcompute.ResourceIdentityTypeNone
}

func (v vmIdentity) equal(o vmIdentity) bool {
	if v.none() || o.none() {
		return v.none() == o.none()
	}
	return v.typ == o.typ && slices.EqualFunc(v.ids, o.ids, strings.EqualFold)
}

// userIdentityID is a user-assigned identity's resource id.
var userIdentityID = regexp.MustCompile(`(?i)^/subscriptions/[^/]+/resourcegroups/[^/]+/providers/Microsoft\.ManagedIdentity/userAssignedIdentities/[^/]+$`)

// parseIdentity checks a VM's identity as ARM does; the zero value when
// the request has none.
func parseIdentity(id *armcompute.VirtualMachineIdentity) (vmIdentity, *armError) {
	var out vmIdentity
	if id == nil {
		return out, nil
	}
	if id.Type == nil {
		if len(id.UserAssignedIdentities) > 0 {
			return out, errPtr(errMissing("identity.type"))
		}
		return out, nil
	}
	i := slices.IndexFunc(armcompute.PossibleResourceIdentityTypeValues(), func(v armcompute.ResourceIdentityType) bool {
		return strings.EqualFold(strings.ReplaceAll(string(v), " ", ""), strings.ReplaceAll(string(*id.Type), " ", ""))
	})
	if i < 0 {
		return out, errPtr(errInvalid("identity.type", "The value '%s' of parameter 'identity.type' is not valid. Allowed values are 'SystemAssigned', 'UserAssigned', 'SystemAssigned, UserAssigned' and 'None'.", *id.Type))
	}
	out.typ = armcompute.PossibleResourceIdentityTypeValues()[i]
	for k := range id.UserAssignedIdentities {
		out.ids = append(out.ids, k)
	}
	slices.Sort(out.ids)
	switch {
	case out.user() && len(out.ids) == 0:
		return vmIdentity{}, &armError{Status: http.StatusBadRequest, Code: "MissingIdentityIds",
			Message: fmt.Sprintf("The identity ids must not be null or empty for '%s' identity type.", out.typ)}
	case !out.user() && len(out.ids) > 0:
		return vmIdentity{}, errPtr(errInvalid("resourceIdentity.identityIds", "ResourceIdentity identityIds should not be provided if the type is \"%s\".", out.typ))
	}
	for _, k := range out.ids {
		if !userIdentityID.MatchString(k) {
			return vmIdentity{}, errPtr(errInvalid("identity.userAssignedIdentities", "The identity id '%s' is not a valid resource id of a user-assigned identity: want /subscriptions/{subscriptionId}/resourceGroups/{resourceGroupName}/providers/Microsoft.ManagedIdentity/userAssignedIdentities/{identityName}.", k))
		}
	}
	return out, nil
}

// checkIdentities refuses a VM whose user-assigned identities the
// subscription does not hold, as Compute relays Managed Identity's
// refusal, naming the first one missing.
func (s *Server) checkIdentities(v vmIdentity, ref vmRef) *armError {
	for _, id := range v.ids {
		if s.world.HasIdentity(id) {
			continue
		}
		return &armError{Status: http.StatusBadRequest, Code: "FailedIdentityOperation",
			Message: fmt.Sprintf(`Identity operation for resource '%s' failed with error 'Failed to perform resource identity operation. Status: 'BadRequest'. Response: '{"error":{"code":"BadRequest","message":"Resource '%s' was not found."}}'.'.`, ref.id(), id)}
	}
	return nil
}

// Keys of sim.Instance.Properties that hold a VM's identity.
const (
	propIdentityType = "identityType"
	propIdentityIDs  = "identityIds"
)

func (v vmIdentity) store(props map[string]string) {
	if v.none() {
		return
	}
	props[propIdentityType] = string(v.typ)
	props[propIdentityIDs] = strings.Join(v.ids, "\n")
}

func storedIdentity(props map[string]string) vmIdentity {
	v := vmIdentity{typ: armcompute.ResourceIdentityType(props[propIdentityType])}
	if ids := props[propIdentityIDs]; ids != "" {
		v.ids = strings.Split(ids, "\n")
	}
	return v
}

// emulatorTenant is the tenant of the identities the emulator reports.
const emulatorTenant = "11111111-2222-3333-4444-555555555555"

// render is the identity as ARM returns it, with the principal and client
// ids Microsoft Entra ID would have: stable for an identity, so a VM reads
// the same on every GET and two VMs of one identity share them.
func (v vmIdentity) render(vmID string) *armcompute.VirtualMachineIdentity {
	if v.none() {
		return nil
	}
	out := &armcompute.VirtualMachineIdentity{Type: to.Ptr(v.typ)}
	if v.system() {
		out.PrincipalID = to.Ptr(guid("system-principal", vmID))
		out.TenantID = to.Ptr(emulatorTenant)
	}
	if len(v.ids) > 0 {
		out.UserAssignedIdentities = map[string]*armcompute.UserAssignedIdentitiesValue{}
		for _, id := range v.ids {
			out.UserAssignedIdentities[id] = &armcompute.UserAssignedIdentitiesValue{
				PrincipalID: to.Ptr(guid("principal", id)),
				ClientID:    to.Ptr(guid("client", id)),
			}
		}
	}
	return out
}

// guid derives a version-4-shaped GUID from a resource id, ignoring case
// as ARM compares ids.
func guid(kind, id string) string {
	h := sha256.Sum256([]byte(kind + "\x00" + strings.ToLower(id)))
	h[6] = h[6]&0x0f | 0x40
	h[8] = h[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
