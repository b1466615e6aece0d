// SPDX-License-Identifier: Apache-2.0

package oci

import (
	"context"
	"crypto/rsa"
	"errors"
	"fmt"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/oracle/oci-go-sdk/v65/common"
	"github.com/oracle/oci-go-sdk/v65/core"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/providers/conformance"
	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/providers/sim/ocisim"
	"github.com/gpufleet/gpufleet/schema"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

const (
	confCompartment = "ocid1.compartment.oc1..gpufleetconformance"
	// confLimit is the service limit the suite's world counts A10 GPUs
	// against: the catalog keeps no OCI limits, which are learned from a
	// launch's LimitExceeded, but the quota case needs one to exhaust.
	confLimit = "gpu-a10-count"
)

var (
	confOffer = planner.OfferKey{Cloud: Name, Region: ashburn, Zone: "US-ASHBURN-AD-1", InstanceType: a10, Market: catalog.OnDemand}
	// confSeedOffer is apart from confOffer, whose capacity the suite
	// sets.
	confSeedOffer = planner.OfferKey{Cloud: Name, Region: frankfurt, Zone: "EU-FRANKFURT-1-AD-1", InstanceType: a10, Market: catalog.OnDemand}
)

// TestConformance runs the provider suite against the emulator's OCI
// front over the embedded catalog, the front checking every request's
// signature against the emulator key's public half.
func TestConformance(t *testing.T) {
	b := newConformanceBackend(t)
	conformance.Run(t, conformance.Harness{
		Provider: b.provider,
		Offer:    confOffer,
		World:    b.world,
		Seed:     b.seed,
		Foreign:  b.foreign,
		Alive:    b.alive,
		// gpufleet launches OCI's GPU shapes on demand only, so there is
		// no preemptible instance of its own for OCI to take back, and the
		// suite says so instead of passing the case.
		NoSpot:      true,
		CreateCalls: []string{"oci " + ocisim.OpLaunchInstance},
		DeleteCalls: []string{"oci " + ocisim.OpTerminateInstance},
	})
}

type conformanceBackend struct {
	provider *Provider
	world    *sim.World
	cfg      *schema.OCI
}

func newConformanceBackend(t *testing.T) conformanceBackend {
	t.Helper()
	return newConformanceBackendWith(t, sim.Config{})
}

// newConformanceBackendWith starts a world of cfg over the embedded
// catalog, with room for the paging case's instances, its OCI front, and
// a provider of Ashburn and Frankfurt whose retries wait a millisecond.
func newConformanceBackendWith(t *testing.T, cfg sim.Config) conformanceBackend {
	t.Helper()
	cat := catalog.Default()
	if _, ok := cat.Region(Name, ashburn); !ok {
		t.Fatalf("the catalog has no OCI region %s", ashburn)
	}
	cat.Quotas = append(cat.Quotas, catalog.Quota{Cloud: Name, Name: confLimit, Description: "A10 GPUs", Scope: catalog.RegionScope, Unit: catalog.GPUs})
	cat.QuotaUses = append(cat.QuotaUses, catalog.QuotaUse{Cloud: Name, InstanceType: a10, Market: catalog.OnDemand, Quota: confLimit, Per: 1})
	cfg.Catalog, cfg.Capacity = cat, max(cfg.Capacity, 2000)
	w, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := testKeys()
	if err != nil {
		t.Fatal(err)
	}
	keyID, err := keys.KeyID()
	if err != nil {
		t.Fatal(err)
	}
	private, err := keys.PrivateRSAKey()
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(ocisim.New(w, ocisim.Options{PublicKeys: map[string]*rsa.PublicKey{keyID: &private.PublicKey}}))
	t.Cleanup(ts.Close)
	oc := testConfig()
	oc.Compartment = confCompartment
	p, err := New(context.Background(), oc, cat, Options{
		Endpoint: ts.URL, ConfigurationProvider: keys, RetryMax: 3, RetryWaitMin: time.Millisecond, RetryWaitMax: 2 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	return conformanceBackend{provider: p, world: w, cfg: oc}
}

// seed launches owned instances straight into the world, tagged and
// named as Create tags and names them, in the region the suite does not
// stock out.
func (b conformanceBackend) seed(ctx context.Context, fleet string, n int) error {
	o := confSeedOffer
	for i := range n {
		req := providers.CreateRequest{Token: planner.Token(fleet, "w", o, "seed", i), Offer: o, Fleet: fleet, Workload: "w"}
		if _, err := b.world.Launch(sim.LaunchSpec{Cloud: Name, Zone: o.Zone, InstanceType: o.InstanceType, Market: o.Market,
			Scope: b.cfg.Compartment, Tags: providers.OwnershipTags(req),
			Properties: map[string]string{
				"displayName": providers.InstanceName(fleet, "w", req.Token),
				"imageId":     b.cfg.Launch.ImageByRegion[o.Region],
				"subnetId":    b.cfg.Launch.SubnetByRegion[o.Region],
			}}); err != nil {
			return err
		}
	}
	return nil
}

// foreign launches, through the API, an instance of the compartment
// without gpufleet's tags, as a person would from the console.
func (b conformanceBackend) foreign(ctx context.Context) (string, error) {
	o := confOffer
	ad, err := b.provider.adOf(ctx, "test", o)
	if err != nil {
		return "", err
	}
	callCtx, md := b.provider.call(ctx)
	resp, err := b.provider.clients[o.Region].compute.LaunchInstance(callCtx, core.LaunchInstanceRequest{
		LaunchInstanceDetails: core.LaunchInstanceDetails{
			AvailabilityDomain: &ad,
			CompartmentId:      &b.cfg.Compartment,
			Shape:              common.String(o.InstanceType),
			DisplayName:        common.String(fmt.Sprintf("notebook-%d", b.world.Rand(1_000_000))),
			FreeformTags:       map[string]string{"team": "research"},
			SourceDetails:      core.InstanceSourceViaImageDetails{ImageId: common.String(b.cfg.Launch.ImageByRegion[o.Region])},
			CreateVnicDetails:  &core.CreateVnicDetails{SubnetId: common.String(b.cfg.Launch.SubnetByRegion[o.Region])},
		},
		RequestMetadata: md,
	})
	if err != nil {
		return "", b.provider.classify("test", o, err)
	}
	return *resp.Id, nil
}

func (b conformanceBackend) alive(ctx context.Context, id string) (bool, error) {
	callCtx, md := b.provider.call(ctx)
	resp, err := b.provider.clients[confOffer.Region].compute.GetInstance(callCtx, core.GetInstanceRequest{InstanceId: &id, RequestMetadata: md})
	if err != nil {
		if e := b.provider.classify("test", planner.OfferKey{}, err); e.Kind != providers.KindNotFound {
			return false, e
		}
		return false, nil
	}
	return !ended(resp.LifecycleState), nil
}

// TestEmulatorCapacity: against the front, each zone's offerings are the
// catalog's shapes its availability domain lists now, with the one
// warning about service limits, and a preflight of a shape a domain no
// longer offers is a capacity error.
func TestEmulatorCapacity(t *testing.T) {
	b := newConformanceBackend(t)
	b.world.SetOffered(Name, "US-ASHBURN-AD-2", a10, false)
	got, err := b.provider.Capacity(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Warnings) != 1 || got.Warnings[0] != limitsNotRead {
		t.Errorf("warnings %q", got.Warnings)
	}
	var zones []string
	for _, o := range got.Offerings {
		zones = append(zones, o.Zone)
		if has := slices.Contains(o.Types, a10); has != (o.Zone != "US-ASHBURN-AD-2") {
			t.Errorf("%s offers %v", o.Zone, o.Types)
		}
		if want := b.catalogTypes(o.Zone); !slices.Equal(o.Types, want) {
			t.Errorf("%s offers %v, want %v", o.Zone, o.Types, want)
		}
	}
	r1, _ := b.world.Region(Name, ashburn)
	r2, _ := b.world.Region(Name, frankfurt)
	if want := slices.Sorted(slices.Values(slices.Concat(r1.Zones, r2.Zones))); !slices.Equal(zones, want) {
		t.Errorf("offerings of %v, want %v", zones, want)
	}
	offer := confOffer
	offer.Zone = "US-ASHBURN-AD-2"
	if err := b.provider.Preflight(context.Background(), offer); !errors.Is(err, providers.ErrCapacity) {
		t.Errorf("Preflight of a shape the domain no longer offers: %v, want capacity", err)
	}
	if err := b.provider.Preflight(context.Background(), confOffer); err != nil {
		t.Errorf("Preflight: %v", err)
	}
}

// catalogTypes are the catalog's shapes in zone that the world offers
// there now, sorted.
func (b conformanceBackend) catalogTypes(zone string) []string {
	out := []string{}
	for _, typ := range b.world.Offered(Name, zone, catalog.OnDemand) {
		for _, o := range b.world.Catalog().Offers {
			if o.Cloud == Name && o.Zone == zone && o.InstanceType == typ.Name && !slices.Contains(out, typ.Name) {
				out = append(out, typ.Name)
			}
		}
	}
	slices.Sort(out)
	return out
}

// TestEmulatorTokenSpent: against the front, a create whose node was
// deleted is refused as a spent token, while the instance is still listed
// terminating and after the world has dropped it, when the retry token
// alone answers for it; a new token launches.
func TestEmulatorTokenSpent(t *testing.T) {
	clock := sim.NewManualClock(time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC))
	b := newConformanceBackendWith(t, sim.Config{Clock: clock, OperationTime: time.Minute})
	ctx := context.Background()
	req := providers.CreateRequest{Token: planner.Token("f", "w", confOffer, "rev", 0), Offer: confOffer, Fleet: "f", Workload: "w"}
	first, err := b.provider.Create(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.provider.Delete(ctx, first); err != nil {
		t.Fatal(err)
	}
	if _, err := b.provider.Create(ctx, req); !errors.Is(err, providers.ErrTokenSpent) {
		t.Errorf("Create of a token whose node is terminating: %v, want token-spent", err)
	}
	clock.Advance(time.Hour)
	if _, err := b.provider.Create(ctx, req); !errors.Is(err, providers.ErrTokenSpent) {
		t.Errorf("Create of a token whose node is gone: %v, want token-spent", err)
	}
	if n := b.world.Calls()["oci "+ocisim.OpLaunchInstance]; n != 2 {
		t.Errorf("%d launches, want the first and the one the retry token answered", n)
	}
	req.Token = planner.Token("f", "w", confOffer, "rev", 1)
	if second, err := b.provider.Create(ctx, req); err != nil || second.ID == first.ID {
		t.Errorf("Create of a new token: %+v, %v", second, err)
	}
}
