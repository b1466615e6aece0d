// SPDX-License-Identifier: Apache-2.0

package azure

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// The RBAC actions Capacity needs (the Reader role has both); a denial's
// warning names the one that was missing.
const (
	permUsages = "Microsoft.Compute/locations/usages/read"
	permSKUs   = "Microsoft.Compute/skus/read"
)

// maxPages bounds one listing, so that an API that keeps sending next
// links cannot keep Capacity reading forever. Compute sends a location's
// usages in one page and its SKUs in a few.
const maxPages = 100

// Capacity reads, in each configured region, the usages of the quotas the
// catalog's sizes there count against (Usage.List) and which of those
// sizes each zone offers (Resource SKUs, filtered to the location).
// Regions are read one after another (see Options.Concurrency).
func (p *Provider) Capacity(ctx context.Context) (providers.Capacity, error) {
	read := &capacityRead{warned: map[string]bool{}}
	for _, name := range p.regions {
		if err := ctx.Err(); err != nil {
			return providers.Capacity{}, fmt.Errorf("azure: reading capacity, %w", err)
		}
		region, ok := p.cat.Region(catalog.Azure, name)
		if !ok {
			// No size of the catalog is there, so nothing is planned there.
			continue
		}
		if err := p.readQuotas(ctx, region, read); err != nil {
			return providers.Capacity{}, err
		}
		if err := p.readOfferings(ctx, region, read); err != nil {
			return providers.Capacity{}, err
		}
	}
	read.reportFailures()
	c := read.Capacity
	slices.SortFunc(c.Quotas, func(a, b planner.Quota) int {
		return cmp.Or(cmp.Compare(a.Region, b.Region), cmp.Compare(a.Name, b.Name))
	})
	slices.SortFunc(c.Offerings, func(a, b providers.ZoneOffering) int { return cmp.Compare(a.Zone, b.Zone) })
	return c, nil
}

// capacityRead gathers what Capacity read and why the rest was not.
type capacityRead struct {
	providers.Capacity
	// failures are the listings that failed, in the order met, each
	// reported once for every region it failed in alike: a denied role or
	// a refused credential is the same in every region.
	failures []*failure
	warned   map[string]bool
}

type failure struct {
	what, why string
	regions   []string
}

func (r *capacityRead) warn(format string, args ...any) {
	w := fmt.Sprintf("azure: "+format, args...)
	if !r.warned[w] {
		r.warned[w] = true
		r.Warnings = append(r.Warnings, w)
	}
}

// failed records why a listing was not read, naming the permission it
// needs when ARM denied it.
func (r *capacityRead) failed(what, permission, region string, err error) {
	why := describe(err)
	var re *azcore.ResponseError
	if errors.As(err, &re) && (containsFold(deniedCodes, re.ErrorCode) || re.StatusCode == http.StatusForbidden && re.ErrorCode == "") {
		why = fmt.Sprintf("the credential lacks permission %s (%s)", permission, cmp.Or(re.ErrorCode, "HTTP 403"))
	}
	for _, f := range r.failures {
		if f.what == what && f.why == why {
			f.regions = append(f.regions, region)
			return
		}
	}
	r.failures = append(r.failures, &failure{what: what, why: why, regions: []string{region}})
}

// deniedCodes are ARM's answers to a principal without the role a call
// needs. Other refusals (a policy, a token not accepted) are reported as
// they come.
var deniedCodes = []string{"AuthorizationFailed", "LinkedAuthorizationFailed"}

func (r *capacityRead) reportFailures() {
	for _, f := range r.failures {
		r.warn("%s in %s not read: %s", f.what, strings.Join(f.regions, ", "), f.why)
	}
}

// describe says why a call failed, as ARM put it.
func describe(err error) string {
	e := classify("capacity", planner.OfferKey{}, err)
	var pe *providers.Error
	if !errors.As(e, &pe) || pe.Message == "" {
		return err.Error()
	}
	if pe.Code != "" {
		return fmt.Sprintf("%s: %s (%s)", pe.Kind, pe.Message, pe.Code)
	}
	return fmt.Sprintf("%s: %s", pe.Kind, pe.Message)
}

// listAll reads every page of a listing. Only the cancelled context's
// error tells the caller to stop; every other is the listing's.
func listAll[P, T any](ctx context.Context, pager *runtime.Pager[P], items func(P) []*T) ([]*T, error) {
	var out []*T
	for n := 0; pager.More(); n++ {
		if n == maxPages {
			return nil, fmt.Errorf("the listing ran past %d pages", maxPages)
		}
		page, err := pager.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		out = append(out, items(page)...)
	}
	return out, nil
}

// readQuotas reads a region's usages of the quotas the catalog's sizes
// there count against. It fails only when ctx is done.
func (p *Provider) readQuotas(ctx context.Context, region catalog.Region, read *capacityRead) error {
	wanted := p.quotasIn(region.Name)
	if len(wanted) == 0 {
		return nil
	}
	usages, err := listAll(ctx, p.usages.NewListPager(region.Name, nil), func(page armcompute.UsageClientListResponse) []*armcompute.Usage {
		return page.Value
	})
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("azure: reading quotas in %s, %w", region.Name, ctx.Err())
		}
		read.failed("quotas", permUsages, region.Name, err)
		return nil
	}
	found := map[string]planner.Quota{}
	unreadable := map[string]bool{}
	for _, u := range usages {
		if u == nil || u.Name == nil {
			continue
		}
		// A usage the catalog has no size counting against is not needed.
		q, ok := wanted[strings.ToLower(deref(u.Name.Value))]
		if !ok || unreadable[q.Name] {
			continue
		}
		quota, why := quotaOf(u, q, region.Name)
		if prev, dup := found[q.Name]; why == "" && dup && prev != quota {
			why = fmt.Sprintf("listed twice, with limit %d and use %d, then limit %d and use %d", prev.Limit, prev.Used, quota.Limit, quota.Used)
		}
		if why != "" {
			read.warn("quota %s in %s not read: %s; it is not planned against", q.Name, region.Name, why)
			unreadable[q.Name] = true
			delete(found, q.Name)
			continue
		}
		found[q.Name] = quota
	}
	for _, key := range slices.Sorted(maps.Keys(wanted)) {
		q := wanted[key]
		if quota, ok := found[q.Name]; ok {
			read.Quotas = append(read.Quotas, quota)
		} else if !unreadable[q.Name] {
			read.warn("quota %s in %s not read: Compute lists no usage of that name; it is not planned against", q.Name, region.Name)
		}
	}
	return nil
}

// quotasIn is the catalog's quotas its sizes in a region count against, by
// their names in lower case: Compute's usage names are case-insensitive.
func (p *Provider) quotasIn(region string) map[string]catalog.Quota {
	out := map[string]catalog.Quota{}
	for _, o := range p.cat.Offers {
		if o.Cloud != catalog.Azure || o.Region != region {
			continue
		}
		for _, u := range p.cat.UsesOf(catalog.Azure, o.InstanceType, o.Market) {
			if q, ok := p.cat.QuotaNamed(catalog.Azure, u.Quota); ok {
				out[strings.ToLower(q.Name)] = q
			}
		}
	}
	return out
}

// quotaOf reads one usage of a quota the catalog knows, or says why it
// cannot.
func quotaOf(u *armcompute.Usage, q catalog.Quota, region string) (planner.Quota, string) {
	switch {
	case u.Unit == nil:
		return planner.Quota{}, "it has no unit"
	case !strings.EqualFold(*u.Unit, "Count"):
		return planner.Quota{}, fmt.Sprintf("its unit is %q, not Count", *u.Unit)
	case u.Limit == nil:
		return planner.Quota{}, "it has no limit"
	case *u.Limit < 0:
		return planner.Quota{}, fmt.Sprintf("its limit %d is negative", *u.Limit)
	case u.CurrentValue == nil:
		return planner.Quota{}, "it has no current value"
	case *u.CurrentValue < 0:
		return planner.Quota{}, fmt.Sprintf("its current value %d is negative", *u.CurrentValue)
	}
	return planner.Quota{
		Cloud:       catalog.Azure,
		Region:      region,
		Name:        q.Name,
		Description: q.Description,
		Unit:        q.Unit,
		Limit:       *u.Limit,
		Used:        int64(*u.CurrentValue),
	}, ""
}

// readOfferings reads which of the catalog's sizes in a region each of its
// zones offers. A SKU whose restrictions cannot be read leaves every zone
// of the region out, since which zones it spares is not known. It fails
// only when ctx is done.
func (p *Provider) readOfferings(ctx context.Context, region catalog.Region, read *capacityRead) error {
	sizes := p.sizesIn(region.Name)
	if len(sizes) == 0 || len(region.Zones) == 0 {
		return nil
	}
	pager := p.skus.NewListPager(&armcompute.ResourceSKUsClientListOptions{Filter: to.Ptr(fmt.Sprintf("location eq '%s'", region.Name))})
	skus, err := listAll(ctx, pager, func(page armcompute.ResourceSKUsClientListResponse) []*armcompute.ResourceSKU {
		return page.Value
	})
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("azure: reading zone offerings in %s, %w", region.Name, ctx.Err())
		}
		read.failed("zone offerings", permSKUs, region.Name, err)
		return nil
	}
	// zonesOf is where each size is offered; a size listed twice is
	// offered only where both entries say so.
	zonesOf := map[string][]string{}
	for _, sku := range skus {
		if sku == nil || !strings.EqualFold(deref(sku.ResourceType), "virtualMachines") {
			continue
		}
		size, ok := sizes[strings.ToLower(deref(sku.Name))]
		if !ok {
			continue
		}
		zones, why := skuZones(sku, region, read)
		if why != "" {
			read.warn("zone offerings in %s not read: SKU %s %s", region.Name, size, why)
			return nil
		}
		if prev, dup := zonesOf[size]; dup {
			zones = slices.DeleteFunc(zones, func(z string) bool { return !slices.Contains(prev, z) })
		}
		zonesOf[size] = zones
	}
	for _, zone := range region.Zones {
		offering := providers.ZoneOffering{Zone: zone, Types: []string{}}
		for size, zones := range zonesOf {
			if slices.Contains(zones, zone) {
				offering.Types = append(offering.Types, size)
			}
		}
		slices.Sort(offering.Types)
		read.Offerings = append(read.Offerings, offering)
	}
	return nil
}

// sizesIn is the catalog's sizes in a region, by their names in lower
// case: ARM's are case-insensitive.
func (p *Provider) sizesIn(region string) map[string]string {
	out := map[string]string{}
	for _, o := range p.cat.Offers {
		if o.Cloud == catalog.Azure && o.Region == region {
			out[strings.ToLower(o.InstanceType)] = o.InstanceType
		}
	}
	return out
}

// skuZones reads the catalog zones of a region a SKU may be deployed in:
// those its location lists, less those its restrictions take away. It
// says why when the restrictions cannot be read. A zone the catalog does
// not have is ignored, with a warning.
func skuZones(sku *armcompute.ResourceSKU, region catalog.Region, read *capacityRead) ([]string, string) {
	var zones []string
	for _, info := range sku.LocationInfo {
		if info == nil || normalizeLocation(deref(info.Location)) != region.Name {
			continue
		}
		for _, n := range info.Zones {
			if z, ok := catalogZone(region, deref(n), read); ok && !slices.Contains(zones, z) {
				zones = append(zones, z)
			}
		}
	}
	for _, r := range sku.Restrictions {
		if r == nil {
			continue
		}
		var where []*string
		if r.RestrictionInfo != nil {
			where = r.RestrictionInfo.Locations
		}
		if len(where) == 0 {
			where = r.Values
		}
		if len(where) == 0 {
			return nil, fmt.Sprintf("has a %s restriction that names no location", deref(r.Type))
		}
		if !slices.ContainsFunc(where, func(l *string) bool { return normalizeLocation(deref(l)) == region.Name }) {
			continue
		}
		switch deref(r.Type) {
		case armcompute.ResourceSKURestrictionsTypeLocation:
			return nil, ""
		case armcompute.ResourceSKURestrictionsTypeZone:
			if r.RestrictionInfo == nil || len(r.RestrictionInfo.Zones) == 0 {
				return nil, "has a Zone restriction that names no zone"
			}
			for _, n := range r.RestrictionInfo.Zones {
				if z, ok := catalogZone(region, deref(n), read); ok {
					zones = slices.DeleteFunc(zones, func(have string) bool { return have == z })
				}
			}
		default:
			return nil, fmt.Sprintf("has a restriction of unknown type %q", deref(r.Type))
		}
	}
	return zones, ""
}

// catalogZone is the catalog's name for ARM's zone n of a region, as
// instanceOf names a VM's zone.
func catalogZone(region catalog.Region, n string, read *capacityRead) (string, bool) {
	z := region.Name + "-" + n
	if n == "" || !slices.Contains(region.Zones, z) {
		read.warn("Compute names zone %q of %s, which the catalog does not have; ignored", n, region.Name)
		return "", false
	}
	return z, true
}
