// SPDX-License-Identifier: Apache-2.0

package aws

import (
	"context"
	"math"
	"slices"
	"strconv"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"golang.org/x/sync/errgroup"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// linuxProduct is the spot product the catalog prices.
const linuxProduct = "Linux/UNIX"

// Offers expands the catalog over the configured regions and replaces its
// spot prices with the latest EC2 reports, zone by zone, for the types it
// reports. A failed price query fails Offers: a stale spot price would
// mislead the planner more than a missing one.
func (p *Provider) Offers(ctx context.Context) ([]planner.Offer, error) {
	offers := planner.Expand(p.cat, map[string][]string{catalog.AWS: p.cfg.Regions})

	// The spot types each region's offers include, to ask EC2 about those
	// alone.
	spotTypes := map[string][]string{}
	var regions []string
	for _, o := range offers {
		if o.Market != catalog.Spot {
			continue
		}
		if _, ok := spotTypes[o.Region]; !ok {
			regions = append(regions, o.Region)
		}
		if !slices.Contains(spotTypes[o.Region], o.InstanceType) {
			spotTypes[o.Region] = append(spotTypes[o.Region], o.InstanceType)
		}
	}

	prices := make([]map[spotKey]int64, len(regions))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(p.opts.Concurrency)
	for i, region := range regions {
		g.Go(func() error {
			found, err := p.spotPrices(gctx, region, spotTypes[region])
			prices[i] = found
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}

	live := map[spotKey]int64{}
	for _, m := range prices {
		for k, v := range m {
			live[k] = v
		}
	}
	for i, o := range offers {
		if o.Market != catalog.Spot {
			continue
		}
		if price, ok := live[spotKey{o.Zone, o.InstanceType}]; ok {
			offers[i].PriceMicros = price
		}
	}
	return offers, nil
}

// spotKey is a type in a zone; zone names are unique across regions.
type spotKey struct{ zone, instanceType string }

// spotPrices returns the region's latest Linux spot price per zone and
// type, in micro-dollars per hour.
func (p *Provider) spotPrices(ctx context.Context, region string, instanceTypes []string) (map[spotKey]int64, error) {
	client, err := p.client("offers", region)
	if err != nil {
		return nil, err
	}
	in := &ec2.DescribeSpotPriceHistoryInput{
		ProductDescriptions: []string{linuxProduct},
		// From now: EC2 then answers with the price in force per zone.
		StartTime: awssdk.Time(time.Now()),
	}
	for _, t := range instanceTypes {
		in.InstanceTypes = append(in.InstanceTypes, types.InstanceType(t))
	}
	pages := ec2.NewDescribeSpotPriceHistoryPaginator(client, in)
	prices := map[spotKey]int64{}
	stamps := map[spotKey]time.Time{}
	for pages.HasMorePages() {
		callCtx, cancel := p.call(ctx)
		page, err := pages.NextPage(callCtx)
		cancel()
		if err != nil {
			return nil, classify("offers", planner.OfferKey{}, err)
		}
		for _, h := range page.SpotPriceHistory {
			micros, ok := parseDollars(awssdk.ToString(h.SpotPrice))
			if !ok {
				continue
			}
			k := spotKey{awssdk.ToString(h.AvailabilityZone), string(h.InstanceType)}
			// Several rows for one place: the latest wins.
			if at := awssdk.ToTime(h.Timestamp); stamps[k].IsZero() || at.After(stamps[k]) {
				prices[k], stamps[k] = micros, at
			}
		}
	}
	return prices, nil
}

// parseDollars reads EC2's decimal dollar prices ("30.330000").
func parseDollars(s string) (int64, bool) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f <= 0 || math.IsInf(f, 0) {
		return 0, false
	}
	return int64(math.Round(f * 1e6)), true
}
