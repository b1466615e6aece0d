// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"context"
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
)

// instrumented is a provider that counts its calls by operation and
// outcome. Wrapping the interface, rather than each cloud's SDK, counts
// every cloud the same way, emulator included.
type instrumented struct {
	inner    providers.Provider
	requests *prometheus.CounterVec
}

var _ providers.Provider = (*instrumented)(nil)

// Instrument wraps each provider so its calls are counted in
// gpufleet_cloud_api_requests_total. A wrapped provider has the optional
// interfaces its cloud's provider has — batch launches, placement groups,
// adoption — and no others, so a run under serve launches, places and
// adopts as one from the command line does.
func (m *Metrics) Instrument(ps map[string]providers.Provider) map[string]providers.Provider {
	out := make(map[string]providers.Provider, len(ps))
	for cloud, p := range ps {
		out[cloud] = instrument(&instrumented{inner: p, requests: m.apiRequests})
	}
	return out
}

// instrument gives p the optional interfaces of the provider it wraps.
func instrument(p *instrumented) providers.Provider {
	b, batch := p.inner.(providers.BatchCreator)
	g, groups := p.inner.(providers.PlacementGrouper)
	a, adopts := p.inner.(providers.Adopter)
	bc, gc, ac := batchCalls{p, b}, groupCalls{p, g}, adoptCalls{p, a}
	switch {
	case batch && groups && adopts:
		return struct {
			*instrumented
			batchCalls
			groupCalls
			adoptCalls
		}{p, bc, gc, ac}
	case batch && groups:
		return struct {
			*instrumented
			batchCalls
			groupCalls
		}{p, bc, gc}
	case batch && adopts:
		return struct {
			*instrumented
			batchCalls
			adoptCalls
		}{p, bc, ac}
	case groups && adopts:
		return struct {
			*instrumented
			groupCalls
			adoptCalls
		}{p, gc, ac}
	case batch:
		return struct {
			*instrumented
			batchCalls
		}{p, bc}
	case groups:
		return struct {
			*instrumented
			groupCalls
		}{p, gc}
	case adopts:
		return struct {
			*instrumented
			adoptCalls
		}{p, ac}
	}
	return p
}

// batchCalls counts a BatchCreator's calls.
type batchCalls struct {
	p     *instrumented
	inner providers.BatchCreator
}

func (c batchCalls) CreateBatch(ctx context.Context, req providers.BatchRequest) ([]providers.Instance, error) {
	instances, err := c.inner.CreateBatch(ctx, req)
	c.p.count("create_batch", err)
	return instances, err
}

// groupCalls counts a PlacementGrouper's calls.
type groupCalls struct {
	p     *instrumented
	inner providers.PlacementGrouper
}

func (c groupCalls) EnsurePlacementGroup(ctx context.Context, g providers.PlacementGroup) error {
	err := c.inner.EnsurePlacementGroup(ctx, g)
	c.p.count("ensure_placement_group", err)
	return err
}

func (c groupCalls) PlacementGroups(ctx context.Context) ([]providers.PlacementGroup, error) {
	groups, err := c.inner.PlacementGroups(ctx)
	c.p.count("placement_groups", err)
	return groups, err
}

func (c groupCalls) DeletePlacementGroup(ctx context.Context, g providers.PlacementGroup) error {
	err := c.inner.DeletePlacementGroup(ctx, g)
	c.p.count("delete_placement_group", err)
	return err
}

// adoptCalls counts an Adopter's calls.
type adoptCalls struct {
	p     *instrumented
	inner providers.Adopter
}

func (c adoptCalls) Unowned(ctx context.Context, sel providers.UnownedSelector) ([]providers.Unowned, error) {
	unowned, err := c.inner.Unowned(ctx, sel)
	c.p.count("unowned", err)
	return unowned, err
}

func (c adoptCalls) Adopt(ctx context.Context, u providers.Unowned, req providers.CreateRequest) (providers.Instance, error) {
	inst, err := c.inner.Adopt(ctx, u, req)
	c.p.count("adopt", err)
	return inst, err
}

func (p *instrumented) Name() string { return p.inner.Name() }

func (p *instrumented) Offers(ctx context.Context) ([]planner.Offer, error) {
	offers, err := p.inner.Offers(ctx)
	p.count("offers", err)
	return offers, err
}

func (p *instrumented) List(ctx context.Context, sel providers.Selector) ([]providers.Instance, error) {
	instances, err := p.inner.List(ctx, sel)
	p.count("list", err)
	return instances, err
}

func (p *instrumented) Create(ctx context.Context, req providers.CreateRequest) (providers.Instance, error) {
	inst, err := p.inner.Create(ctx, req)
	p.count("create", err)
	return inst, err
}

func (p *instrumented) Delete(ctx context.Context, inst providers.Instance) error {
	err := p.inner.Delete(ctx, inst)
	p.count("delete", err)
	return err
}

func (p *instrumented) Capacity(ctx context.Context) (providers.Capacity, error) {
	c, err := p.inner.Capacity(ctx)
	p.count("capacity", err)
	return c, err
}

func (p *instrumented) count(op string, err error) {
	p.requests.WithLabelValues(p.inner.Name(), op, codeOf(err)).Inc()
}

// codeOf labels a call's outcome: "ok", the cloud's own error code
// (InsufficientInstanceCapacity, ZONE_RESOURCE_POOL_EXHAUSTED…) when it
// gave one, else the kind of failure. Codes come from a cloud's fixed
// vocabulary, so the label stays bounded; messages never go in.
func codeOf(err error) string {
	var pe *providers.Error
	switch {
	case err == nil:
		return "ok"
	case errors.As(err, &pe) && pe.Code != "":
		return pe.Code
	case errors.As(err, &pe) && pe.Kind != "":
		return string(pe.Kind)
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	}
	return "error"
}
