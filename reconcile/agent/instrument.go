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
// gpufleet_cloud_api_requests_total.
func (m *Metrics) Instrument(ps map[string]providers.Provider) map[string]providers.Provider {
	out := make(map[string]providers.Provider, len(ps))
	for cloud, p := range ps {
		out[cloud] = &instrumented{inner: p, requests: m.apiRequests}
	}
	return out
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
