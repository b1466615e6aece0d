// SPDX-License-Identifier: Apache-2.0

package aws

import (
	"context"
	"fmt"
	"maps"
	"slices"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

var _ providers.Adopter = (*Provider)(nil)

// Unowned lists the instances of the configured regions that carry no
// ownership tags, one region after another, so that a Limit stops the
// listing early. Ids and tags are filtered by EC2 and checked again here;
// ids go as an instance-id filter, not InstanceIds, which fails the whole
// call for an id of another region. Instances that have ended are left
// out: there is nothing left of them to adopt.
func (p *Provider) Unowned(ctx context.Context, sel providers.UnownedSelector) ([]providers.Unowned, error) {
	var out []providers.Unowned
	for i, region := range p.cfg.Regions {
		if slices.Index(p.cfg.Regions, region) != i {
			continue
		}
		found, err := p.unownedIn(ctx, region, sel, len(out))
		if err != nil {
			return nil, err
		}
		out = append(out, found...)
		if sel.Full(len(out)) {
			break
		}
	}
	providers.SortUnowned(out)
	if sel.Full(len(out)) {
		out = out[:sel.Limit+1]
	}
	return out, nil
}

func (p *Provider) unownedIn(ctx context.Context, region string, sel providers.UnownedSelector, have int) ([]providers.Unowned, error) {
	client, err := p.client("list", region)
	if err != nil {
		return nil, err
	}
	var filters []types.Filter
	if len(sel.IDs) > 0 {
		filters = append(filters, types.Filter{Name: awssdk.String("instance-id"), Values: sel.IDs})
	}
	for _, k := range slices.Sorted(maps.Keys(sel.Tags)) {
		filters = append(filters, types.Filter{Name: awssdk.String("tag:" + k), Values: []string{sel.Tags[k]}})
	}
	pages := ec2.NewDescribeInstancesPaginator(client, &ec2.DescribeInstancesInput{Filters: filters, MaxResults: awssdk.Int32(pageSize)})
	var out []providers.Unowned
	seen := map[string]bool{}
	for pages.HasMorePages() && !sel.Full(have+len(out)) {
		page, err := p.page(ctx, pages)
		if err != nil {
			return nil, classify("list", planner.OfferKey{}, err)
		}
		for _, r := range page.Reservations {
			for _, raw := range r.Instances {
				u := unownedOf(region, awssdk.ToString(r.OwnerId), raw)
				tags := tagMap(raw.Tags)
				if _, _, _, owned := providers.Owned(tags); owned || seen[u.ID] || u.State == planner.StateTerminated || !sel.Selects(u.ID, tags) {
					continue
				}
				seen[u.ID] = true
				out = append(out, u)
			}
		}
	}
	return out, nil
}

func unownedOf(region, account string, inst types.Instance) providers.Unowned {
	return providers.Unowned{
		ID:         awssdk.ToString(inst.InstanceId),
		Offer:      offerKey(region, inst),
		State:      instanceState(inst),
		Tags:       tagMap(inst.Tags),
		Account:    account,
		LaunchedAt: awssdk.ToTime(inst.LaunchTime),
	}
}

// Adopt tags an unowned instance with the ownership tags of req. EC2 tags
// without a condition, so the instance is read first: one that is owned
// by now is refused, unless it carries these very tags (an adoption
// repeated), and only then tagged.
func (p *Provider) Adopt(ctx context.Context, u providers.Unowned, req providers.CreateRequest) (providers.Instance, error) {
	const op = "adopt"
	fail := func(format string, args ...any) error {
		return &providers.Error{Kind: providers.KindInvalid, Cloud: catalog.AWS, Op: op, Offer: u.Offer, Message: fmt.Sprintf(format, args...)}
	}
	if u.ID == "" || req.Fleet == "" || req.Workload == "" || req.Token == "" {
		return providers.Instance{}, fail("an adoption needs an instance id, a fleet, a workload and a token")
	}
	client, err := p.client(op, u.Offer.Region)
	if err != nil {
		return providers.Instance{}, err
	}
	raw, found, err := p.describe(ctx, client, u.ID)
	if err != nil {
		return providers.Instance{}, classify(op, u.Offer, err)
	}
	if !found {
		return providers.Instance{}, &providers.Error{Kind: providers.KindNotFound, Cloud: catalog.AWS, Op: op, Offer: u.Offer, Message: fmt.Sprintf("instance %s not found in %s", u.ID, u.Offer.Region)}
	}
	want := providers.OwnershipTags(req)
	switch done, err := providers.CheckAdoptable(u.ID, tagMap(raw.Tags), want); {
	case err != nil:
		return providers.Instance{}, fail("%v", err)
	case done:
		return p.adopted(ctx, client, u)
	}
	tags := make([]types.Tag, 0, len(want))
	for _, k := range slices.Sorted(maps.Keys(want)) {
		tags = append(tags, types.Tag{Key: awssdk.String(k), Value: awssdk.String(want[k])})
	}
	callCtx, cancel := p.call(ctx)
	_, err = client.CreateTags(callCtx, &ec2.CreateTagsInput{Resources: []string{u.ID}, Tags: tags})
	cancel()
	if err != nil {
		return providers.Instance{}, classify(op, u.Offer, err)
	}
	return p.adopted(ctx, client, u)
}

// adopted reads an instance as List returns it once it is tagged.
func (p *Provider) adopted(ctx context.Context, client *ec2.Client, u providers.Unowned) (providers.Instance, error) {
	raw, found, err := p.describe(ctx, client, u.ID)
	if err != nil {
		return providers.Instance{}, classify("adopt", u.Offer, err)
	}
	inst, ok := toInstance(u.Offer.Region, raw)
	if !found || !ok {
		return providers.Instance{}, &providers.Error{Kind: providers.KindUnavailable, Cloud: catalog.AWS, Op: "adopt", Offer: u.Offer, Message: fmt.Sprintf("instance %s does not show its ownership tags after tagging", u.ID)}
	}
	return inst, nil
}
