package gcesim

import (
	"cmp"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

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
// insert operation is still running is PROVISIONING; once the operation is
// done but the world still has it pending, STAGING. A preempted spot VM is
// TERMINATED; the world keeps it listed for PreemptedVisibleFor and then
// drops it, which is the emulator's rendering of both termination actions:
// with DELETE the real VM is deleted after it stops, with STOP it would stay
// TERMINATED until someone deletes it.
func (s *Server) status(inst *sim.Instance) string {
	switch inst.State {
	case sim.StatePending, sim.StateRunning:
		if inst.CreateOp != "" {
			if op, ok := s.world.Operation(inst.CreateOp); ok && !op.Done {
				return "PROVISIONING"
			}
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

// renderInstance is an instance as instances.get returns it.
func (s *Server) renderInstance(inst *sim.Instance) *computepb.Instance {
	project := projectOf(inst.Scope)
	props := inst.Properties
	status := s.status(inst)
	out := &computepb.Instance{
		Kind:              proto.String("compute#instance"),
		Id:                proto.Uint64(numericID(inst.ID)),
		Name:              proto.String(inst.Name),
		Zone:              proto.String(zoneURL(project, inst.Zone)),
		MachineType:       proto.String(zoneURL(project, inst.Zone) + "/machineTypes/" + inst.InstanceType),
		SelfLink:          proto.String(instanceURL(project, inst.Zone, inst.Name)),
		Status:            proto.String(status),
		CreationTimestamp: proto.String(timestamp(inst.LaunchedAt)),
		Labels:            inst.Tags,
		LabelFingerprint:  proto.String(fingerprint(inst.Tags)),
		Scheduling: &computepb.Scheduling{
			ProvisioningModel:         optional(props[propProvisioningModel]),
			InstanceTerminationAction: optional(props[propTerminationAction]),
			OnHostMaintenance:         optional(props[propOnHostMaintenance]),
			AutomaticRestart:          optionalBool(props[propAutomaticRestart]),
			Preemptible:               optionalBool(props[propPreemptible]),
		},
		Disks: []*computepb.AttachedDisk{{
			Kind: proto.String("compute#attachedDisk"),
			Type: proto.String("PERSISTENT"),
			Mode: proto.String("READ_WRITE"),
			Boot: proto.Bool(true),
			// An instance the world made without the front keeps its
			// disk no longer than itself.
			AutoDelete: cmp.Or(optionalBool(props[propAutoDelete]), proto.Bool(true)),
			DeviceName: proto.String(cmp.Or(props[propDeviceName], "persistent-disk-0")),
			Index:      proto.Int32(0),
			Source:     proto.String(zoneURL(project, inst.Zone) + "/disks/" + inst.Name),
			DiskSizeGb: optionalInt(props[propDiskSizeGb]),
		}},
		NetworkInterfaces: []*computepb.NetworkInterface{{
			Kind:          proto.String("compute#networkInterface"),
			Name:          proto.String("nic0"),
			Network:       optional(props[propNetwork]),
			Subnetwork:    optional(props[propSubnetwork]),
			NetworkIP:     proto.String(privateIP(inst.Seq)),
			StackType:     proto.String("IPV4_ONLY"),
			AccessConfigs: accessConfigs(inst),
		}},
		Metadata:         renderMetadata(props),
		ServiceAccounts:  serviceAccounts(props),
		ResourcePolicies: strings.Fields(props[propResourcePolicies]),
	}
	if status == "TERMINATED" && !inst.EndedAt.IsZero() {
		out.LastStopTimestamp = proto.String(timestamp(inst.EndedAt))
	}
	return out
}

// privateIP is an instance's internal address, in 10.128.0.0/9, the
// range of the default network's subnetworks: derived from the instance's
// place in the world, so it is the same on every read and restart and no
// two instances share one (until 8 million have been made). The first two
// addresses of a range are the network's and its gateway's.
func privateIP(seq uint64) string {
	n := 2 + seq%(1<<23-4)
	return fmt.Sprintf("10.%d.%d.%d", 128+n>>16, n>>8&255, n&255)
}

// externalIP is the address of an instance's access config when none was
// asked for, derived as privateIP is; 34.64.0.0/10 is among the ranges
// GCE's ephemeral addresses come from.
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
func (s *Server) renderOperation(op *sim.Operation) *computepb.Operation {
	project := projectOf(op.Scope)
	now := s.world.Now()
	status := computepb.Operation_RUNNING
	switch {
	case op.Done:
		status = computepb.Operation_DONE
	case !now.After(op.StartedAt):
		status = computepb.Operation_PENDING
	}
	out := &computepb.Operation{
		Kind:          proto.String("compute#operation"),
		Id:            proto.Uint64(operationID(op.ID)),
		Name:          proto.String(op.ID),
		Zone:          proto.String(zoneURL(project, op.Zone)),
		OperationType: proto.String(string(op.Kind)),
		TargetLink:    proto.String(instanceURL(project, op.Zone, op.Name)),
		TargetId:      proto.Uint64(numericID(op.InstanceID)),
		Status:        status.Enum(),
		Progress:      proto.Int32(0),
		InsertTime:    proto.String(timestamp(op.StartedAt)),
		SelfLink:      proto.String(zoneURL(project, op.Zone) + "/operations/" + op.ID),
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
	if op.Kind == sim.OperationBulkInsert {
		bulkStatus(op, out)
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
