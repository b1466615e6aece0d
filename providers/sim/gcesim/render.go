// SPDX-License-Identifier: Apache-2.0

package gcesim

import (
	"cmp"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"maps"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"

	"github.com/gpufleet/gpufleet/providers/sim"
)

const (
	// namePattern is RFC 1035 as GCE spells it in its errors.
	namePattern = "(?:[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?)"
	// nameOrIDPattern is what a path may name an instance by.
	nameOrIDPattern = "[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?|[1-9][0-9]{0,19}"
)

var (
	nameRE       = regexp.MustCompile("^" + namePattern + "$")
	idRE         = regexp.MustCompile("^[1-9][0-9]{0,19}$")
	labelKeyRE   = regexp.MustCompile("^[a-z][a-z0-9_-]{0,62}$")
	labelValueRE = regexp.MustCompile("^[a-z0-9_-]{0,63}$")
)

// maxLabels is how many labels a GCE resource may carry.
const maxLabels = 64

// validateLabels applies GCE's label rules, in key order so that the same
// request always names the same offender.
func validateLabels(field string, labels map[string]string) *apiError {
	if len(labels) > maxLabels {
		return invalidField(field+".labels", "", fmt.Sprintf("Resource cannot have more than %d labels.", maxLabels))
	}
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		if !labelKeyRE.MatchString(k) {
			return invalidField(field+".labels", "", "Label key '"+k+"' violates format constraints. The key must start with a lowercase character, can only contain lowercase letters, numeric characters, underscores and dashes. The key can be at most 63 characters long. International characters are allowed.")
		}
		if v := labels[k]; !labelValueRE.MatchString(v) {
			return invalidField(field+".labels", "", "Label value '"+v+"' violates format constraints. The value can only contain lowercase letters, numeric characters, underscores and dashes. The value can be at most 63 characters long. International characters are allowed.")
		}
	}
	return nil
}

// status renders the world's state in GCE's vocabulary. An instance whose
// insert operation is in its first half is PROVISIONING (resources being
// found for it), in its second half STAGING (being prepared to boot);
// once the operation is done but the world still has it pending, STAGING
// still. A preempted spot VM is TERMINATED; the world keeps it listed for
// PreemptedVisibleFor and then drops it, which is the emulator's rendering
// of both termination actions: with DELETE the real VM is deleted after
// it stops, with STOP it would stay TERMINATED until someone deletes it.
func (s *Server) status(inst *sim.Instance) string {
	switch inst.State {
	case sim.StatePending, sim.StateRunning:
		if op, ok := s.createOp(inst); ok && !op.Done {
			if s.world.Now().Before(op.StartedAt.Add(op.DoneAt.Sub(op.StartedAt) / 2)) {
				return "PROVISIONING"
			}
			return "STAGING"
		}
		if inst.State == sim.StatePending {
			return "STAGING"
		}
		return "RUNNING"
	case sim.StateShuttingDown:
		return "STOPPING"
	}
	return "TERMINATED"
}

// createOp is the operation that created an instance, while the world
// still has it.
func (s *Server) createOp(inst *sim.Instance) (*sim.Operation, bool) {
	if inst.CreateOp == "" {
		return nil, false
	}
	return s.world.Operation(inst.CreateOp)
}

// startedAt is when an instance became RUNNING: when both its insert
// operation and its boot were over.
func (s *Server) startedAt(inst *sim.Instance) time.Time {
	at := inst.LaunchedAt.Add(s.world.Latency().Launch)
	if op, ok := s.createOp(inst); ok && op.DoneAt.After(at) {
		at = op.DoneAt
	}
	return at
}

// renderInstance is an instance as instances.get returns it.
func (s *Server) renderInstance(l links, inst *sim.Instance) *computepb.Instance {
	project := projectOf(inst.Scope)
	props := inst.Properties
	status := s.status(inst)
	zone := l.zone(project, inst.Zone)
	out := &computepb.Instance{
		Kind:               proto.String("compute#instance"),
		Id:                 proto.Uint64(numericID(inst.ID)),
		Name:               proto.String(inst.Name),
		Zone:               proto.String(zone),
		MachineType:        proto.String(zone + "/machineTypes/" + inst.InstanceType),
		SelfLink:           proto.String(l.instance(project, inst.Zone, inst.Name)),
		Status:             proto.String(status),
		CreationTimestamp:  proto.String(timestamp(inst.LaunchedAt)),
		Labels:             inst.Tags,
		LabelFingerprint:   proto.String(fingerprint(inst.Tags)),
		Fingerprint:        proto.String(instanceFingerprint(inst)),
		CpuPlatform:        proto.String(cpuPlatform(inst.InstanceType)),
		CanIpForward:       proto.Bool(false),
		DeletionProtection: proto.Bool(false),
		StartRestricted:    proto.Bool(false),
		Scheduling: &computepb.Scheduling{
			ProvisioningModel:         optional(props[propProvisioningModel]),
			InstanceTerminationAction: optional(props[propTerminationAction]),
			OnHostMaintenance:         optional(props[propOnHostMaintenance]),
			AutomaticRestart:          optionalBool(props[propAutomaticRestart]),
			Preemptible:               optionalBool(props[propPreemptible]),
		},
		Disks:             []*computepb.AttachedDisk{s.bootDisk(l, inst)},
		NetworkInterfaces: []*computepb.NetworkInterface{networkInterface(l, inst)},
		Metadata:          renderMetadata(props),
		ServiceAccounts:   serviceAccounts(props),
		Tags:              &computepb.Tags{Items: strings.Fields(props[propTags]), Fingerprint: proto.String(fingerprint(map[string]string{"tags": props[propTags]}))},
		ShieldedInstanceConfig: &computepb.ShieldedInstanceConfig{
			EnableSecureBoot:          proto.Bool(false),
			EnableVtpm:                proto.Bool(true),
			EnableIntegrityMonitoring: proto.Bool(true),
		},
		ShieldedInstanceIntegrityPolicy: &computepb.ShieldedInstanceIntegrityPolicy{UpdateAutoLearnPolicy: proto.Bool(true)},
		KeyRevocationActionType:         proto.String("NONE"),
	}
	for _, p := range strings.Fields(props[propResourcePolicies]) {
		out.ResourcePolicies = append(out.ResourcePolicies, l.stored(p))
	}
	if a := acceleratorOf(inst.GPUModel); inst.GPUs > 0 {
		out.GuestAccelerators = []*computepb.AcceleratorConfig{{
			AcceleratorType:  proto.String(l.url(acceleratorPath(project, inst.Zone, a.name))),
			AcceleratorCount: proto.Int32(int32(inst.GPUs)),
		}}
	}
	switch {
	case status == "RUNNING" || status == "STOPPING":
		out.LastStartTimestamp = proto.String(timestamp(s.startedAt(inst)))
	case status == "TERMINATED" && !inst.EndedAt.IsZero():
		out.LastStartTimestamp = proto.String(timestamp(s.startedAt(inst)))
		out.LastStopTimestamp = proto.String(timestamp(inst.EndedAt))
	}
	return out
}

// instanceFingerprint stands in for an instance's fingerprint, which
// changes whenever the instance is updated: here, with its labels.
func instanceFingerprint(inst *sim.Instance) string {
	return fingerprint(map[string]string{"id": inst.ID, "labels": fingerprint(inst.Tags)})
}

// bootDisk is an instance's boot disk as the instance lists it. An
// instance the world made without the front keeps its disk no longer than
// itself.
func (s *Server) bootDisk(l links, inst *sim.Instance) *computepb.AttachedDisk {
	props := inst.Properties
	project := projectOf(inst.Scope)
	disk := &computepb.AttachedDisk{
		Kind:       proto.String("compute#attachedDisk"),
		Type:       proto.String("PERSISTENT"),
		Mode:       proto.String("READ_WRITE"),
		Boot:       proto.Bool(true),
		AutoDelete: cmp.Or(optionalBool(props[propAutoDelete]), proto.Bool(true)),
		DeviceName: proto.String(cmp.Or(props[propDeviceName], "persistent-disk-0")),
		Index:      proto.Int32(0),
		Interface:  proto.String(cmp.Or(props[propDiskInterface], defaultDiskInterface(diskTypeOf(inst)))),
		Source:     proto.String(l.zone(project, inst.Zone) + "/disks/" + inst.Name),
		DiskSizeGb: optionalInt(props[propDiskSizeGb]),
		GuestOsFeatures: []*computepb.GuestOsFeature{
			{Type: proto.String("UEFI_COMPATIBLE")},
			{Type: proto.String("VIRTIO_SCSI_MULTIQUEUE")},
			{Type: proto.String("GVNIC")},
		},
		Architecture: proto.String("X86_64"),
	}
	if lic := props[propLicense]; lic != "" {
		disk.Licenses = []string{l.url(lic)}
	}
	return disk
}

// defaultDiskInterface is the interface a disk attaches by when none is
// asked for: Hyperdisk attaches by NVMe only.
func defaultDiskInterface(diskType string) string {
	if strings.HasPrefix(diskType, "hyperdisk-") {
		return "NVME"
	}
	return "SCSI"
}

// networkInterface is the instance's NIC, on the network and subnetwork
// it was made on (the default ones, for an instance the world made
// without the front).
func networkInterface(l links, inst *sim.Instance) *computepb.NetworkInterface {
	props := inst.Properties
	project := projectOf(inst.Scope)
	network := cmp.Or(props[propNetwork], networkPath(project, defaultNetwork))
	subnetwork := cmp.Or(props[propSubnetwork], subnetworkPath(project, inst.Region, defaultNetwork))
	prefix, err := netip.ParsePrefix(props[propSubnetRange])
	if err != nil {
		prefix = autoRange(inst.Region)
	}
	return &computepb.NetworkInterface{
		Kind:          proto.String("compute#networkInterface"),
		Name:          proto.String("nic0"),
		Network:       proto.String(l.stored(network)),
		Subnetwork:    proto.String(l.stored(subnetwork)),
		NetworkIP:     proto.String(addressIn(prefix, inst.Seq)),
		StackType:     proto.String("IPV4_ONLY"),
		Fingerprint:   proto.String(fingerprint(map[string]string{"nic": inst.ID})),
		AccessConfigs: accessConfigs(inst),
	}
}

// externalIP is the address of an instance's access config when none was
// asked for, derived as its internal address is; 34.64.0.0/10 is among
// the ranges GCE's ephemeral addresses come from.
func externalIP(seq uint64) string {
	n := 2 + seq%(1<<22-4)
	return fmt.Sprintf("34.%d.%d.%d", 64+n>>16, n>>8&255, n&255)
}

// accessConfigs are the NIC's access configs: one, with its external
// address, when the instance asked for it, else none and no external
// address.
func accessConfigs(inst *sim.Instance) []*computepb.AccessConfig {
	name, ok := inst.Properties[propAccessConfig]
	if !ok {
		return nil
	}
	return []*computepb.AccessConfig{{
		Kind:        proto.String("compute#accessConfig"),
		Type:        proto.String(computepb.AccessConfig_ONE_TO_ONE_NAT.String()),
		Name:        proto.String(name),
		NatIP:       proto.String(cmp.Or(inst.Properties[propNatIP], externalIP(inst.Seq))),
		NetworkTier: proto.String(computepb.AccessConfig_PREMIUM.String()),
	}}
}

// serviceAccounts is the instance's service account, if it has one.
func serviceAccounts(props map[string]string) []*computepb.ServiceAccount {
	email, ok := props[propServiceAccount]
	if !ok {
		return nil
	}
	var scopes []string
	if s := props[propScopes]; s != "" {
		scopes = strings.Split(s, " ")
	}
	return []*computepb.ServiceAccount{{Email: proto.String(email), Scopes: scopes}}
}

// renderOperation is an operation as the zonal operations API returns it.
func (s *Server) renderOperation(l links, op *sim.Operation) *computepb.Operation {
	project := projectOf(op.Scope)
	status := operationStatus(op.Done, op.StartedAt, s.world.Now())
	out := &computepb.Operation{
		Kind:          proto.String("compute#operation"),
		Id:            proto.Uint64(operationID(op.ID)),
		Name:          proto.String(op.ID),
		Zone:          proto.String(l.zone(project, op.Zone)),
		OperationType: proto.String(string(op.Kind)),
		TargetLink:    proto.String(l.instance(project, op.Zone, op.Name)),
		TargetId:      proto.Uint64(numericID(op.InstanceID)),
		Status:        status.Enum(),
		Progress:      proto.Int32(0),
		InsertTime:    proto.String(timestamp(op.StartedAt)),
		SelfLink:      proto.String(l.zone(project, op.Zone) + "/operations/" + op.ID),
		User:          proto.String(s.opts.User),
	}
	if status != computepb.Operation_PENDING {
		out.StartTime = proto.String(timestamp(op.StartedAt))
	}
	if op.Done {
		out.Progress = proto.Int32(100)
		out.EndTime = proto.String(timestamp(op.DoneAt))
		if op.Err != nil {
			s.operationError(op, out, faultContext{Project: project, Zone: op.Zone, Region: s.region(op.Zone)})
		}
	}
	switch op.Kind {
	case sim.OperationBulkInsert:
		bulkStatus(l, op, out)
	case sim.OperationPreempted:
		// A system event: GCE, not a caller, did it.
		out.User = proto.String("system")
	}
	return out
}

// numericID reads the world's decimal GCE ids.
func numericID(id string) uint64 {
	n, _ := strconv.ParseUint(id, 10, 64)
	return n
}

// operationID derives an operation's numeric id from its name, so that it
// is stable across reads and restarts.
func operationID(name string) uint64 { return stableID(name) }

// fingerprint stands in for GCE's labelFingerprint: it changes exactly when
// the labels do.
func fingerprint(labels map[string]string) string {
	h := sha256.New()
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		fmt.Fprintf(h, "%s=%s\x00", k, labels[k])
	}
	return base64.StdEncoding.EncodeToString(h.Sum(nil)[:8])
}

func optional(v string) *string {
	if v == "" {
		return nil
	}
	return proto.String(v)
}

func optionalBool(v string) *bool {
	b, err := strconv.ParseBool(v)
	if err != nil {
		return nil
	}
	return proto.Bool(b)
}

func optionalInt(v string) *int64 {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return nil
	}
	return proto.Int64(n)
}
