// SPDX-License-Identifier: Apache-2.0

package sim

import (
	"regexp"
	"strings"
	"testing"

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
