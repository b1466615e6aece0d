// SPDX-License-Identifier: Apache-2.0

package aws

import (
	"context"
	"slices"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"golang.org/x/sync/errgroup"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
)

// pageSize is DescribeInstances' largest page.
const pageSize = 1000

// List returns the owned instances of every configured region, querying
// the regions concurrently. EC2 filters on the ownership tag; the tags are
// checked again here, so a filter EC2 ignored cannot leak anything.
func (p *Provider) List(ctx context.Context, sel providers.Selector) ([]providers.Instance, error) {
	perRegion := make([][]providers.Instance, len(p.cfg.Regions))
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(p.opts.Concurrency)
	for i, region := range p.cfg.Regions {
		if slices.Index(p.cfg.Regions, region) != i {
			continue // listed twice in the configuration
		}
		g.Go(func() error {
			found, err := p.listRegion(ctx, region, sel)
			perRegion[i] = found
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return slices.Concat(perRegion...), nil
}

func (p *Provider) listRegion(ctx context.Context, region string, sel providers.Selector) ([]providers.Instance, error) {
	client, err := p.client("list", region)
	if err != nil {
		return nil, err
	}
	filters := []types.Filter{{Name: awssdk.String("tag-key"), Values: []string{providers.TagFleet}}}
	if sel.Fleet != "" {
		filters = append(filters, types.Filter{Name: awssdk.String("tag:" + providers.TagFleet), Values: []string{sel.Fleet}})
	}
	pages := ec2.NewDescribeInstancesPaginator(client, &ec2.DescribeInstancesInput{
		Filters:    filters,
		MaxResults: awssdk.Int32(pageSize),
	})
	var out []providers.Instance
	seen := map[string]bool{}
	for pages.HasMorePages() {
		page, err := p.page(ctx, pages)
		if err != nil {
			return nil, classify("list", planner.OfferKey{}, err)
		}
		for _, r := range page.Reservations {
			for _, raw := range r.Instances {
				inst, ok := toInstance(region, raw)
				if !ok || !sel.Matches(inst) || seen[inst.ID] {
					continue
				}
				seen[inst.ID] = true
				out = append(out, inst)
			}
		}
	}
	return out, nil
}

// page fetches one page, bounded in time like any other call.
func (p *Provider) page(ctx context.Context, pages *ec2.DescribeInstancesPaginator) (*ec2.DescribeInstancesOutput, error) {
	callCtx, cancel := p.call(ctx)
	defer cancel()
	return pages.NextPage(callCtx)
}
