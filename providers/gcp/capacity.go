// SPDX-License-Identifier: Apache-2.0

package gcp

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"

	"cloud.google.com/go/compute/apiv1/computepb"
	"golang.org/x/sync/errgroup"
	"google.golang.org/api/iterator"
	"google.golang.org/protobuf/proto"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// GCE reports each region's quotas on the region resource (regions.get)
// and the project-wide ones, GPUS_ALL_REGIONS among them, on the project
// (projects.get), each as {metric, limit, usage}; which machine types a
// zone has is machineTypes.list of that zone. Each is one call, and one
// call's failure costs only what it would have read.

// The reads Capacity makes, with the IAM permission each needs, which a
// denial's warning names.
var (
	readRegion       = capacityRead{what: "region quotas", permission: "compute.regions.get", op: "regions.get"}
	readProject      = capacityRead{what: "project quotas", permission: "compute.projects.get", op: "projects.get"}
	readMachineTypes = capacityRead{what: "machine types", permission: "compute.machineTypes.list", op: "machineTypes.list"}
)

type capacityRead struct{ what, permission, op string }

// Capacity reads the quotas the catalog names, in each configured region
// and project-wide, and which of the catalog's machine types each catalog
// zone of those regions offers. What cannot be read is left out with a
// warning; only a cancelled context fails the call.
func (p *Provider) Capacity(ctx context.Context) (providers.Capacity, error) {
	var (
		mu    sync.Mutex
		parts []capacityPart
	)
	add := func(part capacityPart) {
		mu.Lock()
		defer mu.Unlock()
		parts = append(parts, part)
	}
	var g errgroup.Group
	g.SetLimit(p.opts.Concurrency)
	g.Go(func() error {
		add(p.projectQuotas(ctx))
		return nil
	})
	for _, region := range p.cfg.Regions {
		g.Go(func() error {
			add(p.regionQuotas(ctx, region))
			return nil
		})
	}
	zones, part := p.catalogZones()
	add(part)
	for _, zone := range zones {
		g.Go(func() error {
			add(p.zoneOffering(ctx, zone))
			return nil
		})
	}
	_ = g.Wait() // every part reports its own failure
	if err := ctx.Err(); err != nil {
		return providers.Capacity{}, fmt.Errorf("gcp: reading capacity, %w", err)
	}
	return merge(parts), nil
}

// capacityPart is what one read found.
type capacityPart struct {
	quotas    []planner.Quota
	offerings []providers.ZoneOffering
	warnings  []string
	// denial, when set, is a read refused for want of a permission; the
	// denials of one permission make one warning.
	denial *denial
}

type denial struct {
	read    capacityRead
	where   string
	message string
}

// merge puts the parts together, sorted, with one warning per denied
// permission listing everywhere it was denied.
func merge(parts []capacityPart) providers.Capacity {
	var out providers.Capacity
	denials := map[capacityRead][]denial{}
	for _, part := range parts {
		out.Quotas = append(out.Quotas, part.quotas...)
		out.Offerings = append(out.Offerings, part.offerings...)
		out.Warnings = append(out.Warnings, part.warnings...)
		if d := part.denial; d != nil {
			denials[d.read] = append(denials[d.read], *d)
		}
	}
	for read, ds := range denials {
		slices.SortFunc(ds, func(a, b denial) int { return cmp.Compare(a.where, b.where) })
		var where []string
		for _, d := range ds {
			where = append(where, d.where)
		}
		out.Warnings = append(out.Warnings, fmt.Sprintf("gcp: %s not read for %s: permission %s denied (%s)",
			read.what, strings.Join(where, ", "), read.permission, ds[0].message))
	}
	slices.SortFunc(out.Quotas, func(a, b planner.Quota) int {
		return cmp.Or(cmp.Compare(a.Region, b.Region), cmp.Compare(a.Name, b.Name))
	})
	slices.SortFunc(out.Offerings, func(a, b providers.ZoneOffering) int { return cmp.Compare(a.Zone, b.Zone) })
	slices.Sort(out.Warnings)
	return out
}

// failed is the part of a read that failed: a denial, or a warning saying
// why.
func failed(read capacityRead, where string, err error) capacityPart {
	e := classify(read.op, err)
	if e.Kind == providers.KindAuth {
		return capacityPart{denial: &denial{read: read, where: where, message: cmp.Or(e.Message, err.Error())}}
	}
	why := fmt.Sprintf("%s: %s", e.Kind, cmp.Or(e.Message, err.Error()))
	if e.Code != "" {
		why += " (" + e.Code + ")"
	}
	return capacityPart{warnings: []string{fmt.Sprintf("gcp: %s not read for %s: %s", read.what, where, why)}}
}

// regionQuotas reads a region's quotas.
func (p *Provider) regionQuotas(ctx context.Context, region string) capacityPart {
	r, err := p.regionsAPI.Get(ctx, &computepb.GetRegionRequest{Project: p.cfg.Project, Region: region}, p.callOptions()...)
	if err != nil {
		return failed(readRegion, region, err)
	}
	part := p.quotas(region, catalog.RegionScope, r.GetQuotas())
	if w := r.GetQuotaStatusWarning(); w != nil {
		// GCE could not fetch the region's quotas: those missing are not
		// known, those listed still hold.
		part.warnings = append(part.warnings, fmt.Sprintf("gcp: region quotas of %s may be incomplete: %s: %s", region, w.GetCode(), w.GetMessage()))
	}
	return part
}

// projectQuotas reads the project-wide quotas, which apply in every region.
func (p *Provider) projectQuotas(ctx context.Context) capacityPart {
	project, err := p.projects.Get(ctx, &computepb.GetProjectRequest{Project: p.cfg.Project}, p.callOptions()...)
	if err != nil {
		return failed(readProject, p.cfg.Project, err)
	}
	return p.quotas("", catalog.GlobalScope, project.GetQuotas())
}

// quotas keeps, of the quotas GCE listed for a region ("" for the
// project), those the catalog names with that scope, and leaves out with a
// warning any whose numbers cannot be read. Other metrics (CPUS,
// SSD_TOTAL_GB, …) are not gpufleet's to plan with and are skipped.
func (p *Provider) quotas(region string, scope catalog.QuotaScope, listed []*computepb.Quota) capacityPart {
	var part capacityPart
	where := "region " + region
	if region == "" {
		where = "project " + p.cfg.Project
	}
	byMetric := map[string][]*computepb.Quota{}
	for _, q := range listed {
		byMetric[q.GetMetric()] = append(byMetric[q.GetMetric()], q)
	}
	for metric, listed := range byMetric {
		known, ok := p.cat.QuotaNamed(Name, metric)
		if !ok || known.Scope != scope {
			continue
		}
		leftOut := func(why string, args ...any) {
			part.warnings = append(part.warnings, fmt.Sprintf("gcp: quota %s of %s left out: %s", metric, where, fmt.Sprintf(why, args...)))
		}
		if len(listed) > 1 {
			// Which one holds is anyone's guess.
			leftOut("listed %d times", len(listed))
			continue
		}
		q := listed[0]
		if q.Limit == nil {
			leftOut("no limit given")
			continue
		}
		limit, bad := count(q.GetLimit())
		if bad != "" {
			leftOut("limit %v %s", q.GetLimit(), bad)
			continue
		}
		// A proto3 JSON front may leave out a zero; with no usage at all,
		// gpufleet's own nodes are taken to be all of it.
		used := int64(planner.UsedUnknown)
		if q.Usage != nil {
			if used, bad = count(q.GetUsage()); bad != "" {
				leftOut("usage %v %s", q.GetUsage(), bad)
				continue
			}
		}
		part.quotas = append(part.quotas, planner.Quota{
			Cloud:       Name,
			Region:      region,
			Name:        known.Name,
			Description: known.Description,
			Unit:        known.Unit,
			Limit:       limit,
			Used:        used,
		})
	}
	return part
}

// count reads one of GCE's quota numbers, doubles on the wire, as a count
// of GPUs, or says why it is none: it must be whole, not negative, and
// within int64.
func count(v float64) (int64, string) {
	switch {
	case math.IsNaN(v):
		return 0, "is not a number"
	case v < 0:
		return 0, "is negative"
	case math.IsInf(v, 0) || v >= math.MaxInt64:
		return 0, "is too large to be a count"
	case v != math.Trunc(v):
		return 0, "is not a whole number"
	}
	return int64(v), ""
}

// catalogZones are the catalog's zones of the configured regions, each
// with the instance types the catalog prices there. A configured region
// the catalog does not have has no zones to read.
func (p *Provider) catalogZones() ([]catalogZone, capacityPart) {
	var part capacityPart
	var zones []catalogZone
	for _, name := range p.cfg.Regions {
		region, ok := p.cat.Region(Name, name)
		if !ok {
			part.warnings = append(part.warnings, fmt.Sprintf("gcp: region %s is not in the catalog, so no zone of it is read", name))
			continue
		}
		for _, zone := range region.Zones {
			types := map[string]bool{}
			for _, o := range p.cat.Offers {
				if o.Cloud == Name && o.Region == name && (o.Zone == "" || o.Zone == zone) {
					types[o.InstanceType] = true
				}
			}
			zones = append(zones, catalogZone{name: zone, types: types})
		}
	}
	return zones, part
}

type catalogZone struct {
	name  string
	types map[string]bool
}

// zoneOffering lists a zone's machine types, giving up when ctx ends. The
// SDK's list methods (compute v1.75.0) do not put the context on their
// HTTP requests, so a page that hangs would otherwise hold Capacity past
// its deadline. The abandoned list ends with the request it is making: it
// asks for no page, and retries nothing, once ctx has ended; Close waits
// for it, as the SDK's clients must not be closed under a request.
func (p *Provider) zoneOffering(ctx context.Context, zone catalogZone) capacityPart {
	listed := make(chan capacityPart, 1)
	p.lists.Add(1)
	go func() {
		defer p.lists.Done()
		listed <- p.listZone(ctx, zone)
	}()
	select {
	case part := <-listed:
		return part
	case <-ctx.Done():
		return failed(readMachineTypes, zone.name, ctx.Err())
	}
}

// listZone lists a zone's machine types and keeps the catalog's. A list
// that fails on any page leaves the whole zone unknown: a partial list
// would make the types it missed look unoffered.
func (p *Provider) listZone(ctx context.Context, zone catalogZone) capacityPart {
	var part capacityPart
	it := p.machineTypes.List(ctx, &computepb.ListMachineTypesRequest{
		Project:    p.cfg.Project,
		Zone:       zone.name,
		MaxResults: proto.Uint32(pageSize),
	}, p.callOptions()...)
	offering := providers.ZoneOffering{Zone: zone.name, Types: []string{}}
	for {
		if err := ctx.Err(); err != nil {
			return failed(readMachineTypes, zone.name, err)
		}
		mt, err := it.Next()
		if err == iterator.Done {
			break
		}
		if err != nil {
			return failed(readMachineTypes, zone.name, err)
		}
		name := mt.GetName()
		if in := lastSegment(mt.GetZone()); in != "" && in != zone.name {
			part.warnings = append(part.warnings, fmt.Sprintf("gcp: machine type %s left out of %s: GCE listed it for zone %s", name, zone.name, in))
			continue
		}
		if zone.types[name] && !slices.Contains(offering.Types, name) {
			offering.Types = append(offering.Types, name)
		}
	}
	slices.Sort(offering.Types)
	part.offerings = []providers.ZoneOffering{offering}
	return part
}
