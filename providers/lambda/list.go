// SPDX-License-Identifier: Apache-2.0

package lambda

import (
	"context"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// Instance statuses, in the API's words.
const (
	statusBooting     = "booting"
	statusActive      = "active"
	statusUnhealthy   = "unhealthy"
	statusTerminating = "terminating"
	statusTerminated  = "terminated"
)

// List returns the owned instances in the configured regions: those whose
// name NodeName gives, read back into fleet, workload and token. It is one
// call, for the API lists the whole account at once. An instance of a type
// Lambda no longer lists is listed all the same, so that it is held or
// deleted as the plan says, never forgotten while it bills.
func (p *Provider) List(ctx context.Context, sel providers.Selector) ([]providers.Instance, error) {
	all, err := p.instances(ctx, "list")
	if err != nil {
		return nil, err
	}
	var out []providers.Instance
	for _, in := range all {
		inst, ok := p.toInstance(in)
		if !ok || !sel.Matches(inst) {
			continue
		}
		out = append(out, inst)
	}
	return out, nil
}

// toInstance maps an instance to gpufleet's view of it, or reports false
// when its name is not gpufleet's, it is in a region not configured, or
// it is gone. Lambda has no market but on-demand, and a region is its own
// zone. Its bootstrap is not known: the API does not return user data,
// and the name has no room for its digest.
func (p *Provider) toInstance(in apiInstance) (providers.Instance, bool) {
	if in.Name == nil {
		return providers.Instance{}, false
	}
	fleet, workload, token, ok := ParseNodeName(*in.Name)
	if !ok || !p.regions[in.Region.Name] {
		return providers.Instance{}, false
	}
	state, listed := stateOf(in.Status)
	if !listed {
		return providers.Instance{}, false
	}
	return providers.Instance{
		ID: in.ID,
		OfferKey: planner.OfferKey{
			Cloud:        Name,
			Region:       in.Region.Name,
			Zone:         p.zoneOf(in.Region.Name),
			InstanceType: in.InstanceType.Name,
			Market:       catalog.OnDemand,
		},
		Fleet:     fleet,
		Workload:  workload,
		Token:     token,
		State:     state,
		Bootstrap: planner.BootstrapUnknown,
	}, true
}

// stateOf maps a status; listed is false for an instance that is gone.
//
// Unhealthy is pending: the instance is there and billing, but not
// answering its health checks, which Lambda may see it through. Counted
// live, it is not replaced by a second node while it may yet recover, as
// GCE's REPAIRING is not; and pending rather than running, it is not
// reported as a working node. A status newer than this code is most
// likely a transition, and is pending too, for the same reason.
func stateOf(status string) (state planner.State, listed bool) {
	switch status {
	case statusActive:
		return planner.StateRunning, true
	case statusBooting, statusUnhealthy:
		return planner.StatePending, true
	case statusTerminating:
		return planner.StateTerminated, true
	case statusTerminated:
		return "", false
	}
	return planner.StatePending, true
}
