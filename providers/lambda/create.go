// SPDX-License-Identifier: Apache-2.0

package lambda

import (
	"context"
	"fmt"
	"net/http"
	"unicode/utf8"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// Create launches the instance for req, unless it exists. The API has no
// idempotency token, so the name stands in for one: Create lists the
// account first and returns the instance of req's name that is not on
// its way out, if there is one, and only then launches one instance of
// that name. A list that fails fails the create, launching nothing.
//
// That makes a repeat, in this process or after a crash, return the first
// instance, for the one writer the repository lock admits per account;
// two writers without it could both list, find nothing and both launch.
func (p *Provider) Create(ctx context.Context, req providers.CreateRequest) (providers.Instance, error) {
	o := req.Offer
	if err := p.checkRequest(req); err != nil {
		return providers.Instance{}, err
	}
	name, err := NodeName(req.Fleet, req.Workload, req.Token)
	if err != nil {
		return providers.Instance{}, p.invalid("create", o, "%v", err)
	}
	if err := p.checkSSHKey(ctx, "create", o, true); err != nil {
		return providers.Instance{}, err
	}
	all, err := p.instances(ctx, "create")
	if err != nil {
		return providers.Instance{}, withOffer(err, o)
	}
	for _, in := range all {
		if in.Name == nil || *in.Name != name || in.Status == statusTerminating || in.Status == statusTerminated {
			continue
		}
		inst, ok := p.toInstance(in)
		if !ok {
			return providers.Instance{}, p.invalid("create", o, "instance %s is named %s but is not in a configured region (%s)", in.ID, name, in.Region.Name)
		}
		return inst, nil
	}

	launch := launchRequest{
		RegionName:       o.Region,
		InstanceTypeName: o.InstanceType,
		SSHKeyNames:      []string{p.cfg.Launch.SSHKeyName},
		FileSystemNames:  []string{},
		Quantity:         1,
		Name:             name,
	}
	if family := p.cfg.Launch.Image; family != "" {
		launch.Image = &apiImage{Family: family}
	}
	if b := req.Bootstrap; b != nil {
		launch.UserData = string(b.Data)
	}
	var launched struct {
		IDs []string `json:"instance_ids"`
	}
	if err := p.call(once(ctx), "create", http.MethodPost, "/instance-operations/launch", launch, &launched); err != nil {
		return providers.Instance{}, withOffer(err, o)
	}
	if len(launched.IDs) != 1 {
		return providers.Instance{}, &providers.Error{Kind: providers.KindUnavailable, Cloud: Name, Op: "create", Offer: o,
			Message: fmt.Sprintf("a launch of one instance answered %d ids", len(launched.IDs))}
	}
	// The launch answers ids alone; the instance is booting, as a read
	// would say, and reading it would spend a request of a tight limit.
	return providers.Instance{
		ID:        launched.IDs[0],
		OfferKey:  planner.OfferKey{Cloud: Name, Region: o.Region, Zone: o.Zone, InstanceType: o.InstanceType, Market: catalog.OnDemand},
		Fleet:     req.Fleet,
		Workload:  req.Workload,
		Token:     req.Token,
		State:     planner.StatePending,
		Bootstrap: planner.BootstrapUnknown,
	}, nil
}

// checkOffer refuses an offer Lambda Cloud cannot launch as asked.
func (p *Provider) checkOffer(op string, o planner.OfferKey) error {
	switch {
	case o.Cloud != Name:
		return p.invalid(op, o, "offer is for cloud %q", o.Cloud)
	case !p.regions[o.Region]:
		return p.invalid(op, o, "region %q is not configured", o.Region)
	case o.Zone != p.zoneOf(o.Region):
		return p.invalid(op, o, "zone %q is not region %s's one zone, %s", o.Zone, o.Region, p.zoneOf(o.Region))
	case o.InstanceType == "":
		return p.invalid(op, o, "no instance type")
	case o.Market != catalog.OnDemand:
		return p.invalid(op, o, "Lambda Cloud sells on-demand instances only, not %s", o.Market)
	}
	return nil
}

func (p *Provider) checkRequest(req providers.CreateRequest) error {
	o := req.Offer
	if err := p.checkOffer("create", o); err != nil {
		return err
	}
	switch {
	case req.Token == "" || req.Fleet == "" || req.Workload == "":
		return p.invalid("create", o, "a create needs a token, a fleet and a workload")
	case req.PlacementGroup != "":
		return p.invalid("create", o, "Lambda Cloud has no placement groups")
	case req.EFA > 0:
		return p.invalid("create", o, "Lambda Cloud has no Elastic Fabric Adapters")
	}
	// What it says of the bootstrap never quotes it: it holds secrets.
	if b := req.Bootstrap; b != nil && !utf8.Valid(b.Data) {
		return p.invalid("create", o, "bootstrap is not UTF-8 text, as Lambda Cloud's user_data must be")
	}
	return nil
}

func (p *Provider) invalid(op string, o planner.OfferKey, format string, args ...any) *providers.Error {
	return &providers.Error{Kind: providers.KindInvalid, Cloud: Name, Op: op, Offer: o, Message: fmt.Sprintf(format, args...)}
}
