// SPDX-License-Identifier: Apache-2.0

package oci

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/oracle/oci-go-sdk/v65/common"
	"github.com/oracle/oci-go-sdk/v65/core"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/schema"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// retryTokenPrefix marks gpufleet's opc-retry-tokens. It must never
// change: a create repeated across an upgrade must send the token its
// first launch did, or OCI would take it for a new one.
const retryTokenPrefix = "gpufleet-"

// maxRetryToken is OCI's limit on an opc-retry-token.
const maxRetryToken = 64

// retryToken is the opc-retry-token of a create's launch, the same in
// every process that repeats the create.
func retryToken(token string) string { return retryTokenPrefix + token }

// maxMetadata is what OCI takes in an instance's metadata in all, user
// data (in base64) and SSH keys together.
const maxMetadata = 32000

// Create launches the instance for req, unless it exists. It lists the
// availability domain's instances of the node's display name first, and
// returns the one whose token tag is req's; only then does it launch one,
// with an opc-retry-token derived from req's token. OCI answers a repeat
// of that launch within 24 hours with the first instance; the list makes
// a repeat later than that, or from another process, return it too. A
// list that fails launches nothing.
//
// A token whose instance is terminating or terminated is spent: Create
// launches nothing for it, and says so (providers.KindTokenSpent), so that
// the reconciler retries with a new one.
func (p *Provider) Create(ctx context.Context, req providers.CreateRequest) (providers.Instance, error) {
	o := req.Offer
	if err := p.checkRequest(req); err != nil {
		return providers.Instance{}, err
	}
	c, err := p.client("create", o, o.Region)
	if err != nil {
		return providers.Instance{}, err
	}
	ad, err := p.adOf(ctx, "create", o)
	if err != nil {
		return providers.Instance{}, err
	}
	name := providers.InstanceName(req.Fleet, req.Workload, req.Token)
	listed, err := p.instances(ctx, "create", o, o.Region, core.ListInstancesRequest{AvailabilityDomain: &ad, DisplayName: &name})
	if err != nil {
		return providers.Instance{}, err
	}
	if inst, found, err := existing(req, listed); found || err != nil {
		return inst, err
	}

	details, err := p.launchDetails(req, ad, name)
	if err != nil {
		return providers.Instance{}, p.invalid("create", o, "%v", err)
	}
	callCtx, md := p.call(ctx)
	resp, err := c.compute.LaunchInstance(callCtx, core.LaunchInstanceRequest{
		LaunchInstanceDetails: details,
		OpcRetryToken:         common.String(retryToken(req.Token)),
		RequestMetadata:       md,
	})
	if err != nil {
		return providers.Instance{}, p.classify("create", o, err)
	}
	if ended(resp.LifecycleState) {
		// A launch repeated within the token's day is answered with the
		// first one's instance, whatever has become of it.
		return providers.Instance{}, spent(req, deref(resp.Id), resp.LifecycleState)
	}
	inst, ok := toInstance(o.Region, resp.Instance)
	if !ok || inst.Token != req.Token {
		return providers.Instance{}, &providers.Error{Kind: providers.KindUnavailable, Cloud: Name, Op: "create", Offer: o,
			Message: fmt.Sprintf("OCI answered the launch with instance %s, which does not carry the create's token", inst.ID)}
	}
	return inst, nil
}

// existing is the instance an earlier create of req launched, among those
// listed by its display name, which is not unique in OCI: the one whose
// token tag is req's. found is false when there is none. One that has
// ended spends the token.
func existing(req providers.CreateRequest, listed []core.Instance) (inst providers.Instance, found bool, err error) {
	var gone *core.Instance
	for i, in := range listed {
		if _, _, token, owned := providers.Owned(in.FreeformTags); !owned || token != req.Token {
			continue
		}
		if ended(in.LifecycleState) {
			gone = &listed[i]
			continue
		}
		inst, _ := toInstance(req.Offer.Region, in)
		return inst, true, nil
	}
	if gone != nil {
		return providers.Instance{}, true, spent(req, deref(gone.Id), gone.LifecycleState)
	}
	return providers.Instance{}, false, nil
}

func spent(req providers.CreateRequest, id string, state core.InstanceLifecycleStateEnum) error {
	return &providers.Error{Kind: providers.KindTokenSpent, Cloud: Name, Op: "create", Offer: req.Offer,
		Message: fmt.Sprintf("token %s already launched %s, which is %s", req.Token, id, state)}
}

// bootstrapFormats are the bootstrap formats a node takes: both go as
// user_data, for cloud-init, which OCI's images run at first boot, runs a
// file that starts with #! as a script.
var bootstrapFormats = map[string]bool{schema.BootstrapCloudInit: true, schema.BootstrapScript: true}

// checkRequest refuses a create OCI would refuse, or gpufleet cannot make
// here, before any call. What it says never quotes the bootstrap, which
// holds secrets.
func (p *Provider) checkRequest(req providers.CreateRequest) error {
	o := req.Offer
	if err := p.checkOffer("create", o); err != nil {
		return err
	}
	switch {
	case req.Token == "" || req.Fleet == "" || req.Workload == "":
		return p.invalid("create", o, "a create needs a token, a fleet and a workload")
	case len(retryToken(req.Token)) > maxRetryToken:
		return p.invalid("create", o, "token %q is too long for an opc-retry-token of at most %d characters", req.Token, maxRetryToken)
	case req.PlacementGroup != "":
		return p.invalid("create", o, "gpufleet keeps no placement groups on OCI")
	case req.EFA > 0:
		return p.invalid("create", o, "OCI has no Elastic Fabric Adapters")
	}
	if b := req.Bootstrap; b != nil && !bootstrapFormats[b.Format] {
		return p.invalid("create", o, "bootstrap format %q is neither %s nor %s", b.Format, schema.BootstrapCloudInit, schema.BootstrapScript)
	}
	if _, err := p.launchDetails(req, "", ""); err != nil {
		return p.invalid("create", o, "%v", err)
	}
	return nil
}

// checkOffer refuses an offer gpufleet cannot launch on OCI as
// configured: the cloud, region, market, and the region's image and
// subnet, which a launch needs.
func (p *Provider) checkOffer(op string, o planner.OfferKey) error {
	launch := p.cfg.Launch
	switch {
	case o.Cloud != Name:
		return p.invalid(op, o, "offer is for cloud %q", o.Cloud)
	case p.clients[o.Region] == nil:
		return p.invalid(op, o, "region %q is not configured", o.Region)
	case o.Zone == "" || o.InstanceType == "":
		return p.invalid(op, o, "an offer needs a zone and a shape")
	case o.Market != catalog.OnDemand:
		return p.invalid(op, o, "gpufleet launches OCI's GPU shapes on demand only, not %s", o.Market)
	case launch.ImageByRegion[o.Region] == "":
		return p.invalid(op, o, "no image configured for region %s (clouds.oci.launch.imageByRegion)", o.Region)
	case launch.SubnetByRegion[o.Region] == "":
		return p.invalid(op, o, "no subnet configured for region %s (clouds.oci.launch.subnetByRegion)", o.Region)
	}
	return nil
}

// launchDetails is the launch for req in availability domain ad, named
// name. It is a pure function of the request and the configuration, so a
// repeat sends what the first launch did, as OCI's retry token requires
// (JSON puts the tags' and metadata's keys in order).
func (p *Provider) launchDetails(req providers.CreateRequest, ad, name string) (core.LaunchInstanceDetails, error) {
	launch := p.cfg.Launch
	o := req.Offer
	source := core.InstanceSourceViaImageDetails{ImageId: common.String(launch.ImageByRegion[o.Region])}
	if launch.DiskGB > 0 {
		source.BootVolumeSizeInGBs = common.Int64(int64(launch.DiskGB))
	}
	details := core.LaunchInstanceDetails{
		AvailabilityDomain: &ad,
		CompartmentId:      common.String(p.cfg.Compartment),
		Shape:              common.String(o.InstanceType),
		DisplayName:        &name,
		FreeformTags:       providers.OwnershipTags(req),
		SourceDetails:      source,
		CreateVnicDetails:  &core.CreateVnicDetails{SubnetId: common.String(launch.SubnetByRegion[o.Region])},
	}
	metadata := map[string]string{}
	if key := launch.SSHPublicKey; key != "" {
		metadata["ssh_authorized_keys"] = key
	}
	if b := req.Bootstrap; b != nil && len(b.Data) > 0 {
		metadata["user_data"] = base64.StdEncoding.EncodeToString(b.Data)
	}
	if len(metadata) > 0 {
		encoded, err := json.Marshal(metadata)
		if err != nil {
			return core.LaunchInstanceDetails{}, fmt.Errorf("encoding the instance's metadata, %w", err)
		}
		if len(encoded) > maxMetadata {
			size := 0
			if req.Bootstrap != nil {
				size = len(req.Bootstrap.Data)
			}
			return core.LaunchInstanceDetails{}, fmt.Errorf("the bootstrap file renders to %d bytes, which in base64 beside the SSH key make %d bytes of instance metadata, over OCI's %d", size, len(encoded), maxMetadata)
		}
		details.Metadata = metadata
	}
	return details, nil
}

func (p *Provider) invalid(op string, o planner.OfferKey, format string, args ...any) *providers.Error {
	return &providers.Error{Kind: providers.KindInvalid, Cloud: Name, Op: op, Offer: o, Message: fmt.Sprintf(format, args...)}
}
