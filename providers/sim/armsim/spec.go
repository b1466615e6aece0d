// SPDX-License-Identifier: Apache-2.0

package armsim

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// vmRef names a VM as its URL does. ARM compares names
// case-insensitively but keeps the casing they were created with.
type vmRef struct {
	Subscription, ResourceGroup, Name string
}

// scope is the world's Scope for the VM's resource group.
func (v vmRef) scope() string {
	return strings.ToLower("/subscriptions/" + v.Subscription + "/resourceGroups/" + v.ResourceGroup)
}

// key is the world's Name for the VM.
func (v vmRef) key() string { return strings.ToLower(v.Name) }

func (v vmRef) id() string {
	return "/subscriptions/" + v.Subscription + "/resourceGroups/" + v.ResourceGroup + "/providers/" + resourceType + "/" + v.Name
}

// vmSpec is a validated PUT body.
type vmSpec struct {
	region catalog.Region
	// zone is ARM's zone ("1"), worldZone the world's; both are empty for a
	// regional VM.
	zone, worldZone string
	size            string
	priority        armcompute.VirtualMachinePriorityTypes
	eviction        armcompute.VirtualMachineEvictionPolicyTypes
	maxPrice        float64
	tags            map[string]string
	// customData is osProfile.customData decoded, "" for none. ARM keeps
	// it for the VM's first boot and never returns it.
	customData string
	identity   vmIdentity
	// ppg is the proximity placement group the VM is created in, nil for
	// none.
	ppg *ppg
	// network is what the VM's network profile references.
	network vmNetwork
	// model is what GET echoes back of the request's properties.
	model *armcompute.VirtualMachineProperties
	// retryOf is, for a PUT that creates again a VM whose creation
	// failed, that VM's vmId; "" for a new VM.
	retryOf string
}

// ppgKey is how the VM's group is recorded, "" for none.
func (v vmSpec) ppgKey() string {
	if v.ppg == nil {
		return ""
	}
	return v.ppg.ref.key()
}

func (v vmSpec) market() catalog.Market {
	if v.priority == armcompute.VirtualMachinePriorityTypesRegular {
		return catalog.OnDemand
	}
	return catalog.Spot
}

// readBody reads a request body under the front's size cap.
func readBody(r *http.Request) ([]byte, *armError) {
	body, err := io.ReadAll(r.Body)
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		e := errTooLarge()
		return nil, &e
	case err != nil:
		return nil, &armError{Status: http.StatusBadRequest, Code: "InvalidRequestContent",
			Message: fmt.Sprintf("The request content was invalid and could not be read: '%v'.", err)}
	case !utf8.Valid(body):
		// ARM reads content as UTF-8 and fails where it is not; Go's
		// decoder would quietly read U+FFFD instead.
		return nil, &armError{Status: http.StatusBadRequest, Code: "InvalidRequestContent",
			Message: "The request content was invalid and could not be deserialized: 'The content is not valid UTF-8.'."}
	}
	return body, nil
}

func errTooLarge() armError {
	return armError{Status: http.StatusRequestEntityTooLarge, Code: "RequestContentTooLarge",
		Message: fmt.Sprintf("The request content size exceeds the maximum size of %d MB.", maxBody>>20)}
}

// decodeVM parses a PUT body with the SDK's own model, so the front reads
// exactly what the client wrote.
func decodeVM(body []byte) (armcompute.VirtualMachine, *armError) {
	var vm armcompute.VirtualMachine
	return vm, decodeJSON(body, &vm)
}

// callFor describes a PUT to the world's faults as far as its body can be
// read, before it is validated.
func (s *Server) callFor(vm *armcompute.VirtualMachine) sim.Call {
	call := sim.Call{Op: OpPut}
	if vm.Location == nil {
		return call
	}
	region, ok := s.world.Region(cloud, normalizeLocation(*vm.Location))
	if !ok {
		return call
	}
	call.Region = region.Name
	if len(vm.Zones) == 1 && vm.Zones[0] != nil {
		call.Zone, _ = worldZone(region, *vm.Zones[0])
	}
	if p := vm.Properties; p != nil && p.HardwareProfile != nil && p.HardwareProfile.VMSize != nil {
		call.InstanceType = s.canonicalSize(string(*p.HardwareProfile.VMSize))
	}
	return call
}

// putContext is what an error answering a PUT can mention, as far as its
// body can be read.
func (s *Server) putContext(ref vmRef, vm *armcompute.VirtualMachine, call sim.Call) callContext {
	c := callContext{vm: ref, location: call.Region, opType: "Write"}
	if call.Zone != "" {
		c.zone = armZone(call.Region, call.Zone)
	}
	if p := vm.Properties; p != nil && p.Priority != nil && !strings.EqualFold(string(*p.Priority), string(armcompute.VirtualMachinePriorityTypesRegular)) {
		c.spot = true
	}
	market := catalog.OnDemand
	if c.spot {
		market = catalog.Spot
	}
	zone := call.Zone
	if region, ok := s.world.Region(cloud, call.Region); ok && zone == "" && len(region.Zones) > 0 {
		zone = region.Zones[0]
	}
	if typ, ok := s.world.Type(cloud, zone, call.InstanceType, market); ok {
		c.typ = typ
	}
	return c
}

// vmName is what Compute accepts as a Linux VM name.
var vmName = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._-]{0,62}[A-Za-z0-9_])?$`)

// parseSpec validates a PUT body the way Compute does, in its order:
// location, size, zones, proximity placement group, spot settings,
// identity, then the profiles.
func (s *Server) parseSpec(vm *armcompute.VirtualMachine, ref vmRef) (vmSpec, *armError) {
	var spec vmSpec
	if !vmName.MatchString(ref.Name) {
		return spec, &armError{Status: http.StatusBadRequest, Code: "InvalidResourceName",
			Message: fmt.Sprintf("Resource name %s is invalid. The name can be up to 64 characters long. It must begin with a letter or number, and it must end with a letter, number or '_'. The name may contain letters, numbers, '.', '-' or '_'.", ref.Name)}
	}
	if vm.Location == nil || *vm.Location == "" {
		return spec, &armError{Status: http.StatusBadRequest, Code: "LocationRequired", Message: "The location property is required for this definition."}
	}
	region, ok := s.world.Region(cloud, normalizeLocation(*vm.Location))
	if !ok {
		return spec, &armError{Status: http.StatusBadRequest, Code: "LocationNotAvailableForResourceType",
			Message: fmt.Sprintf("The provided location '%s' is not available for resource type '%s'. List of available regions for the resource type is '%s'.",
				*vm.Location, resourceType, strings.Join(locations(s.world.Catalog()), ","))}
	}
	spec.region = region
	p := vm.Properties
	if p == nil || p.HardwareProfile == nil {
		return spec, errPtr(errMissing("hardwareProfile"))
	}
	if p.HardwareProfile.VMSize == nil || *p.HardwareProfile.VMSize == "" {
		return spec, errPtr(errMissing("hardwareProfile.vmSize"))
	}
	requested := string(*p.HardwareProfile.VMSize)
	spec.size = s.canonicalSize(requested)
	if spec.size == "" {
		return spec, errPtr(errInvalid("vmSize", "The value %s provided for the VM size is not valid. The valid sizes in the current region are: %s. Find out more on the available VM sizes in each region at https://aka.ms/azure-regions.",
			requested, strings.Join(s.sizesIn(region.Name), ",")))
	}
	switch {
	case len(vm.Zones) > 1:
		return spec, errPtr(errInvalid("zones", "A virtual machine can be deployed to one zone only; %d were given.", len(vm.Zones)))
	case len(vm.Zones) == 1:
		n := ""
		if vm.Zones[0] != nil {
			n = *vm.Zones[0]
		}
		z, ok := worldZone(region, n)
		if !ok {
			return spec, errPtr(errInvalid("zones", "The zone(s) '%s' for resource '%s' is not supported. The supported zones for location '%s' are '%s'.",
				n, ref.id(), region.Name, strings.Join(armZones(region), ",")))
		}
		spec.zone, spec.worldZone = n, z
	}
	var e *armError
	if spec.ppg, e = s.vmPPG(p, ref, spec); e != nil {
		return spec, e
	}
	if e := spec.parseSpot(p); e != nil {
		return spec, e
	}
	if spec.identity, e = parseIdentity(vm.Identity); e != nil {
		return spec, e
	}
	if e := s.checkIdentities(spec.identity, ref); e != nil {
		return spec, e
	}
	if e := checkProfiles(p); e != nil {
		return spec, e
	}
	if e := checkLinuxAuth(p.OSProfile); e != nil {
		return spec, e
	}
	if spec.customData, e = parseCustomData(p.OSProfile); e != nil {
		return spec, e
	}
	if e := checkOSDisk(p.StorageProfile); e != nil {
		return spec, e
	}
	if e := s.checkNICs(p.NetworkProfile, ref, spec); e != nil {
		return spec, e
	}
	if spec.network, e = s.checkNetwork(p.NetworkProfile, ref, spec); e != nil {
		return spec, e
	}
	spec.tags = map[string]string{}
	for k, v := range vm.Tags {
		if v != nil {
			spec.tags[k] = *v
		} else {
			spec.tags[k] = ""
		}
	}
	spec.model = sanitize(p, ref, spec)
	return spec, nil
}

// parseSpot reads priority, evictionPolicy and billingProfile, with ARM's
// defaults: a Spot or Low VM is deallocated on eviction and pays up to the
// on-demand price unless told otherwise.
func (spec *vmSpec) parseSpot(p *armcompute.VirtualMachineProperties) *armError {
	spec.priority = armcompute.VirtualMachinePriorityTypesRegular
	if p.Priority != nil {
		i := slices.IndexFunc(armcompute.PossibleVirtualMachinePriorityTypesValues(), func(v armcompute.VirtualMachinePriorityTypes) bool {
			return strings.EqualFold(string(v), string(*p.Priority))
		})
		if i < 0 {
			return errPtr(errInvalid("priority", "The value '%s' of parameter 'priority' is not valid. Allowed values are 'Regular', 'Low' and 'Spot'.", *p.Priority))
		}
		spec.priority = armcompute.PossibleVirtualMachinePriorityTypesValues()[i]
	}
	regular := spec.priority == armcompute.VirtualMachinePriorityTypesRegular
	if p.EvictionPolicy != nil {
		if regular {
			return errPtr(errInvalid("evictionPolicy", "Eviction policy can be set only on Azure Spot Virtual Machines."))
		}
		i := slices.IndexFunc(armcompute.PossibleVirtualMachineEvictionPolicyTypesValues(), func(v armcompute.VirtualMachineEvictionPolicyTypes) bool {
			return strings.EqualFold(string(v), string(*p.EvictionPolicy))
		})
		if i < 0 {
			return errPtr(errInvalid("evictionPolicy", "The value '%s' of parameter 'evictionPolicy' is not valid. Allowed values are 'Deallocate' and 'Delete'.", *p.EvictionPolicy))
		}
		spec.eviction = armcompute.PossibleVirtualMachineEvictionPolicyTypesValues()[i]
	} else if !regular {
		spec.eviction = armcompute.VirtualMachineEvictionPolicyTypesDeallocate
	}
	spec.maxPrice = -1
	if p.BillingProfile != nil && p.BillingProfile.MaxPrice != nil {
		if regular {
			return errPtr(errInvalid("billingProfile.maxPrice", "Max price can be set only on Azure Spot Virtual Machines."))
		}
		spec.maxPrice = *p.BillingProfile.MaxPrice
		if spec.maxPrice != -1 && spec.maxPrice <= 0 {
			return errPtr(errInvalid("billingProfile.maxPrice", "The value %s of parameter 'billingProfile.maxPrice' is not valid. Max price must be -1 or greater than 0.", strconv.FormatFloat(spec.maxPrice, 'f', -1, 64)))
		}
	}
	return nil
}

// checkProfiles requires what Compute requires to build a VM from an
// image: an image or a disk to attach, an OS profile for an image, and a
// network.
func checkProfiles(p *armcompute.VirtualMachineProperties) *armError {
	st := p.StorageProfile
	attach := st != nil && st.OSDisk != nil && st.OSDisk.CreateOption != nil &&
		strings.EqualFold(string(*st.OSDisk.CreateOption), string(armcompute.DiskCreateOptionTypesAttach))
	switch {
	case st == nil:
		return errPtr(errMissing("storageProfile"))
	case st.ImageReference == nil && !attach:
		return errPtr(errMissing("storageProfile.imageReference"))
	case !attach && p.OSProfile == nil:
		return errPtr(errMissing("osProfile"))
	case !attach && (p.OSProfile.AdminUsername == nil || *p.OSProfile.AdminUsername == ""):
		return errPtr(errMissing("osProfile.adminUsername"))
	}
	np := p.NetworkProfile
	if np == nil || len(np.NetworkInterfaces) == 0 && len(np.NetworkInterfaceConfigurations) == 0 {
		return errPtr(errMissing("networkProfile"))
	}
	if len(np.NetworkInterfaceConfigurations) > 0 && np.NetworkAPIVersion == nil {
		return errPtr(errInvalid("networkProfile.networkApiVersion", "The property 'networkApiVersion' must be specified when 'networkInterfaceConfigurations' is specified."))
	}
	return nil
}

// sanitize keeps what ARM echoes of a request: never secrets, and with
// the defaults Compute fills in.
func sanitize(p *armcompute.VirtualMachineProperties, ref vmRef, spec vmSpec) *armcompute.VirtualMachineProperties {
	m := *p
	m.ProvisioningState, m.InstanceView, m.VMID, m.TimeCreated, m.UserData = nil, nil, nil, nil, nil
	if spec.ppg != nil {
		// ARM returns the group's id as the group spells it.
		m.ProximityPlacementGroup = &armcompute.SubResource{ID: to.Ptr(spec.ppg.ref.id())}
	}
	hw := *m.HardwareProfile
	hw.VMSize = to.Ptr(armcompute.VirtualMachineSizeTypes(spec.size))
	m.HardwareProfile = &hw
	if spec.priority != armcompute.VirtualMachinePriorityTypesRegular || m.Priority != nil {
		m.Priority = to.Ptr(spec.priority)
	}
	if spec.eviction != "" {
		m.EvictionPolicy = to.Ptr(spec.eviction)
		m.BillingProfile = &armcompute.BillingProfile{MaxPrice: to.Ptr(spec.maxPrice)}
	}
	if m.OSProfile != nil {
		osp := *m.OSProfile
		osp.AdminPassword, osp.CustomData = nil, nil
		if osp.ComputerName == nil {
			osp.ComputerName = to.Ptr(ref.Name)
		}
		m.OSProfile = &osp
	}
	st := *m.StorageProfile
	disk := armcompute.OSDisk{}
	if st.OSDisk != nil {
		disk = *st.OSDisk
	}
	if disk.Name == nil {
		disk.Name = to.Ptr(ref.Name + "_OsDisk_1")
	}
	if disk.CreateOption == nil {
		disk.CreateOption = to.Ptr(armcompute.DiskCreateOptionTypesFromImage)
	}
	if disk.OSType == nil && (m.OSProfile == nil || m.OSProfile.WindowsConfiguration == nil) {
		disk.OSType = to.Ptr(armcompute.OperatingSystemTypesLinux)
	}
	if disk.Caching == nil {
		disk.Caching = to.Ptr(armcompute.CachingTypesReadWrite)
	}
	st.OSDisk = &disk
	m.StorageProfile = &st
	return &m
}

// canonicalSize finds a size in the catalog, ignoring case as ARM does;
// "" when no region offers it.
func (s *Server) canonicalSize(size string) string {
	if _, ok := s.world.TypeNamed(cloud, size); ok {
		return size
	}
	for _, t := range s.world.Types(cloud) {
		if strings.EqualFold(t.Name, size) {
			return t.Name
		}
	}
	return ""
}

// sizesIn lists the sizes a region offers, for error messages.
func (s *Server) sizesIn(region string) []string {
	var out []string
	for _, o := range s.world.Catalog().Offers {
		if o.Cloud == cloud && o.Region == region && !slices.Contains(out, o.InstanceType) {
			out = append(out, o.InstanceType)
		}
	}
	slices.Sort(out)
	return out
}

// spotPrice is the catalog's spot price of a size in a region, in US$ per
// hour; false when it has none.
func (s *Server) spotPrice(region, zone, size string) (float64, bool) {
	for _, o := range s.world.Catalog().Offers {
		if o.Cloud == cloud && o.Region == region && o.InstanceType == size && o.Market == catalog.Spot &&
			(o.Zone == "" || o.Zone == zone) && o.PriceMicros > 0 {
			return float64(o.PriceMicros) / 1e6, true
		}
	}
	return 0, false
}

func errPtr(e armError) *armError { return &e }
