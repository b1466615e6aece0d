// SPDX-License-Identifier: Apache-2.0

package sim

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/schema/catalog"
)

// lambdaCatalog is a catalog with a cloud beside the three, whose regions
// have one zone each, named as the region, as Lambda Cloud's do.
func lambdaCatalog() *catalog.Catalog {
	return &catalog.Catalog{
		Regions: []catalog.Region{
			{Cloud: catalog.Lambda, Name: "us-east-1", Zones: []string{"us-east-1"}},
			{Cloud: catalog.GCP, Name: "us-central1", Zones: []string{"us-central1-a"}},
		},
		Offers: []catalog.Offer{
			{Cloud: catalog.Lambda, Region: "us-east-1", InstanceType: "gpu_1x_a10", Market: catalog.OnDemand, GPUModel: "A10", GPUs: 1, PriceMicros: 750000},
			{Cloud: catalog.GCP, Region: "us-central1", InstanceType: "g2-standard-4", Market: catalog.OnDemand, GPUModel: "L4", GPUs: 1, PriceMicros: 700000},
		},
	}
}

func TestCatalogClouds(t *testing.T) {
	w, _ := newWorld(t, Config{Catalog: lambdaCatalog(), Capacity: 2})
	if got := strings.Join(w.uni.clouds, ","); got != "gcp,lambda" {
		t.Errorf("the catalog's clouds are %s, want gcp,lambda: the three first, in their order", got)
	}
	for _, spec := range []LaunchSpec{
		{Cloud: catalog.Lambda, Zone: "us-east-1", InstanceType: "gpu_1x_a10", Market: catalog.OnDemand},
		{Cloud: catalog.GCP, Zone: "us-central1-a", InstanceType: "g2-standard-4", Market: catalog.OnDemand, Name: "vm", Scope: "p"},
	} {
		if _, err := w.Launch(spec); err != nil {
			t.Fatalf("launching on %s: %v", spec.Cloud, err)
		}
	}
	all := w.Instances()
	if len(all) != 2 || all[0].Cloud != catalog.GCP || all[1].Cloud != catalog.Lambda {
		t.Fatalf("Instances lists %d instances, want the GCE one and then the Lambda one", len(all))
	}
	if id := all[1].ID; !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(id) {
		t.Errorf("a Lambda instance's id is %q, want 32 hex digits", id)
	}
}

func TestRoom(t *testing.T) {
	w, clock := newWorld(t, Config{Catalog: lambdaCatalog(), Capacity: 2, OperationTime: 0})
	room := func() int { return w.Room(catalog.Lambda, "us-east-1", "gpu_1x_a10", catalog.OnDemand) }
	if n := room(); n != 2 {
		t.Fatalf("an empty zone has room for %d, want its capacity, 2", n)
	}
	spec := LaunchSpec{Cloud: catalog.Lambda, Zone: "us-east-1", InstanceType: "gpu_1x_a10", Market: catalog.OnDemand}
	res, err := w.Launch(spec)
	if err != nil {
		t.Fatal(err)
	}
	if n := room(); n != 1 {
		t.Fatalf("with one pending instance the zone has room for %d, want 1", n)
	}
	w.SetCapacity(catalog.Lambda, "us-east-1", "gpu_1x_a10", catalog.OnDemand, 0)
	if n := room(); n != 0 {
		t.Fatalf("over capacity the zone has room for %d, want 0", n)
	}
	w.SetCapacity(catalog.Lambda, "us-east-1", "gpu_1x_a10", catalog.OnDemand, 2)
	if _, err := w.StartDelete(res.Instance.ID, "", nil); err != nil {
		t.Fatal(err)
	}
	clock.Advance(0)
	if n := room(); n != 2 {
		t.Fatalf("once its instance is deleted the zone has room for %d, want 2", n)
	}
	if n := w.Room(catalog.Lambda, "us-east-1", "gpu_8x_h100_sxm5", catalog.OnDemand); n != 0 {
		t.Errorf("a type the zone does not sell has room for %d, want 0", n)
	}
	if n := w.Room(catalog.Lambda, "us-east-1", "gpu_1x_a10", catalog.Spot); n != 0 {
		t.Errorf("a market the zone does not sell has room for %d, want 0", n)
	}
}

func TestLambdaRules(t *testing.T) {
	if err := validateRateLimits([]RateLimit{
		{Cloud: catalog.Lambda, Class: ClassGeneral, Rate: 1, Burst: 2},
		{Cloud: catalog.Lambda, Class: ClassLaunch, Rate: 1.0 / 12, Burst: 1},
	}); err != nil {
		t.Errorf("Lambda's rate limits: %v", err)
	}
	if err := validateRateLimits([]RateLimit{{Cloud: catalog.Lambda, Class: ClassRead, Rate: 1, Burst: 1}}); err == nil {
		t.Error("a Lambda rate limit of class read was accepted; Lambda meters launches and the rest")
	}
	if err := (&Fault{Cloud: catalog.Lambda, Kind: FaultCapacity, Times: 1}).validate(); err != nil {
		t.Errorf("a Lambda fault: %v", err)
	}
	if err := (&Fault{Cloud: "oracle", Kind: FaultCapacity, Times: 1}).validate(); err == nil {
		t.Error("a fault of a cloud the world has no front for was accepted")
	}
}

func TestOCIRules(t *testing.T) {
	if err := validateRateLimits([]RateLimit{
		{Cloud: catalog.OCI, Class: ClassGeneral, Rate: 10, Burst: 20},
		{Cloud: catalog.OCI, Class: ClassLaunch, Rate: 0.5, Burst: 5},
	}); err != nil {
		t.Errorf("OCI's rate limits: %v", err)
	}
	if err := validateRateLimits([]RateLimit{{Cloud: catalog.OCI, Class: ClassWrite, Rate: 1, Burst: 1}}); err == nil {
		t.Error("an OCI rate limit of class write was accepted; the OCI front meters launches and the rest")
	}
	if err := (&Fault{Cloud: catalog.OCI, Kind: FaultCapacity, Times: 1}).validate(); err != nil {
		t.Errorf("an OCI fault: %v", err)
	}
}

// An OCI instance is named by an OCID that carries its region.
func TestOCIInstanceIDs(t *testing.T) {
	cat := &catalog.Catalog{
		Regions: []catalog.Region{{Cloud: catalog.OCI, Name: "us-ashburn-1", Zones: []string{"US-ASHBURN-AD-1"}}},
		Offers: []catalog.Offer{
			{Cloud: catalog.OCI, Region: "us-ashburn-1", InstanceType: "VM.GPU.A10.1", Market: catalog.OnDemand, GPUModel: "A10", GPUs: 1, PriceMicros: 2000000},
		},
	}
	w, _ := newWorld(t, Config{Catalog: cat})
	seen := map[string]bool{}
	for range 3 {
		res, err := w.Launch(LaunchSpec{Cloud: catalog.OCI, Zone: "US-ASHBURN-AD-1", InstanceType: "VM.GPU.A10.1", Market: catalog.OnDemand})
		if err != nil {
			t.Fatal(err)
		}
		id := res.Instance.ID
		if !regexp.MustCompile(`^ocid1\.instance\.oc1\.us-ashburn-1\.[a-z2-7]{60}$`).MatchString(id) {
			t.Errorf("an OCI instance's id is %q, want ocid1.instance.oc1.us-ashburn-1. and 60 base32 characters", id)
		}
		if seen[id] {
			t.Errorf("the id %s was given twice", id)
		}
		seen[id] = true
	}
}

// A token whose launch was no operation still answers its instance, as it
// ended, once a delete has taken the instance away, until the token runs
// out.
func TestTokenOutlivesDeletedInstance(t *testing.T) {
	cat := &catalog.Catalog{
		Regions: []catalog.Region{{Cloud: catalog.OCI, Name: "us-ashburn-1", Zones: []string{"US-ASHBURN-AD-1"}}},
		Offers: []catalog.Offer{
			{Cloud: catalog.OCI, Region: "us-ashburn-1", InstanceType: "VM.GPU.A10.1", Market: catalog.OnDemand, GPUModel: "A10", GPUs: 1, PriceMicros: 2000000},
		},
	}
	w, clock := newWorld(t, Config{Catalog: cat, OperationTime: time.Minute})
	spec := LaunchSpec{Cloud: catalog.OCI, Zone: "US-ASHBURN-AD-1", InstanceType: "VM.GPU.A10.1", Market: catalog.OnDemand, Token: "t", Params: "p"}
	first, err := w.Launch(spec)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.StartDelete(first.Instance.ID, "", nil); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Minute)
	if _, ok := w.Get(first.Instance.ID); ok {
		t.Fatal("the instance is still there after its delete")
	}
	again, err := w.Launch(spec)
	if err != nil {
		t.Fatal(err)
	}
	if again.Created || again.Instance == nil || again.Instance.ID != first.Instance.ID || again.Instance.State != StateTerminated {
		t.Fatalf("the token answers %+v, want the first instance, terminated", again)
	}
	clock.Advance(tokenLifetime)
	if fresh, err := w.Launch(spec); err != nil || !fresh.Created {
		t.Fatalf("a day later the token answers %+v, %v; want a new instance", fresh, err)
	}
}
