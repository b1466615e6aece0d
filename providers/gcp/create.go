// SPDX-License-Identifier: Apache-2.0

package gcp

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"cloud.google.com/go/compute/apiv1/computepb"
	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/schema"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// requestNamespace is the UUIDv5 namespace of gpufleet's GCE request ids: a
// random UUID chosen once. It must never change. GCE recognises a repeated
// insert or delete by its requestId, so a new namespace would make every
// create repeated across an upgrade look new to GCE (the deterministic
// instance name would still refuse a second instance, with a 409).
const requestNamespace = "c8331621-ff2c-4c6f-9b1d-ac1c516c5036"

var requestSpace = uuid.MustParse(requestNamespace)

// requestID is the requestId of the insert for a create token: GCE wants a
// non-zero UUID, and a version 5 UUID of the token is the same in every
// process that repeats the create.
func requestID(token string) string {
	return uuid.NewSHA1(requestSpace, []byte(token)).String()
}

// deleteRequestID is a fresh requestId for each delete attempt. A delete
// needs no token to be idempotent (an instance already gone is success),
// and a derived one would make GCE replay a failed delete for an hour,
// leaving the instance up and billed.
func deleteRequestID() string { return uuid.NewString() }

// cloudPlatformScope, the scope of a service account configured without
// any, lets the instance's service account reach whatever its IAM roles
// allow; the roles, not the scopes, are what restrict it.
const cloudPlatformScope = "https://www.googleapis.com/auth/cloud-platform"

// Create launches the instance for req and waits for its insert operation.
// The name is derived from the token and the insert carries a requestId
// derived from it too, so a repeat anywhere returns the first instance.
func (p *Provider) Create(ctx context.Context, req providers.CreateRequest) (providers.Instance, error) {
	o := req.Offer
	if err := p.checkRequest(req); err != nil {
		return providers.Instance{}, err
	}
	name := providers.InstanceName(req.Fleet, req.Workload, req.Token)
	op, err := p.instances.Insert(ctx, &computepb.InsertInstanceRequest{
		Project:          p.cfg.Project,
		Zone:             o.Zone,
		RequestId:        proto.String(requestID(req.Token)),
		InstanceResource: p.instanceResource(name, req, false),
	}, p.callOptions()...)
	if err != nil {
		if nameTaken(err) {
			return p.existing(ctx, req, name)
		}
		return providers.Instance{}, p.insertError(ctx, err, o)
	}
	done, err := p.await(ctx, o.Zone, op.Proto())
	if err != nil {
		return providers.Instance{}, withOffer(classify("create", err), o)
	}
	if failed := operationError("create", done); failed != nil {
		if failed.Code == "RESOURCE_ALREADY_EXISTS" {
			return p.existing(ctx, req, name)
		}
		// GCE removes an instance whose insert failed, so nothing is
		// left behind to clean up.
		return providers.Instance{}, withOffer(failed, o)
	}
	inst, err := p.get(ctx, o.Zone, name)
	if err != nil {
		failed := classify("create", err)
		if failed.Kind == providers.KindNotFound {
			// The insert succeeded, yet its instance is gone: GCE replayed
			// the operation of an earlier insert with this requestId,
			// whose instance has since been deleted or reclaimed.
			return providers.Instance{}, withOffer(&providers.Error{Kind: providers.KindTokenSpent, Cloud: Name, Op: "create",
				Message: fmt.Sprintf("token %s already made instance %s, which is gone", req.Token, name), Err: failed}, o)
		}
		return providers.Instance{}, withOffer(failed, o)
	}
	out, ok := p.toInstance(inst)
	if !ok {
		return providers.Instance{}, withOffer(&providers.Error{Kind: providers.KindInvalid, Cloud: Name, Op: "create",
			Message: fmt.Sprintf("instance %s came up without gpufleet's labels", name)}, o)
	}
	if !out.State.Live() {
		// A replayed insert whose instance still lists, stopped or going.
		return providers.Instance{}, withOffer(&providers.Error{Kind: providers.KindTokenSpent, Cloud: Name, Op: "create",
			Message: fmt.Sprintf("token %s already made instance %s, which is %s", req.Token, name, out.State)}, o)
	}
	return out, nil
}

// existing answers a create whose name is taken: by the instance an earlier
// create with the same token launched (its requestId forgotten by GCE), or
// by something else, which gpufleet must not adopt.
func (p *Provider) existing(ctx context.Context, req providers.CreateRequest, name string) (providers.Instance, error) {
	o := req.Offer
	inst, err := p.get(ctx, o.Zone, name)
	if err != nil {
		return providers.Instance{}, withOffer(classify("create", err), o)
	}
	if inst.GetLabels()[providers.TagToken] != req.Token {
		return providers.Instance{}, withOffer(&providers.Error{Kind: providers.KindInvalid, Cloud: Name, Op: "create", Code: "alreadyExists",
			Message: fmt.Sprintf("instance %s exists and was not created with token %s", name, req.Token)}, o)
	}
	out, ok := p.toInstance(inst)
	if !ok {
		return providers.Instance{}, withOffer(&providers.Error{Kind: providers.KindInvalid, Cloud: Name, Op: "create", Code: "alreadyExists",
			Message: fmt.Sprintf("instance %s exists without gpufleet's labels", name)}, o)
	}
	return out, nil
}

func (p *Provider) checkRequest(req providers.CreateRequest) error {
	o := req.Offer
	invalid := func(format string, args ...any) error {
		return &providers.Error{Kind: providers.KindInvalid, Cloud: Name, Op: "create", Offer: o, Message: fmt.Sprintf(format, args...)}
	}
	switch {
	case o.Cloud != Name:
		return invalid("offer is for cloud %q", o.Cloud)
	case !p.regions[o.Region]:
		return invalid("region %q is not configured", o.Region)
	case regionOf(o.Zone) != o.Region:
		return invalid("zone %q is not in region %s", o.Zone, o.Region)
	case o.InstanceType == "":
		return invalid("no machine type")
	case o.Market != catalog.OnDemand && o.Market != catalog.Spot:
		return invalid("unknown market %q", o.Market)
	case req.Token == "" || req.Fleet == "" || req.Workload == "":
		return invalid("a create needs a token, a fleet and a workload")
	case p.cfg.Launch.Image == "":
		return invalid("no boot image configured (gcp.launch.image)")
	}
	if err := checkLabels(providers.OwnershipTags(req)); err != nil {
		return invalid("%v", err)
	}
	if err := checkBootstrap(req.Bootstrap); err != nil {
		return invalid("%v", err)
	}
	if g := req.PlacementGroup; g != "" && !policyNameRE.MatchString(g) {
		return invalid("placement group %q is not a GCE resource policy name", g)
	}
	return nil
}

// bootstrapKeys are the metadata keys a bootstrap goes in, by format: the
// guest environment runs a startup-script at every boot, and cloud-init
// reads user-data from GCE's metadata server.
var bootstrapKeys = map[string]string{
	schema.BootstrapCloudInit: "user-data",
	schema.BootstrapScript:    "startup-script",
}

// maxMetadataValue is the most GCE takes in one metadata value, 256 KiB.
// (All of an instance's metadata may hold 512 KiB, and the bootstrap is
// its only item.)
const maxMetadataValue = 256 << 10

// checkBootstrap applies GCE's rules for metadata values before the insert
// does, so that a bootstrap that cannot go is refused with its key and size.
// What it says never quotes the data, which holds secrets.
func checkBootstrap(b *providers.Bootstrap) error {
	if b == nil {
		return nil
	}
	key, ok := bootstrapKeys[b.Format]
	switch {
	case !ok:
		return fmt.Errorf("bootstrap format %q is neither %s nor %s", b.Format, schema.BootstrapCloudInit, schema.BootstrapScript)
	case len(b.Data) > maxMetadataValue:
		return fmt.Errorf("bootstrap is %d bytes rendered, and GCE takes at most %d (256 KiB) in metadata %s", len(b.Data), maxMetadataValue, key)
	case !utf8.Valid(b.Data):
		// A metadata value is a JSON string.
		return fmt.Errorf("bootstrap is not UTF-8 text, as GCE metadata %s must be", key)
	}
	return nil
}

// instanceResource is the VM to insert for req, named name. For a
// bulkInsert's instance properties (bulk), which are written as an instance
// template's, the boot disk names its type bare and the placement policy
// its name; an insert names them by their zonal and regional paths.
func (p *Provider) instanceResource(name string, req providers.CreateRequest, bulk bool) *computepb.Instance {
	launch := p.cfg.Launch
	o := req.Offer
	diskType := bootDiskType(o.InstanceType)
	if !bulk {
		diskType = "zones/" + o.Zone + "/diskTypes/" + diskType
	}
	boot := &computepb.AttachedDisk{
		Boot:       proto.Bool(true),
		AutoDelete: proto.Bool(true),
		InitializeParams: &computepb.AttachedDiskInitializeParams{
			SourceImage: proto.String(launch.Image),
			DiskType:    proto.String(diskType),
		},
	}
	if launch.DiskGB > 0 {
		boot.InitializeParams.DiskSizeGb = proto.Int64(int64(launch.DiskGB))
	}
	nic := &computepb.NetworkInterface{}
	if launch.Network != "" {
		nic.Network = proto.String(launch.Network)
	}
	if subnet := launch.SubnetByRegion[o.Region]; subnet != "" {
		nic.Subnetwork = proto.String(subnet)
	}
	if launch.ExternalIP {
		// Without an access config a node has no external address and
		// reaches the internet through Cloud NAT, if the network has it.
		nic.AccessConfigs = []*computepb.AccessConfig{{
			Name: proto.String("External NAT"),
			Type: proto.String(computepb.AccessConfig_ONE_TO_ONE_NAT.String()),
		}}
	}
	// Every machine type gpufleet places carries GPUs, and GPUs cannot
	// live-migrate: GCE requires TERMINATE on host maintenance for them.
	sched := &computepb.Scheduling{
		OnHostMaintenance: proto.String(computepb.Scheduling_TERMINATE.String()),
		ProvisioningModel: proto.String(computepb.Scheduling_STANDARD.String()),
		AutomaticRestart:  proto.Bool(true),
	}
	if o.Market == catalog.Spot {
		// A reclaimed spot VM is deleted rather than kept stopped: a
		// stopped one still bills its disk and holds the name.
		sched.ProvisioningModel = proto.String(computepb.Scheduling_SPOT.String())
		sched.InstanceTerminationAction = proto.String(computepb.Scheduling_DELETE.String())
		sched.AutomaticRestart = proto.Bool(false)
	}
	res := &computepb.Instance{
		Name:              proto.String(name),
		MachineType:       proto.String("zones/" + o.Zone + "/machineTypes/" + o.InstanceType),
		Disks:             []*computepb.AttachedDisk{boot},
		NetworkInterfaces: []*computepb.NetworkInterface{nic},
		Scheduling:        sched,
		Labels:            providers.OwnershipTags(req),
	}
	if g := req.PlacementGroup; g != "" {
		// An insert names the policy by its regional path; a bulkInsert's
		// instance properties, like an instance template's, by its name
		// alone.
		policy := g
		if !bulk {
			policy = policyPath(p.cfg.Project, o.Region, g)
		}
		res.ResourcePolicies = []string{policy}
	}
	if b := req.Bootstrap; b != nil {
		res.Metadata = &computepb.Metadata{Items: []*computepb.Items{{
			Key:   proto.String(bootstrapKeys[b.Format]),
			Value: proto.String(string(b.Data)),
		}}}
	}
	if launch.ServiceAccount != "" {
		scopes := slices.Clone(launch.Scopes)
		if len(scopes) == 0 {
			scopes = []string{cloudPlatformScope}
		}
		res.ServiceAccounts = []*computepb.ServiceAccount{{Email: proto.String(launch.ServiceAccount), Scopes: scopes}}
	}
	return res
}

// bootDiskType is the boot disk type for a machine type, by series, as
// GCE's accelerator-optimized machine family page lists their disk types.
// Balanced Persistent Disk boots every GPU series that takes Persistent
// Disk (A3 High, Mega and Edge, G2, A2, N1); Standard Persistent Disk would
// not do, as A3 and G2 refuse it. A3 Ultra and A4 take Hyperdisk only, and
// Hyperdisk Balanced is the Hyperdisk type that can boot.
func bootDiskType(machineType string) string {
	for _, prefix := range []string{"a3-ultragpu-", "a4-", "a4x-"} {
		if strings.HasPrefix(machineType, prefix) {
			return "hyperdisk-balanced"
		}
	}
	return "pd-balanced"
}

// GCE's label rules: at most 64 labels; keys start with a lowercase letter;
// keys and values are at most 63 lowercase letters, digits, '_' and '-'.
var (
	labelKeyRE   = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,62}$`)
	labelValueRE = regexp.MustCompile(`^[a-z0-9_-]{0,63}$`)
)

const maxLabels = 64

// checkLabels applies GCE's label rules before the insert does, so that a
// bad label fails with its name instead of GCE's generic 400.
func checkLabels(labels map[string]string) error {
	if len(labels) > maxLabels {
		return fmt.Errorf("%d labels, GCE allows %d", len(labels), maxLabels)
	}
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		if !labelKeyRE.MatchString(k) {
			return fmt.Errorf("label key %q breaks GCE's rules (lowercase letters, digits, _ and -, starting with a letter, at most 63)", k)
		}
		if v := labels[k]; !labelValueRE.MatchString(v) {
			return fmt.Errorf("label %s=%q breaks GCE's rules (lowercase letters, digits, _ and -, at most 63)", k, v)
		}
	}
	return nil
}

func withOffer(e *providers.Error, o planner.OfferKey) *providers.Error {
	e.Offer = o
	return e
}

func (p *Provider) get(ctx context.Context, zone, name string) (*computepb.Instance, error) {
	return p.instances.Get(ctx, &computepb.GetInstanceRequest{Project: p.cfg.Project, Zone: zone, Instance: name}, p.callOptions()...)
}
