// SPDX-License-Identifier: Apache-2.0

package aws

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/servicequotas"
	sqtypes "github.com/aws/aws-sdk-go-v2/service/servicequotas/types"
	"github.com/aws/smithy-go"
	"golang.org/x/sync/errgroup"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// The IAM permissions Capacity needs, named in the warning a denial gives.
const (
	permGetServiceQuota   = "servicequotas:GetServiceQuota"
	permDescribeOfferings = "ec2:DescribeInstanceTypeOfferings"
)

// ec2ServiceCode is EC2's code in Service Quotas.
const ec2ServiceCode = "ec2"

const (
	// offeringTypesPerCall bounds the values of one instance-type filter.
	offeringTypesPerCall = 100
	// offeringsPageSize is DescribeInstanceTypeOfferings' largest page.
	offeringsPageSize = 1000
)

// Capacity reads, in every configured region, the limit of each quota the
// catalog's offers there count against (Service Quotas' GetServiceQuota,
// one call a quota) and which of the catalog's types each zone offers
// (DescribeInstanceTypeOfferings). Service Quotas gives limits only, so
// every quota's Used is planner.UsedUnknown. What cannot be read is left
// out with a warning, one for each permission denied however many regions
// and quotas it hid; only a cancelled ctx fails the call.
func (p *Provider) Capacity(ctx context.Context) (providers.Capacity, error) {
	regions := p.regions()
	reads := make([]capacityRead, len(regions))
	// Not errgroup.WithContext: one region's failure is a warning, and must
	// not cut the others short.
	var g errgroup.Group
	g.SetLimit(p.opts.Concurrency)
	for i, region := range regions {
		g.Go(func() error {
			p.readQuotas(ctx, region, &reads[i])
			p.readOfferings(ctx, region, &reads[i])
			return nil
		})
	}
	g.Wait()
	if err := ctx.Err(); err != nil {
		return providers.Capacity{}, fmt.Errorf("reading aws quotas and zone offerings, %w", err)
	}
	return merge(reads), nil
}

// capacityRead is what one region gave.
type capacityRead struct {
	quotas    []planner.Quota
	offerings []providers.ZoneOffering
	warnings  []string
	denials   []denial
}

// denial is a read refused for want of a permission.
type denial struct {
	permission string
	// what was left out, and where: "quotas L-417A185B, L-DB2E81BA in
	// us-east-1".
	what  string
	cause string
}

func (r *capacityRead) deny(permission, what, region string, err error) {
	r.denials = append(r.denials, denial{permission: permission, what: what + " in " + region, cause: describe(err)})
}

func (r *capacityRead) warn(format string, args ...any) {
	r.warnings = append(r.warnings, fmt.Sprintf("aws: "+format, args...))
}

// merge puts the regions' reads together, sorted, a denied permission
// warned about once with everything it hid.
func merge(reads []capacityRead) providers.Capacity {
	var out providers.Capacity
	var permissions []string
	hidden := map[string][]string{}
	cause := map[string]string{}
	for _, r := range reads {
		out.Quotas = append(out.Quotas, r.quotas...)
		out.Offerings = append(out.Offerings, r.offerings...)
		out.Warnings = append(out.Warnings, r.warnings...)
		for _, d := range r.denials {
			if _, seen := hidden[d.permission]; !seen {
				permissions = append(permissions, d.permission)
				cause[d.permission] = d.cause
			}
			hidden[d.permission] = append(hidden[d.permission], d.what)
		}
	}
	for _, perm := range permissions {
		out.Warnings = append(out.Warnings, fmt.Sprintf("aws: the credentials lack %s (%s), so these are left out: %s",
			perm, cause[perm], strings.Join(hidden[perm], "; ")))
	}
	slices.SortFunc(out.Quotas, func(a, b planner.Quota) int {
		return cmp.Or(cmp.Compare(a.Region, b.Region), cmp.Compare(a.Name, b.Name))
	})
	slices.SortFunc(out.Offerings, func(a, b providers.ZoneOffering) int { return cmp.Compare(a.Zone, b.Zone) })
	return out
}

// regions are the configured regions, each once, in order.
func (p *Provider) regions() []string {
	var out []string
	for _, r := range p.cfg.Regions {
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

// quotasIn names the quotas the catalog's offers in a region count
// against, sorted, with the catalog's description of each.
func (p *Provider) quotasIn(region string) []catalog.Quota {
	var out []catalog.Quota
	for _, o := range p.cat.Offers {
		if o.Cloud != catalog.AWS || o.Region != region {
			continue
		}
		for _, u := range p.cat.UsesOf(catalog.AWS, o.InstanceType, o.Market) {
			if slices.ContainsFunc(out, func(q catalog.Quota) bool { return q.Name == u.Quota }) {
				continue
			}
			q, ok := p.cat.QuotaNamed(catalog.AWS, u.Quota)
			if !ok {
				// A use of a quota the catalog does not describe: AWS counts
				// its EC2 quotas in vCPUs, per region.
				q = catalog.Quota{Cloud: catalog.AWS, Name: u.Quota, Scope: catalog.RegionScope, Unit: catalog.VCPUs}
			}
			out = append(out, q)
		}
	}
	slices.SortFunc(out, func(a, b catalog.Quota) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

func quotaLabel(q catalog.Quota) string {
	if q.Description == "" {
		return q.Name
	}
	return fmt.Sprintf("%s (%s)", q.Name, q.Description)
}

// readQuotas reads the region's quotas. EC2's quotas all apply per
// region (catalog.UsesFor), so each region reads its own.
func (p *Provider) readQuotas(ctx context.Context, region string, read *capacityRead) {
	var denied []string
	var deniedBy error
	for _, q := range p.quotasIn(region) {
		if ctx.Err() != nil {
			return
		}
		limit, why, err := p.readQuota(ctx, region, q)
		switch {
		case err != nil && isDenied(err):
			denied, deniedBy = append(denied, q.Name), err
			continue
		case why != "":
			read.warn("quota %s in %s left out: %s", quotaLabel(q), region, why)
			continue
		}
		read.quotas = append(read.quotas, planner.Quota{
			Cloud: catalog.AWS, Region: region, Name: q.Name, Description: q.Description,
			Unit: q.Unit, Limit: limit, Used: planner.UsedUnknown,
		})
	}
	if len(denied) > 0 {
		read.deny(permGetServiceQuota, "quotas "+strings.Join(denied, ", "), region, deniedBy)
	}
}

// readQuota returns a quota's limit, or why it has none to give and, when
// the call failed, its error.
func (p *Provider) readQuota(ctx context.Context, region string, q catalog.Quota) (limit int64, why string, err error) {
	callCtx, cancel := p.call(ctx)
	defer cancel()
	out, err := p.quotas[region].GetServiceQuota(callCtx, &servicequotas.GetServiceQuotaInput{
		ServiceCode: awssdk.String(ec2ServiceCode),
		QuotaCode:   awssdk.String(q.Name),
	})
	switch {
	case err == nil:
		limit, why := quotaLimit(out.Quota, q)
		return limit, why, nil
	case errorCode(err) == "NoSuchResourceException":
		return 0, fmt.Sprintf("Service Quotas has no applied value for it (%s)", describe(err)), err
	}
	return 0, fmt.Sprintf("reading it failed (%s)", describe(err)), err
}

// quotaLimit checks what Service Quotas answered for a quota and returns
// its limit, or why it is not one. EC2's vCPU quotas come with the unit
// "None" and a usage metric whose Resource dimension is "vCPU".
func quotaLimit(got *sqtypes.ServiceQuota, want catalog.Quota) (int64, string) {
	if got == nil {
		return 0, "Service Quotas answered without a quota"
	}
	if code := awssdk.ToString(got.QuotaCode); code != "" && code != want.Name {
		return 0, fmt.Sprintf("Service Quotas answered for quota %q instead", code)
	}
	if r := got.ErrorReason; r != nil {
		return 0, fmt.Sprintf("Service Quotas could not read its value (%s: %s)", r.ErrorCode, awssdk.ToString(r.ErrorMessage))
	}
	if got.Value == nil {
		return 0, "Service Quotas answered without a value"
	}
	v := *got.Value
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return 0, fmt.Sprintf("Service Quotas answered a value of %v", v)
	case v < 0:
		return 0, fmt.Sprintf("Service Quotas answered a negative value, %v", v)
	case v != math.Trunc(v):
		return 0, fmt.Sprintf("Service Quotas answered %v, not a whole number of %s", v, want.Unit)
	case v >= 1<<53:
		return 0, fmt.Sprintf("Service Quotas answered %v, too large to be a limit", v)
	}
	if reason := unitMismatch(got, want.Unit); reason != "" {
		return 0, reason
	}
	return int64(v), ""
}

// unitMismatch says why a quota's answer does not count what the catalog
// says it counts, or "". An answer that names no unit ("None") or a bare
// count is taken at the catalog's word; one that names another unit, or a
// usage metric of another resource, is not.
func unitMismatch(got *sqtypes.ServiceQuota, want catalog.QuotaUnit) string {
	one := strings.TrimSuffix(string(want), "s") // "vCPU", "GPU"
	unit := awssdk.ToString(got.Unit)
	switch {
	case strings.EqualFold(unit, "None"), strings.EqualFold(unit, "Count"),
		strings.EqualFold(unit, one), strings.EqualFold(unit, string(want)):
	default:
		return fmt.Sprintf("Service Quotas counts it in %q, not in %s", unit, want)
	}
	if m := got.UsageMetric; m != nil {
		if resource, ok := m.MetricDimensions["Resource"]; ok && !strings.EqualFold(resource, one) {
			return fmt.Sprintf("Service Quotas measures its use in %q, not in %s", resource, want)
		}
	}
	return ""
}

// readOfferings reads which of the catalog's types each of the region's
// zones offers. An answer covers every zone of the region, so a catalog
// zone it names nothing for offers none of them; an answer that could not
// be read in full leaves every zone of the region out, since a partial
// one cannot say what a zone lacks.
func (p *Provider) readOfferings(ctx context.Context, region string, read *capacityRead) {
	r, ok := p.cat.Region(catalog.AWS, region)
	if !ok {
		return
	}
	var wanted []string
	for _, o := range p.cat.Offers {
		if o.Cloud == catalog.AWS && o.Region == region && !slices.Contains(wanted, o.InstanceType) {
			wanted = append(wanted, o.InstanceType)
		}
	}
	if len(wanted) == 0 {
		return
	}
	slices.Sort(wanted)

	offered := map[string][]string{} // by zone
	strays := map[string]bool{}
	for chunk := range slices.Chunk(wanted, offeringTypesPerCall) {
		pages := ec2.NewDescribeInstanceTypeOfferingsPaginator(p.clients[region], &ec2.DescribeInstanceTypeOfferingsInput{
			LocationType: types.LocationTypeAvailabilityZone,
			Filters:      []types.Filter{{Name: awssdk.String("instance-type"), Values: chunk}},
			MaxResults:   awssdk.Int32(offeringsPageSize),
		})
		for pages.HasMorePages() {
			page, err := p.offeringsPage(ctx, pages)
			switch {
			case err != nil && ctx.Err() != nil:
				return
			case err != nil && isDenied(err):
				read.deny(permDescribeOfferings, "zone offerings", region, err)
				return
			case err != nil:
				read.warn("zone offerings in %s left out: reading them failed (%s)", region, describe(err))
				return
			}
			for _, o := range page.InstanceTypeOfferings {
				zone, typ := awssdk.ToString(o.Location), string(o.InstanceType)
				switch {
				case o.LocationType != types.LocationTypeAvailabilityZone || !slices.Contains(r.Zones, zone):
					if !strays[zone] {
						strays[zone] = true
						read.warn("offerings in %s for %q (%s) ignored: the catalog has no such zone there", region, zone, o.LocationType)
					}
				case slices.Contains(chunk, typ) && !slices.Contains(offered[zone], typ):
					// A type not asked about says nothing of the catalog's.
					offered[zone] = append(offered[zone], typ)
				}
			}
		}
	}
	for _, zone := range r.Zones {
		zoneTypes := append([]string{}, offered[zone]...)
		slices.Sort(zoneTypes)
		read.offerings = append(read.offerings, providers.ZoneOffering{Zone: zone, Types: zoneTypes})
	}
}

// offeringsPage fetches one page, bounded in time like any other call.
func (p *Provider) offeringsPage(ctx context.Context, pages *ec2.DescribeInstanceTypeOfferingsPaginator) (*ec2.DescribeInstanceTypeOfferingsOutput, error) {
	callCtx, cancel := p.call(ctx)
	defer cancel()
	return pages.NextPage(callCtx)
}

// isDenied reports whether the API refused the credentials the permission
// for the call: Service Quotas says AccessDeniedException, EC2
// UnauthorizedOperation.
func isDenied(err error) bool {
	switch errorCode(err) {
	case "AccessDeniedException", "UnauthorizedOperation":
		return true
	}
	return false
}

// describe is an error as a warning quotes it: the cloud's code and
// message, or what kept the call from an answer.
func describe(err error) string {
	var credErr *credentialsError
	if errors.As(err, &credErr) {
		return credErr.Error()
	}
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		if msg := apiErr.ErrorMessage(); msg != "" {
			return apiErr.ErrorCode() + ": " + msg
		}
		return apiErr.ErrorCode()
	}
	return err.Error()
}
