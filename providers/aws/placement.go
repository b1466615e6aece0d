// SPDX-License-Identifier: Apache-2.0

package aws

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"golang.org/x/sync/errgroup"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// A zone gang's nodes go into an EC2 cluster placement group, which packs
// them onto one low-latency network in one zone.
var _ providers.PlacementGrouper = (*Provider)(nil)

// tagZone records the zone a placement group was made for: an EC2 group
// has no zone of its own until instances are in it, and the name alone
// may end in a hash instead of the zone.
const tagZone = "gpufleet-zone"

// EC2's codes for a placement group.
const (
	codeGroupDuplicate = "InvalidPlacementGroup.Duplicate"
	codeGroupUnknown   = "InvalidPlacementGroup.Unknown"
	codeGroupInUse     = "InvalidPlacementGroup.InUse"
)

// EnsurePlacementGroup creates the group, a cluster group tagged as
// gpufleet's. One of that name already there is accepted only when its
// tags say it is this fleet's and workload's: EC2 names groups per region,
// and a launch into someone else's would put gpufleet's nodes beside
// theirs and keep their group alive.
func (p *Provider) EnsurePlacementGroup(ctx context.Context, g providers.PlacementGroup) error {
	const op = "create-placement-group"
	if err := checkGroup(op, g); err != nil {
		return err
	}
	client, err := p.client(op, g.Region)
	if err != nil {
		return err
	}
	tags := []types.Tag{
		{Key: awssdk.String(providers.TagFleet), Value: awssdk.String(g.Fleet)},
		{Key: awssdk.String(providers.TagWorkload), Value: awssdk.String(g.Workload)},
		{Key: awssdk.String(tagZone), Value: awssdk.String(g.Zone)},
	}
	// Twice at most: a group found to exist may be removed before it is
	// read, and is then created anew.
	for range 2 {
		callCtx, cancel := p.call(ctx)
		_, err = client.CreatePlacementGroup(callCtx, &ec2.CreatePlacementGroupInput{
			GroupName:         awssdk.String(g.Name),
			Strategy:          types.PlacementStrategyCluster,
			TagSpecifications: []types.TagSpecification{{ResourceType: types.ResourceTypePlacementGroup, Tags: tags}},
		})
		cancel()
		if err == nil {
			return nil
		}
		if errorCode(err) != codeGroupDuplicate {
			return groupError(op, g, err)
		}
		existing, found, err := p.describeGroup(ctx, client, g.Name)
		if err != nil {
			return groupError(op, g, err)
		}
		if !found {
			continue
		}
		fleet, workload, _, owned := providers.Owned(tagMap(existing.Tags))
		if !owned || fleet != g.Fleet || workload != g.Workload {
			return &providers.Error{Kind: providers.KindInvalid, Cloud: catalog.AWS, Op: op, Code: codeGroupDuplicate,
				Message: fmt.Sprintf("placement group %s in %s exists and is not gpufleet's for fleet %q, workload %q", g.Name, g.Region, g.Fleet, g.Workload)}
		}
		return nil
	}
	return &providers.Error{Kind: providers.KindUnavailable, Cloud: catalog.AWS, Op: op, Code: codeGroupDuplicate,
		Message: fmt.Sprintf("placement group %s in %s is said to exist but cannot be read", g.Name, g.Region)}
}

// PlacementGroups lists the owned groups of every configured region,
// querying the regions concurrently. EC2 filters on the ownership tag; the
// tags are checked again here, as List does for instances.
func (p *Provider) PlacementGroups(ctx context.Context) ([]providers.PlacementGroup, error) {
	const op = "list-placement-groups"
	perRegion := make([][]providers.PlacementGroup, len(p.cfg.Regions))
	eg, ctx := errgroup.WithContext(ctx)
	eg.SetLimit(p.opts.Concurrency)
	for i, region := range p.cfg.Regions {
		if slices.Index(p.cfg.Regions, region) != i {
			continue
		}
		eg.Go(func() error {
			client, err := p.client(op, region)
			if err != nil {
				return err
			}
			callCtx, cancel := p.call(ctx)
			defer cancel()
			// DescribePlacementGroups has no pages: an account holds at most
			// 500 groups in a region.
			out, err := client.DescribePlacementGroups(callCtx, &ec2.DescribePlacementGroupsInput{
				Filters: []types.Filter{{Name: awssdk.String("tag-key"), Values: []string{providers.TagFleet}}},
			})
			if err != nil {
				return classify(op, planner.OfferKey{}, err)
			}
			for _, raw := range out.PlacementGroups {
				tags := tagMap(raw.Tags)
				fleet, workload, _, owned := providers.Owned(tags)
				if !owned || raw.GroupName == nil {
					continue
				}
				perRegion[i] = append(perRegion[i], providers.PlacementGroup{
					Name: awssdk.ToString(raw.GroupName), Region: region, Zone: tags[tagZone], Fleet: fleet, Workload: workload,
				})
			}
			return nil
		})
	}
	if err := eg.Wait(); err != nil {
		return nil, err
	}
	all := slices.Concat(perRegion...)
	slices.SortFunc(all, func(a, b providers.PlacementGroup) int {
		return cmp.Or(cmp.Compare(a.Region, b.Region), cmp.Compare(a.Name, b.Name))
	})
	return all, nil
}

// DeletePlacementGroup removes an owned group. It reads the group first
// and refuses one without gpufleet's tags, or of another fleet or
// workload; one already gone is a success. A group that still holds
// instances, ending ones too, fails as unavailable: EC2 refuses it until
// they have terminated, and a later try succeeds.
func (p *Provider) DeletePlacementGroup(ctx context.Context, g providers.PlacementGroup) error {
	const op = "delete-placement-group"
	if g.Name == "" {
		return &providers.Error{Kind: providers.KindInvalid, Cloud: catalog.AWS, Op: op, Message: "no placement group name"}
	}
	client, err := p.client(op, g.Region)
	if err != nil {
		return err
	}
	existing, found, err := p.describeGroup(ctx, client, g.Name)
	switch {
	case err != nil:
		return groupError(op, g, err)
	case !found:
		return nil
	}
	fleet, workload, _, owned := providers.Owned(tagMap(existing.Tags))
	switch {
	case !owned:
		return &providers.Error{Kind: providers.KindInvalid, Cloud: catalog.AWS, Op: op,
			Message: fmt.Sprintf("placement group %s in %s is not owned by gpufleet", g.Name, g.Region)}
	case (g.Fleet != "" && fleet != g.Fleet) || (g.Workload != "" && workload != g.Workload):
		return &providers.Error{Kind: providers.KindInvalid, Cloud: catalog.AWS, Op: op,
			Message: fmt.Sprintf("placement group %s in %s belongs to fleet %q, workload %q, not %q, %q", g.Name, g.Region, fleet, workload, g.Fleet, g.Workload)}
	}

	callCtx, cancel := p.call(ctx)
	defer cancel()
	_, err = client.DeletePlacementGroup(callCtx, &ec2.DeletePlacementGroupInput{GroupName: awssdk.String(g.Name)})
	switch code := errorCode(err); {
	case err == nil, code == codeGroupUnknown:
		return nil
	case code == codeGroupInUse:
		e := groupError(op, g, err).(*providers.Error)
		e.Kind = providers.KindUnavailable
		return e
	}
	return groupError(op, g, err)
}

// describeGroup reads one group by name; found is false when EC2 does not
// know it.
func (p *Provider) describeGroup(ctx context.Context, client *ec2.Client, name string) (types.PlacementGroup, bool, error) {
	callCtx, cancel := p.call(ctx)
	defer cancel()
	out, err := client.DescribePlacementGroups(callCtx, &ec2.DescribePlacementGroupsInput{GroupNames: []string{name}})
	if err != nil {
		if errorCode(err) == codeGroupUnknown {
			return types.PlacementGroup{}, false, nil
		}
		return types.PlacementGroup{}, false, err
	}
	for _, g := range out.PlacementGroups {
		if awssdk.ToString(g.GroupName) == name {
			return g, true, nil
		}
	}
	return types.PlacementGroup{}, false, nil
}

func checkGroup(op string, g providers.PlacementGroup) error {
	invalid := func(format string, args ...any) error {
		return &providers.Error{Kind: providers.KindInvalid, Cloud: catalog.AWS, Op: op, Message: fmt.Sprintf(format, args...)}
	}
	switch {
	case g.Fleet == "" || g.Workload == "" || g.Region == "" || g.Zone == "":
		return invalid("placement group %q needs a fleet, a workload, a region and a zone", g.Name)
	case !providers.IsPlacementGroupName(g.Name, g.Fleet, g.Workload, g.Zone):
		// Another name would not be found again by the next run.
		return invalid("placement group %q is not named %q", g.Name, providers.PlacementGroupName(g.Fleet, g.Workload, g.Zone))
	}
	return nil
}

// groupError classifies an SDK error of a placement group's call, naming
// the group.
func groupError(op string, g providers.PlacementGroup, err error) error {
	e := classify(op, planner.OfferKey{}, err).(*providers.Error)
	e.Message = fmt.Sprintf("placement group %s in %s: %s", g.Name, g.Region, cmp.Or(e.Message, err.Error()))
	return e
}
