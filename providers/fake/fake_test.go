// SPDX-License-Identifier: Apache-2.0

package fake_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/providers/conformance"
	"github.com/gpufleet/gpufleet/providers/fake"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

var (
	zoneA = planner.OfferKey{Cloud: "aws", Region: "us-east-1", Zone: "us-east-1a", InstanceType: "g4dn.xlarge", Market: catalog.OnDemand}
	zoneB = planner.OfferKey{Cloud: "aws", Region: "us-east-1", Zone: "us-east-1b", InstanceType: "g4dn.xlarge", Market: catalog.OnDemand}
	spotA = planner.OfferKey{Cloud: "aws", Region: "us-east-1", Zone: "us-east-1a", InstanceType: "g4dn.xlarge", Market: catalog.Spot}
)

func request(offer planner.OfferKey, slot int) providers.CreateRequest {
	return providers.CreateRequest{Token: planner.Token("f", "w", offer, "rev", slot), Offer: offer, Fleet: "f", Workload: "w", Labels: map[string]string{"team": "t"}}
}

// The fake keeps the contracts the reconciler relies on, checked by the
// suite every real provider passes; the cases that need the emulator's
// world are skipped.
func TestFakeConformance(t *testing.T) {
	p := fake.New("aws", "us-east-1")
	conformance.Run(t, conformance.Harness{
		Provider: p,
		Offer:    zoneA,
		Spot:     spotA,
		Seed: func(ctx context.Context, fleet string, n int) error {
			for i := range n {
				p.Add(planner.Instance{OfferKey: zoneA, Fleet: fleet, Workload: "w", Token: fmt.Sprintf("seed-%d", i)})
			}
			return nil
		},
		Foreign: func(ctx context.Context) (string, error) {
			return p.Add(planner.Instance{OfferKey: zoneA}).ID, nil
		},
		Alive: func(ctx context.Context, id string) (bool, error) {
			_, ok := p.Get(id)
			return ok, nil
		},
	})
}

func TestFakeOffersComeFromTheCatalog(t *testing.T) {
	offers, err := fake.New("aws", "us-east-1").Offers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := planner.Expand(catalog.Default(), map[string][]string{"aws": {"us-east-1"}})
	if len(offers) == 0 || len(offers) != len(want) {
		t.Fatalf("%d offers, want the catalog's %d", len(offers), len(want))
	}
	for i := range offers {
		if !reflect.DeepEqual(offers[i], want[i]) {
			t.Errorf("offer %d is %+v, want %+v", i, offers[i], want[i])
		}
	}
}

// Creates answer by token: the same instance while it is live, a spent
// token once it has ended, however it ended.
func TestFakeCreateIsIdempotentOnToken(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name    string
		between func(p *fake.Provider, inst planner.Instance)
		wantErr error
	}{
		{"repeat while running returns the same instance", func(*fake.Provider, planner.Instance) {}, nil},
		{"repeat while pending returns the same instance", func(p *fake.Provider, inst planner.Instance) { p.SetState(inst.ID, planner.StatePending) }, nil},
		{"repeat after a delete is spent", func(p *fake.Provider, inst planner.Instance) { p.Delete(ctx, inst) }, providers.ErrTokenSpent},
		{"repeat after a removal behind our back is spent", func(p *fake.Provider, inst planner.Instance) { p.Remove(inst.ID) }, providers.ErrTokenSpent},
		{"repeat after a preemption is spent", func(p *fake.Provider, inst planner.Instance) { p.SetState(inst.ID, planner.StatePreempted) }, providers.ErrTokenSpent},
		{"repeat after a failed launch is spent", func(p *fake.Provider, inst planner.Instance) { p.SetState(inst.ID, planner.StateFailed) }, providers.ErrTokenSpent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := fake.New("aws", "us-east-1")
			req := request(zoneA, 0)
			first, err := p.Create(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			tt.between(p, first)
			again, err := p.Create(ctx, req)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Fatalf("repeated create: %v, want %v", err, tt.wantErr)
			}
			if tt.wantErr == nil && again.ID != first.ID {
				t.Errorf("repeated create returned %s, first %s", again.ID, first.ID)
			}
			if tt.wantErr != nil && providers.KindOf(err) != providers.KindTokenSpent {
				t.Errorf("error %v is not classified as token-spent", err)
			}
			if live := countLive(p); live > 1 {
				t.Errorf("%d live instances for one token", live)
			}
		})
	}
}

func countLive(p *fake.Provider) int {
	n := 0
	for _, inst := range p.Instances() {
		if inst.State.Live() {
			n++
		}
	}
	return n
}

// Injected errors fail exactly the calls they are meant for, filled in
// with where they happened.
func TestFakeInjectedErrors(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name    string
		inject  func(p *fake.Provider)
		creates []planner.OfferKey
		// want is the kind each create fails with, "" for a success.
		want []providers.Kind
	}{
		{
			name:    "the next two creates on an offer fail, others go through",
			inject:  func(p *fake.Provider) { p.FailCreates(zoneA, 2, fake.Err(providers.KindCapacity)) },
			creates: []planner.OfferKey{zoneA, zoneB, zoneA, zoneA},
			want:    []providers.Kind{providers.KindCapacity, "", providers.KindCapacity, ""},
		},
		{
			name:    "always fails until cleared",
			inject:  func(p *fake.Provider) { p.FailCreates(zoneA, fake.Always, fake.Err(providers.KindQuota)) },
			creates: []planner.OfferKey{zoneA, zoneA, zoneA},
			want:    []providers.Kind{providers.KindQuota, providers.KindQuota, providers.KindQuota},
		},
		{
			name: "the generic queue goes first, in order, nil letting one through",
			inject: func(p *fake.Provider) {
				p.NextCreateErr(fake.Err(providers.KindThrottled), nil, fake.Err(providers.KindInvalid))
				p.FailCreates(zoneB, 1, fake.Err(providers.KindCapacity))
			},
			creates: []planner.OfferKey{zoneB, zoneB, zoneA, zoneB, zoneB},
			want:    []providers.Kind{providers.KindThrottled, providers.KindCapacity, providers.KindInvalid, "", ""},
		},
		{
			name:    "an offer the cloud does not sell is invalid",
			inject:  func(*fake.Provider) {},
			creates: []planner.OfferKey{{Cloud: "aws", Region: "us-east-1", Zone: "us-east-1a", InstanceType: "p99.huge", Market: catalog.OnDemand}},
			want:    []providers.Kind{providers.KindInvalid},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := fake.New("aws", "us-east-1")
			tt.inject(p)
			for i, offer := range tt.creates {
				_, err := p.Create(ctx, request(offer, i))
				if got := providers.KindOf(err); got != tt.want[i] || (tt.want[i] == "" && err != nil) {
					t.Fatalf("create %d on %s: %v, want kind %q", i, offer, err, tt.want[i])
				}
				var pe *providers.Error
				if err != nil && errors.As(err, &pe) && (pe.Cloud != "aws" || pe.Op != "create" || pe.Offer != offer) {
					t.Errorf("create %d: error says %s %s %s, want aws create %s", i, pe.Cloud, pe.Op, pe.Offer, offer)
				}
			}
			calls := p.CallsTo(fake.MethodCreate)
			if len(calls) != len(tt.creates) {
				t.Fatalf("%d creates recorded, want %d", len(calls), len(tt.creates))
			}
			for i, c := range calls {
				if c.Offer != tt.creates[i] || !c.Done || providers.KindOf(c.Err) != tt.want[i] {
					t.Errorf("call %d recorded as %+v", i, c)
				}
			}
		})
	}
}

func TestFakeListAndDelete(t *testing.T) {
	ctx := context.Background()
	p := fake.New("aws", "us-east-1")
	mine, err := p.Create(ctx, request(zoneA, 0))
	if err != nil {
		t.Fatal(err)
	}
	other := p.Add(planner.Instance{OfferKey: zoneB, Fleet: "g", Workload: "w", Token: "tok-g"})
	foreign := p.Add(planner.Instance{OfferKey: zoneB})

	t.Run("lists owned instances the selector matches", func(t *testing.T) {
		all, err := p.List(ctx, providers.Selector{})
		ids := map[string]bool{}
		for _, inst := range all {
			ids[inst.ID] = true
		}
		if err != nil || len(all) != 2 || !ids[mine.ID] || !ids[other.ID] {
			t.Fatalf("List = %v, %v; want %s and %s", all, err, mine.ID, other.ID)
		}
		only, err := p.List(ctx, providers.Selector{Fleet: "f"})
		if err != nil || len(only) != 1 || only[0].ID != mine.ID {
			t.Fatalf("List(f) = %v, %v; want %s", only, err, mine.ID)
		}
	})
	t.Run("a queued list error fails one list", func(t *testing.T) {
		p.NextListErr(fake.Err(providers.KindAuth))
		if _, err := p.List(ctx, providers.Selector{}); !errors.Is(err, providers.ErrAuth) {
			t.Fatalf("List: %v, want an auth error", err)
		}
		if _, err := p.List(ctx, providers.Selector{}); err != nil {
			t.Fatalf("the second List: %v", err)
		}
	})
	t.Run("refuses what gpufleet does not own", func(t *testing.T) {
		if err := p.Delete(ctx, foreign); !errors.Is(err, providers.ErrInvalid) {
			t.Fatalf("Delete(foreign): %v, want invalid", err)
		}
		claimed := other
		claimed.Fleet = "f"
		if err := p.Delete(ctx, claimed); !errors.Is(err, providers.ErrInvalid) {
			t.Fatalf("Delete of fleet g's instance as fleet f's: %v, want invalid", err)
		}
		if _, ok := p.Get(foreign.ID); !ok {
			t.Error("the foreign instance is gone")
		}
	})
	t.Run("a queued delete error fails one delete, and deleting twice succeeds", func(t *testing.T) {
		p.NextDeleteErr(fake.Err(providers.KindUnavailable))
		if err := p.Delete(ctx, mine); !errors.Is(err, providers.ErrUnavailable) {
			t.Fatalf("Delete: %v, want unavailable", err)
		}
		for i := range 2 {
			if err := p.Delete(ctx, mine); err != nil {
				t.Fatalf("Delete %d: %v", i+1, err)
			}
		}
		if _, ok := p.Get(mine.ID); ok {
			t.Error("the instance is still there")
		}
		if got := p.Count(fake.MethodDelete); got != 5 {
			t.Errorf("%d deletes recorded, want 5", got)
		}
	})
}

// A held create waits for its release, or returns when its context ends.
func TestFakeHoldCreates(t *testing.T) {
	p := fake.New("aws", "us-east-1")
	hold := p.HoldCreates()
	ctx, cancel := context.WithCancel(context.Background())
	errs := make(chan error, 2)
	go func() { _, err := p.Create(ctx, request(zoneA, 0)); errs <- err }()
	go func() { _, err := p.Create(context.Background(), request(zoneA, 1)); errs <- err }()
	for range 2 {
		select {
		case <-hold.Arrived():
		case <-time.After(5 * time.Second):
			t.Fatal("the creates never arrived at the hold")
		}
	}
	cancel()
	if err := <-errs; !errors.Is(err, context.Canceled) {
		t.Fatalf("the cancelled create: %v, want context.Canceled", err)
	}
	if got := countLive(p); got != 0 {
		t.Fatalf("%d instances launched while held", got)
	}
	hold.Release()
	if err := <-errs; err != nil {
		t.Fatalf("the released create: %v", err)
	}
	if got := countLive(p); got != 1 {
		t.Errorf("%d instances after the release, want 1", got)
	}
	if _, err := p.Create(context.Background(), request(zoneA, 2)); err != nil {
		t.Errorf("a create after the release: %v", err)
	}
}

// Parallel creates each get their own instance and their own record.
func TestFakeParallelCreates(t *testing.T) {
	p := fake.New("aws", "us-east-1")
	p.FailCreates(zoneB, 10, fake.Err(providers.KindCapacity))
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			offer := zoneA
			if i%2 == 1 {
				offer = zoneB
			}
			p.Create(context.Background(), request(offer, i))
		})
	}
	wg.Wait()
	failed := 0
	for _, c := range p.CallsTo(fake.MethodCreate) {
		if c.Err != nil {
			failed++
		}
	}
	if got := p.Count(fake.MethodCreate); got != 50 || failed != 10 || countLive(p) != 40 {
		t.Errorf("%d creates recorded, %d failed, %d live; want 50, 10, 40", got, failed, countLive(p))
	}
}
