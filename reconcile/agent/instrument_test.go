// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
)

// bareCloud is a provider with none of the optional interfaces.
type bareCloud struct{}

func (bareCloud) Name() string                                    { return "bare" }
func (bareCloud) Offers(context.Context) ([]planner.Offer, error) { return nil, nil }
func (bareCloud) List(context.Context, providers.Selector) ([]providers.Instance, error) {
	return nil, nil
}
func (bareCloud) Create(context.Context, providers.CreateRequest) (providers.Instance, error) {
	return providers.Instance{}, nil
}
func (bareCloud) Delete(context.Context, providers.Instance) error { return nil }
func (bareCloud) Capacity(context.Context) (providers.Capacity, error) {
	return providers.Capacity{}, nil
}

type batches struct{}

func (batches) CreateBatch(context.Context, providers.BatchRequest) ([]providers.Instance, error) {
	return nil, nil
}

type groups struct{}

func (groups) EnsurePlacementGroup(context.Context, providers.PlacementGroup) error { return nil }
func (groups) PlacementGroups(context.Context) ([]providers.PlacementGroup, error) {
	return nil, nil
}
func (groups) DeletePlacementGroup(context.Context, providers.PlacementGroup) error { return nil }

type adopts struct{}

func (adopts) Unowned(context.Context, providers.UnownedSelector) ([]providers.Unowned, error) {
	return nil, nil
}
func (adopts) Adopt(context.Context, providers.Unowned, providers.CreateRequest) (providers.Instance, error) {
	return providers.Instance{}, nil
}

// capabilities says which optional interfaces p has.
func capabilities(p providers.Provider) string {
	_, b := p.(providers.BatchCreator)
	_, g := p.(providers.PlacementGrouper)
	_, a := p.(providers.Adopter)
	return fmt.Sprintf("batch %v, placement groups %v, adoption %v", b, g, a)
}

// The counting wrapper that serve puts around each cloud's provider has
// the optional interfaces of the provider it wraps, no more and no fewer,
// and counts their calls: were one hidden, runs under serve would launch
// one node a call, place gangs without their placement groups and see no
// foreign instances.
func TestInstrumentedProvidersKeepTheirOptionalInterfaces(t *testing.T) {
	clouds := map[string]providers.Provider{
		"bare": bareCloud{},
		"b": struct {
			bareCloud
			batches
		}{},
		"g": struct {
			bareCloud
			groups
		}{},
		"a": struct {
			bareCloud
			adopts
		}{},
		"bg": struct {
			bareCloud
			batches
			groups
		}{},
		"ba": struct {
			bareCloud
			batches
			adopts
		}{},
		"ga": struct {
			bareCloud
			groups
			adopts
		}{},
		"bga": struct {
			bareCloud
			batches
			groups
			adopts
		}{},
	}
	m := NewMetrics(slog.New(slog.NewTextHandler(io.Discard, nil)))
	wrapped := m.Instrument(clouds)
	ctx := context.Background()
	calls := 0
	for name, inner := range clouds {
		got := wrapped[name]
		if capabilities(got) != capabilities(inner) {
			t.Errorf("%s: wrapped it has %s; the provider has %s", name, capabilities(got), capabilities(inner))
		}
		if b, ok := got.(providers.BatchCreator); ok {
			b.CreateBatch(ctx, providers.BatchRequest{})
			calls++
		}
		if g, ok := got.(providers.PlacementGrouper); ok {
			g.EnsurePlacementGroup(ctx, providers.PlacementGroup{})
			g.PlacementGroups(ctx)
			g.DeletePlacementGroup(ctx, providers.PlacementGroup{})
			calls += 3
		}
		if a, ok := got.(providers.Adopter); ok {
			a.Unowned(ctx, providers.UnownedSelector{})
			a.Adopt(ctx, providers.Unowned{}, providers.CreateRequest{})
			calls += 2
		}
		got.List(ctx, providers.Selector{})
		calls++
	}
	if calls != 8+4*(1+3+2) {
		t.Fatalf("made %d calls", calls)
	}
	if n := testutil.ToFloat64(m.apiRequests.WithLabelValues("bare", "create_batch", "ok")); n != 4 {
		t.Errorf("counted %v batch launches, want 4", n)
	}
	for _, op := range []string{"ensure_placement_group", "placement_groups", "delete_placement_group", "unowned", "adopt"} {
		if n := testutil.ToFloat64(m.apiRequests.WithLabelValues("bare", op, "ok")); n != 4 {
			t.Errorf("counted %v %s calls, want 4", n, op)
		}
	}
	if n := testutil.ToFloat64(m.apiRequests.WithLabelValues("bare", "list", "ok")); n != 8 {
		t.Errorf("counted %v list calls, want 8", n)
	}
}
