// SPDX-License-Identifier: Apache-2.0

package gcp

import (
	"cmp"
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"cloud.google.com/go/compute/apiv1/computepb"
	"github.com/google/uuid"
	"google.golang.org/api/iterator"
	"google.golang.org/protobuf/proto"

	"github.com/gpufleet/gpufleet/providers"
)

// A placement group is a GCE resource policy with a compact (COLLOCATED)
// group placement policy: regional, though GCE places every instance that
// uses it in one zone. Resource policies carry no labels, so gpufleet marks
// its own in the description, which says whose group it is:
//
//	gpufleet fleet=ml workload=train zone=us-central1-a
const placementMark = "gpufleet"

// policyNameRE is GCE's rule for resource names (RFC 1035, at most 63).
var policyNameRE = regexp.MustCompile(`^[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?$`)

// policyPath is the partial URL an instance names a resource policy by.
func policyPath(project, region, name string) string {
	return "projects/" + project + "/regions/" + region + "/resourcePolicies/" + name
}

func placementDescription(g providers.PlacementGroup) string {
	return fmt.Sprintf("%s fleet=%s workload=%s zone=%s", placementMark, g.Fleet, g.Workload, g.Zone)
}

// placementOf reads a resource policy back as gpufleet's placement group
// of the region, or reports that it is not one: a description gpufleet
// did not write, a name that is not the group's, a zone outside the
// region, or a policy that does not collocate.
func placementOf(region string, rp *computepb.ResourcePolicy) (providers.PlacementGroup, bool) {
	fields := strings.Fields(rp.GetDescription())
	if len(fields) != 4 || fields[0] != placementMark {
		return providers.PlacementGroup{}, false
	}
	kv := map[string]string{}
	for _, f := range fields[1:] {
		k, v, ok := strings.Cut(f, "=")
		if !ok || v == "" {
			return providers.PlacementGroup{}, false
		}
		kv[k] = v
	}
	g := providers.PlacementGroup{Name: rp.GetName(), Region: region, Zone: kv["zone"], Fleet: kv["fleet"], Workload: kv["workload"]}
	switch {
	case g.Fleet == "" || g.Workload == "" || g.Zone == "":
		return providers.PlacementGroup{}, false
	case !providers.IsPlacementGroupName(g.Name, g.Fleet, g.Workload, g.Zone), regionOf(g.Zone) != region:
		return providers.PlacementGroup{}, false
	case rp.GetGroupPlacementPolicy().GetCollocation() != computepb.ResourcePolicyGroupPlacementPolicy_COLLOCATED.String():
		return providers.PlacementGroup{}, false
	}
	return g, true
}

func (p *Provider) checkGroup(op string, g providers.PlacementGroup) error {
	invalid := func(format string, args ...any) error {
		return &providers.Error{Kind: providers.KindInvalid, Cloud: Name, Op: op, Message: fmt.Sprintf(format, args...)}
	}
	switch {
	case !p.regions[g.Region]:
		return invalid("region %q is not configured", g.Region)
	case regionOf(g.Zone) != g.Region:
		return invalid("zone %q is not in region %s", g.Zone, g.Region)
	case g.Fleet == "" || g.Workload == "":
		return invalid("a placement group needs a fleet and a workload")
	case !providers.IsPlacementGroupName(g.Name, g.Fleet, g.Workload, g.Zone):
		return invalid("placement group %q is not named %s", g.Name, providers.PlacementGroupName(g.Fleet, g.Workload, g.Zone))
	}
	return nil
}

// EnsurePlacementGroup inserts the group's resource policy and waits for
// its regional operation. A policy of that name already there is success
// when it is gpufleet's group for the same fleet, workload and zone, and
// an invalid error otherwise: gpufleet never adopts a policy it did not
// make.
func (p *Provider) EnsurePlacementGroup(ctx context.Context, g providers.PlacementGroup) error {
	const op = "placement group"
	if err := p.checkGroup(op, g); err != nil {
		return err
	}
	insert, err := p.policies.Insert(ctx, &computepb.InsertResourcePolicyRequest{
		Project: p.cfg.Project,
		Region:  g.Region,
		// A fresh requestId per call: the SDK's retries of this call
		// resend it, so GCE does not insert twice, and a later call is
		// answered by the name.
		RequestId: proto.String(uuid.NewString()),
		ResourcePolicyResource: &computepb.ResourcePolicy{
			Name:        proto.String(g.Name),
			Description: proto.String(placementDescription(g)),
			GroupPlacementPolicy: &computepb.ResourcePolicyGroupPlacementPolicy{
				Collocation: proto.String(computepb.ResourcePolicyGroupPlacementPolicy_COLLOCATED.String()),
			},
		},
	}, p.callOptions()...)
	if err != nil {
		if nameTaken(err) {
			return p.ownPolicy(ctx, g)
		}
		return classify(op, err)
	}
	done, err := p.awaitRegion(ctx, g.Region, insert.Proto())
	if err != nil {
		return classify(op, err)
	}
	if failed := operationError(op, done); failed != nil {
		if failed.Code == "RESOURCE_ALREADY_EXISTS" {
			return p.ownPolicy(ctx, g)
		}
		return failed
	}
	return nil
}

// ownPolicy answers an insert whose name is taken: by gpufleet's group for
// g, made by an earlier run, or by a policy gpufleet must not use.
func (p *Provider) ownPolicy(ctx context.Context, g providers.PlacementGroup) error {
	const op = "placement group"
	rp, err := p.policies.Get(ctx, &computepb.GetResourcePolicyRequest{Project: p.cfg.Project, Region: g.Region, ResourcePolicy: g.Name}, p.callOptions()...)
	if err != nil {
		return classify(op, err)
	}
	if got, ok := placementOf(g.Region, rp); !ok || got != g {
		return &providers.Error{Kind: providers.KindInvalid, Cloud: Name, Op: op, Code: "alreadyExists",
			Message: fmt.Sprintf("resource policy %s in %s exists and is not gpufleet's placement group for fleet %s, workload %s in %s", g.Name, g.Region, g.Fleet, g.Workload, g.Zone)}
	}
	return nil
}

// PlacementGroups lists gpufleet's placement groups in each configured
// region, one list per region, as resource policies are regional.
func (p *Provider) PlacementGroups(ctx context.Context) ([]providers.PlacementGroup, error) {
	var out []providers.PlacementGroup
	for _, region := range slices.Sorted(slices.Values(p.cfg.Regions)) {
		it := p.policies.List(ctx, &computepb.ListResourcePoliciesRequest{
			Project:    p.cfg.Project,
			Region:     region,
			MaxResults: proto.Uint32(pageSize),
		}, p.callOptions()...)
		for {
			rp, err := it.Next()
			if err == iterator.Done {
				break
			}
			if err != nil {
				return nil, classify("list", err)
			}
			if g, ok := placementOf(region, rp); ok {
				out = append(out, g)
			}
		}
	}
	slices.SortFunc(out, func(a, b providers.PlacementGroup) int {
		return cmp.Or(cmp.Compare(a.Region, b.Region), cmp.Compare(a.Name, b.Name))
	})
	return out, nil
}

// DeletePlacementGroup deletes the group's resource policy and waits for
// the operation. It reads the policy first and refuses one that is not
// gpufleet's; one already gone is success. GCE refuses to delete a policy
// instances still use (400 resourceInUseByAnotherResource, naming one of
// them), and that error is returned as it is.
func (p *Provider) DeletePlacementGroup(ctx context.Context, g providers.PlacementGroup) error {
	const op = "delete placement group"
	if !p.regions[g.Region] || g.Name == "" {
		return &providers.Error{Kind: providers.KindInvalid, Cloud: Name, Op: op, Message: fmt.Sprintf("placement group %q in region %q: a delete needs a name and a configured region", g.Name, g.Region)}
	}
	rp, err := p.policies.Get(ctx, &computepb.GetResourcePolicyRequest{Project: p.cfg.Project, Region: g.Region, ResourcePolicy: g.Name}, p.callOptions()...)
	if err != nil {
		if e := classify(op, err); e.Kind != providers.KindNotFound {
			return e
		}
		return nil
	}
	if _, ok := placementOf(g.Region, rp); !ok {
		return &providers.Error{Kind: providers.KindInvalid, Cloud: Name, Op: op, Message: fmt.Sprintf("resource policy %s in %s is not gpufleet's", g.Name, g.Region)}
	}
	del, err := p.policies.Delete(ctx, &computepb.DeleteResourcePolicyRequest{
		Project:        p.cfg.Project,
		Region:         g.Region,
		ResourcePolicy: g.Name,
		RequestId:      proto.String(deleteRequestID()),
	}, p.callOptions()...)
	if err != nil {
		if e := classify(op, err); e.Kind != providers.KindNotFound {
			return e
		}
		return nil
	}
	done, err := p.awaitRegion(ctx, g.Region, del.Proto())
	if err != nil {
		return classify(op, err)
	}
	if failed := operationError(op, done); failed != nil && failed.Kind != providers.KindNotFound {
		return failed
	}
	return nil
}
