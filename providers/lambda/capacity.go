// SPDX-License-Identifier: Apache-2.0

package lambda

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/gpufleet/gpufleet/providers"
)

// Capacity has no quotas to read: Lambda Cloud publishes none, and
// refuses a launch over the account's limits with global/quota-exceeded,
// which Create classifies. Its offerings are, for each configured region's
// one zone, the catalog's types there that /instance-types lists now; a
// type Lambda no longer lists is not offered. Whether one has room now is
// Offers' to say. A failed read leaves every zone unknown, with a
// warning; only a cancelled context fails the call.
func (p *Provider) Capacity(ctx context.Context) (providers.Capacity, error) {
	types, err := p.instanceTypes(ctx, "capacity")
	if cerr := ctx.Err(); cerr != nil {
		return providers.Capacity{}, fmt.Errorf("lambda: reading capacity, %w", cerr)
	}
	if err != nil {
		return providers.Capacity{Warnings: []string{fmt.Sprintf("lambda: instance types not read, so no region's offerings are known: %v", err)}}, nil
	}
	var out providers.Capacity
	for _, region := range p.cfg.Regions {
		if _, ok := p.cat.Region(Name, region); !ok {
			out.Warnings = append(out.Warnings, fmt.Sprintf("lambda: region %s is not in the catalog, so its offerings are not read", region))
			continue
		}
		offering := providers.ZoneOffering{Zone: p.zoneOf(region), Types: []string{}}
		for _, o := range p.cat.Offers {
			if o.Cloud == Name && o.Region == region && types.listed(o.InstanceType) && !slices.Contains(offering.Types, o.InstanceType) {
				offering.Types = append(offering.Types, o.InstanceType)
			}
		}
		slices.Sort(offering.Types)
		out.Offerings = append(out.Offerings, offering)
	}
	slices.SortFunc(out.Offerings, func(a, b providers.ZoneOffering) int { return cmp.Compare(a.Zone, b.Zone) })
	return out, nil
}
