// SPDX-License-Identifier: Apache-2.0

package armsim

import (
	"cmp"
	"encoding/json"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// described is a world instance as ARM knows it: the names and model the
// front stored at creation, or, for an instance the world made by itself,
// what can be inferred from the instance.
type described struct {
	name, resourceGroup, subscription string
	location, zone                    string
	model                             *armcompute.VirtualMachineProperties
}

func (d described) id() string {
	return vmRef{d.subscription, d.resourceGroup, d.name}.id()
}

func (d described) priority() armcompute.VirtualMachinePriorityTypes {
	if d.model.Priority != nil {
		return *d.model.Priority
	}
	return armcompute.VirtualMachinePriorityTypesRegular
}

func (d described) eviction() armcompute.VirtualMachineEvictionPolicyTypes {
	if d.model.EvictionPolicy != nil {
		return *d.model.EvictionPolicy
	}
	return ""
}

func (s *Server) describe(inst *sim.Instance) described {
	p := inst.Properties
	d := described{
		name: p[propName], resourceGroup: p[propResourceGroup], subscription: p[propSubscription],
		location: p[propLocation], zone: p[propZone],
	}
	if d.name == "" {
		// An instance the world made without the front: read what its
		// scope and zone say.
		d.name = inst.Name
		rest := strings.TrimPrefix(inst.Scope, "/subscriptions/")
		d.subscription, d.resourceGroup, _ = strings.Cut(rest, "/resourcegroups/")
		d.location = inst.Region
		d.zone = armZone(inst.Region, inst.Zone)
	}
	d.model = s.models.get(p[propModel], inst)
	return d
}

// modelCache holds decoded models by their JSON. Decoding with the SDK's
// types is most of the cost of a list page, and a VM's model never
// changes, so each is decoded once. Cached models are shared: read only.
type modelCache struct {
	mu     sync.Mutex
	models map[string]*armcompute.VirtualMachineProperties
}

// maxCachedModels bounds the cache of a long-running emulator; past it
// the cache starts over.
const maxCachedModels = 10000

func (c *modelCache) get(raw string, inst *sim.Instance) *armcompute.VirtualMachineProperties {
	key := inst.InstanceType + "\x00" + string(inst.Market) + "\x00" + raw
	c.mu.Lock()
	defer c.mu.Unlock()
	if m, ok := c.models[key]; ok {
		return m
	}
	m := &armcompute.VirtualMachineProperties{}
	if raw != "" {
		if err := json.Unmarshal([]byte(raw), m); err != nil {
			m = &armcompute.VirtualMachineProperties{}
		}
	}
	if m.HardwareProfile == nil {
		m.HardwareProfile = &armcompute.HardwareProfile{}
	}
	m.HardwareProfile.VMSize = to.Ptr(armcompute.VirtualMachineSizeTypes(inst.InstanceType))
	if m.Priority == nil && inst.Market == catalog.Spot {
		m.Priority = to.Ptr(armcompute.VirtualMachinePriorityTypesSpot)
		m.EvictionPolicy = to.Ptr(armcompute.VirtualMachineEvictionPolicyTypesDeallocate)
	}
	if c.models == nil || len(c.models) >= maxCachedModels {
		c.models = map[string]*armcompute.VirtualMachineProperties{}
	}
	c.models[key] = m
	return m
}

// lifecycle is a VM's provisioning and power state as ARM shows them.
type lifecycle struct {
	provisioning string // Creating, Succeeded, Failed, Deleting
	power        string // starting, running, stopping, stopped, deallocating, deallocated; "" for none
	since        time.Time
	failure      *sim.Error
}

// lifecycleOf renders the world's state of a VM.
//
// A Spot eviction is rendered as the emulator's reading of what Azure
// shows: with evictionPolicy Delete, the evicted VM is listed as
// provisioningState Deleting and PowerState/deallocating for the world's
// PreemptedVisibleFor window, and then is gone; with evictionPolicy
// Deallocate it stays provisioningState Succeeded and
// PowerState/deallocated (in the world it too vanishes after that window,
// where Azure keeps it until deleted).
func (s *Server) lifecycleOf(inst *sim.Instance, d described) lifecycle {
	switch inst.State {
	case sim.StateShuttingDown:
		return lifecycle{provisioning: "Deleting", power: "deallocating", since: inst.EndedAt}
	case sim.StateTerminated:
		if d.eviction() == armcompute.VirtualMachineEvictionPolicyTypesDeallocate {
			return lifecycle{provisioning: "Succeeded", power: "deallocated", since: inst.EndedAt}
		}
		return lifecycle{provisioning: "Deleting", power: "deallocating", since: inst.EndedAt}
	case sim.StateFailed:
		l := lifecycle{provisioning: "Failed", since: inst.LaunchedAt}
		if op, ok := s.createOp(inst); ok {
			l.failure, l.since = op.Err, op.DoneAt
		}
		return l
	}
	power := "running"
	switch inst.State {
	case sim.StatePending:
		power = "starting"
	case sim.StateStopping:
		power = "deallocating"
	case sim.StateStopped:
		power = "deallocated"
	}
	if op, ok := s.createOp(inst); ok {
		if !op.Done {
			return lifecycle{provisioning: "Creating", power: "starting", since: inst.LaunchedAt}
		}
		return lifecycle{provisioning: "Succeeded", power: power, since: op.DoneAt}
	}
	return lifecycle{provisioning: "Succeeded", power: power, since: inst.LaunchedAt}
}

type renderOptions struct {
	instanceView bool
	// provisioning, when set, overrides the provisioning state, for
	// answers to a PUT: ARM always answers a new VM with Creating, and an
	// update that has an operation to wait for with Updating, whatever the
	// world has made of the VM since. The SDK polls only when the state it
	// is handed is not final.
	provisioning string
}

// render builds the VM as ARM returns it, with the SDK's own model, so the
// wire shape is the SDK's.
func (s *Server) render(inst *sim.Instance, opts renderOptions) *armcompute.VirtualMachine {
	d := s.describe(inst)
	life := s.lifecycleOf(inst, d)
	switch opts.provisioning {
	case "":
	case "Creating":
		life = lifecycle{provisioning: "Creating", power: "starting", since: inst.LaunchedAt}
	default:
		life.provisioning, life.failure = opts.provisioning, nil
	}
	if c, ok := s.powerOf(inst); ok && life.provisioning != "Deleting" {
		if power, started := c.power(s.world.Now()); started {
			life.power = power
		}
	}
	props := *d.model
	props.VMID = to.Ptr(cmp.Or(inst.Properties[propVMID], inst.ID))
	props.TimeCreated = to.Ptr(inst.LaunchedAt)
	props.ProvisioningState = to.Ptr(life.provisioning)
	if opts.instanceView {
		props.InstanceView = s.instanceViewOf(inst, d, life)
	}
	vm := &armcompute.VirtualMachine{
		ID:         to.Ptr(d.id()),
		Name:       to.Ptr(d.name),
		Type:       to.Ptr(resourceType),
		Location:   to.Ptr(d.location),
		Tags:       map[string]*string{},
		Properties: &props,
		Identity:   storedIdentity(inst.Properties).render(d.id()),
	}
	for k, v := range inst.Tags {
		vm.Tags[k] = to.Ptr(v)
	}
	if d.zone != "" {
		vm.Zones = []*string{to.Ptr(d.zone)}
	}
	return vm
}

func (s *Server) instanceViewOf(inst *sim.Instance, d described, life lifecycle) *armcompute.VirtualMachineInstanceView {
	at := life.since.UTC()
	prov := &armcompute.InstanceViewStatus{
		Code:          to.Ptr("ProvisioningState/" + strings.ToLower(life.provisioning)),
		Level:         to.Ptr(armcompute.StatusLevelTypesInfo),
		DisplayStatus: to.Ptr(provisioningDisplay[life.provisioning]),
		Time:          &at,
	}
	if life.failure != nil {
		e := s.operationError(life.failure, inst)
		prov.Code = to.Ptr("ProvisioningState/failed/" + e.Code)
		prov.Level = to.Ptr(armcompute.StatusLevelTypesError)
		prov.Message = to.Ptr(e.Message)
	}
	view := &armcompute.VirtualMachineInstanceView{Statuses: []*armcompute.InstanceViewStatus{prov}}
	if life.power != "" {
		view.Statuses = append(view.Statuses, &armcompute.InstanceViewStatus{
			Code:          to.Ptr("PowerState/" + life.power),
			Level:         to.Ptr(armcompute.StatusLevelTypesInfo),
			DisplayStatus: to.Ptr("VM " + life.power),
		})
	}
	if d.model.OSProfile != nil {
		view.ComputerName = d.model.OSProfile.ComputerName
	}
	return view
}

var provisioningDisplay = map[string]string{
	"Creating":  "Creating",
	"Succeeded": "Provisioning succeeded",
	"Failed":    "Provisioning failed",
	"Deleting":  "Deleting",
	"Updating":  "Updating",
}
