// SPDX-License-Identifier: Apache-2.0

package oci

import (
	"context"
	"fmt"
	"slices"

	"github.com/oracle/oci-go-sdk/v65/core"
	"golang.org/x/sync/errgroup"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// List returns the owned instances of the compartment in every configured
// region, the regions read at once. ListInstances filters on no tag, so
// every instance of the compartment is read, all pages, and those without
// gpufleet's tags are dropped here.
func (p *Provider) List(ctx context.Context, sel providers.Selector) ([]providers.Instance, error) {
	perRegion := make([][]providers.Instance, len(p.regions))
	g, ctx := errgroup.WithContext(ctx)
	for i, region := range p.regions {
		g.Go(func() error {
			all, err := p.instances(ctx, "list", planner.OfferKey{}, region, core.ListInstancesRequest{})
			if err != nil {
				return err
			}
			for _, in := range all {
				if inst, ok := toInstance(region, in); ok && sel.Matches(inst) {
					perRegion[i] = append(perRegion[i], inst)
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return slices.Concat(perRegion...), nil
}

// instances lists a region's instances in the compartment that match
// filter (an availability domain, a display name), every page of them.
func (p *Provider) instances(ctx context.Context, op string, offer planner.OfferKey, region string, filter core.ListInstancesRequest) ([]core.Instance, error) {
	c, err := p.client(op, offer, region)
	if err != nil {
		return nil, err
	}
	req := filter
	req.CompartmentId = &p.cfg.Compartment
	var out []core.Instance
	seen := map[string]bool{}
	for {
		callCtx, md := p.call(ctx)
		req.RequestMetadata = md
		resp, err := c.compute.ListInstances(callCtx, req)
		if err != nil {
			return nil, p.classify(op, offer, err)
		}
		out = append(out, resp.Items...)
		next := resp.OpcNextPage
		if next == nil || *next == "" {
			return out, nil
		}
		if seen[*next] {
			return nil, &providers.Error{Kind: providers.KindUnavailable, Cloud: Name, Op: op, Offer: offer,
				Message: fmt.Sprintf("ListInstances in %s answered page %q twice", region, *next)}
		}
		seen[*next] = true
		req.Page = next
	}
}

// toInstance maps an instance listed in region to gpufleet's view of it;
// ok is false for one without gpufleet's tags, or terminated. The region
// is the client's: an instance's own region field names some regions by
// their short code (iad, phx).
func toInstance(region string, in core.Instance) (providers.Instance, bool) {
	fleet, workload, token, ok := providers.Owned(in.FreeformTags)
	if !ok {
		return providers.Instance{}, false
	}
	state, listed := stateOf(in.LifecycleState)
	if !listed {
		return providers.Instance{}, false
	}
	out := providers.Instance{
		ID: deref(in.Id),
		OfferKey: planner.OfferKey{
			Cloud:        Name,
			Region:       region,
			Zone:         zoneOf(deref(in.AvailabilityDomain)),
			InstanceType: deref(in.Shape),
			Market:       catalog.OnDemand,
		},
		Fleet:     fleet,
		Workload:  workload,
		Token:     token,
		Bootstrap: in.FreeformTags[providers.TagBootstrap],
		State:     state,
	}
	if in.TimeCreated != nil {
		out.LaunchedAt = in.TimeCreated.Time
	}
	return out, true
}

// stateOf maps a lifecycle state; listed is false for an instance that is
// gone (OCI lists terminated instances for a while after).
//
// A stopped instance is not a working node, yet it is still there and
// keeps its boot volume, billed, until deleted. An instance creating an
// image keeps running meanwhile; one moving is between hosts, and comes
// back. A state newer than this code is most likely a transition, and is
// pending: counted live, the node is not replaced while it may yet come
// up.
func stateOf(s core.InstanceLifecycleStateEnum) (state planner.State, listed bool) {
	switch s {
	case core.InstanceLifecycleStateRunning, core.InstanceLifecycleStateCreatingImage:
		return planner.StateRunning, true
	case core.InstanceLifecycleStateProvisioning, core.InstanceLifecycleStateStarting, core.InstanceLifecycleStateMoving:
		return planner.StatePending, true
	case core.InstanceLifecycleStateStopping, core.InstanceLifecycleStateStopped:
		return planner.StateStopping, true
	case core.InstanceLifecycleStateTerminating:
		return planner.StateTerminated, true
	case core.InstanceLifecycleStateTerminated:
		return "", false
	}
	return planner.StatePending, true
}

// ended reports whether an instance is terminating or terminated.
func ended(s core.InstanceLifecycleStateEnum) bool {
	return s == core.InstanceLifecycleStateTerminating || s == core.InstanceLifecycleStateTerminated
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
