// SPDX-License-Identifier: Apache-2.0

package gcesim

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/api/iterator"
	"google.golang.org/protobuf/proto"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// What GCE refuses, or answers, that a lenient front would let gcloud
// pass over: gcloud exits 0 with a warning when a list's request fails,
// so each case also checks that no warning was printed.

// A service account other than the project's default must exist; a
// caller without a permission is denied, naming it.
func TestGcloudServiceAccountsAndPermissions(t *testing.T) {
	t.Parallel()
	g := newGcloudFront(t, sim.Config{}, Options{})
	const email = "nodes@demo-project.iam.gserviceaccount.com"
	create := func(name string) []string {
		return []string{"compute", "instances", "create", name, "--zone", "us-central1-a", "--machine-type", "g2-standard-4",
			"--service-account", email, "--scopes", "cloud-platform"}
	}
	wantIn(t, "gcloud's stderr", g.fails(t, create("lost")...),
		"Invalid value for field 'resource.serviceAccounts[0].email': '"+email+"'. Service account "+email+" does not exist.")
	if err := g.world.SetAccount(sim.Account{ServiceAccounts: []string{email}}); err != nil {
		t.Fatal(err)
	}
	var created []map[string]any
	g.ok(t, &created, create("found")...)
	if got := jsonAt(created[0], "serviceAccounts", 0, "email"); got != email {
		t.Errorf("the instance runs as %v", got)
	}

	if err := g.world.SetAccount(sim.Account{ServiceAccounts: []string{email}, Denied: []string{"gcp:compute.instances.insert"}}); err != nil {
		t.Fatal(err)
	}
	wantIn(t, "gcloud's stderr", g.fails(t, create("denied")...),
		"Required 'compute.instances.create' permission for 'projects/demo-project/zones/us-central1-a/instances/denied'")
	// What the caller may still do, it does.
	var listed []map[string]any
	g.ok(t, &listed, "compute", "instances", "list")
	wantNames(t, listed, "found")
}

// resource-policies list reads the aggregated list, every region's.
func TestGcloudListsResourcePolicies(t *testing.T) {
	t.Parallel()
	g := newGcloudFront(t, sim.Config{}, Options{})
	for _, region := range []string{"us-central1", "europe-west4"} {
		g.ok(t, nil, "compute", "resource-policies", "create", "group-placement", "gang-"+region, "--region", region,
			"--collocation", "collocated", "--vm-count", "2")
	}
	var listed []map[string]any
	stderr := g.ok(t, &listed, "compute", "resource-policies", "list")
	if strings.Contains(stderr, "WARNING") {
		t.Errorf("resource-policies list warned:\n%s", stderr)
	}
	wantNames(t, listed, "gang-europe-west4", "gang-us-central1")
	g.ok(t, &listed, "compute", "resource-policies", "list", "--filter", "name=gang-us-central1")
	wantNames(t, listed, "gang-us-central1")
}

// operations list --filter=zone:Z is sent to the API as a regular
// expression on the operations' zone, which it must take.
func TestGcloudFiltersOperationsByZone(t *testing.T) {
	t.Parallel()
	g := newGcloudFront(t, sim.Config{}, Options{})
	for _, zone := range []string{"us-central1-a", "us-central1-b"} {
		g.ok(t, nil, "compute", "instances", "create", "vm-"+zone, "--zone", zone, "--machine-type", "g2-standard-4")
	}
	var ops []map[string]any
	stderr := g.ok(t, &ops, "compute", "operations", "list", "--filter=zone:us-central1-a")
	if strings.Contains(stderr, "WARNING") {
		t.Errorf("operations list --filter=zone: warned:\n%s", stderr)
	}
	if len(ops) != 1 || !strings.HasSuffix(ops[0]["targetLink"].(string), "/instances/vm-us-central1-a") {
		t.Errorf("operations in us-central1-a: %v", ops)
	}
}

// orderBy takes what GCE documents, name and "creationTimestamp desc",
// the second where a list is in the order its items began; anything else
// is refused, as GCE refuses it.
func TestOrderBy(t *testing.T) {
	f := newFixture(t, sim.Config{}, Options{})
	ctx := context.Background()
	for _, name := range []string{"b", "a", "c"} {
		f.create(t, vm{name: name})
	}
	ops := func(orderBy string, pageSize uint32) ([]string, error) {
		it := f.operations.List(ctx, &computepb.ListZoneOperationsRequest{Project: project, Zone: zone, OrderBy: proto.String(orderBy), MaxResults: proto.Uint32(pageSize)})
		var targets []string
		for {
			op, err := it.Next()
			if err == iterator.Done {
				return targets, nil
			}
			if err != nil {
				return nil, err
			}
			targets = append(targets, op.GetTargetLink()[strings.LastIndexByte(op.GetTargetLink(), '/')+1:])
		}
	}
	for _, size := range []uint32{500, 2} {
		newest, err := ops("creationTimestamp desc", size)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(newest, []string{"c", "a", "b"}) {
			t.Errorf("newest first, in pages of %d: %v, want c a b", size, newest)
		}
	}
	if _, err := ops("name", 500); err != nil {
		t.Errorf("orderBy=name: %v", err)
	}
	_, err := ops("status", 500)
	wantAPIError(t, err, http.StatusBadRequest, "invalid", "Invalid value for field 'orderBy': 'status'. Sorting by this field is not supported.")
	// Instances are listed by name: newest first is not their order.
	_, err = f.instances.List(ctx, &computepb.ListInstancesRequest{Project: project, Zone: zone, OrderBy: proto.String("creationTimestamp desc")}).Next()
	wantAPIError(t, err, http.StatusBadRequest, "invalid", "Invalid value for field 'orderBy': 'creationTimestamp desc'. Sorting by this field is not supported.")
	it := f.instances.List(ctx, &computepb.ListInstancesRequest{Project: project, Zone: zone, OrderBy: proto.String("name")})
	var names []string
	for {
		inst, err := it.Next()
		if err == iterator.Done {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, inst.GetName())
	}
	if !slices.Equal(names, []string{"a", "b", "c"}) {
		t.Errorf("instances by name: %v", names)
	}
}

// A new project's quotas, as `sim serve` starts with: gcloud reads them
// from the region and the project, and a create past them fails with
// QUOTA_EXCEEDED.
func TestGcloudShowsANewProjectsQuotas(t *testing.T) {
	t.Parallel()
	g := newGcloudFront(t, sim.Config{}, Options{})
	if err := g.world.SetQuotas(sim.QuotaSet{Base: sim.NewAccount}); err != nil {
		t.Fatal(err)
	}
	limit := func(quotas any, metric string) any {
		for _, q := range quotas.([]any) {
			if q := q.(map[string]any); q["metric"] == metric {
				return q["limit"]
			}
		}
		return nil
	}
	var region, projectInfo map[string]any
	g.ok(t, &region, "compute", "regions", "describe", "us-central1")
	g.ok(t, &projectInfo, "compute", "project-info", "describe")
	if l4, all := limit(region["quotas"], "NVIDIA_L4_GPUS"), limit(projectInfo["quotas"], "GPUS_ALL_REGIONS"); l4 != 4.0 || all != 8.0 {
		t.Errorf("a new project may run %v L4s in us-central1 and %v GPUs in all, want 4 and 8", l4, all)
	}
	// g2-standard-48 carries four L4s: one fills the region's quota.
	g.ok(t, nil, "compute", "instances", "create", "four", "--zone", "us-central1-a", "--machine-type", "g2-standard-48")
	wantIn(t, "gcloud's stderr", g.fails(t, "compute", "instances", "create", "fifth", "--zone", "us-central1-a", "--machine-type", "g2-standard-4"),
		"Quota 'NVIDIA_L4_GPUS' exceeded. Limit: 4.0 in region us-central1.")
}

// A machine type the catalog sells in only some of a region's zones is
// listed there alone, and a create elsewhere fails naming the zone.
func TestGcloudSeesTypesOnlyWhereTheyAreSold(t *testing.T) {
	t.Parallel()
	g := newGcloudFront(t, sim.Config{}, Options{})
	const typ = "a3-highgpu-8g"
	r, _ := g.world.Region(cloud, "us-central1")
	var sold, unsold []string
	for _, z := range r.Zones {
		if _, ok := g.world.Type(cloud, z, typ, catalog.OnDemand); ok {
			sold = append(sold, z)
		} else {
			unsold = append(unsold, z)
		}
	}
	if len(sold) == 0 || len(unsold) == 0 {
		t.Fatalf("the catalog sells %s in %v of us-central1, not in %v: want some of each", typ, sold, unsold)
	}
	var listed []map[string]any
	g.ok(t, &listed, "compute", "machine-types", "list", "--filter", "name="+typ+" AND zone:us-central1")
	var zones []string
	for _, m := range listed {
		zones = append(zones, m["zone"].(string))
	}
	slices.Sort(zones)
	if !slices.Equal(zones, sold) {
		t.Errorf("gcloud lists %s in %v, the catalog sells it in %v", typ, zones, sold)
	}
	wantIn(t, "gcloud's stderr", g.fails(t, "compute", "instances", "create", "lost", "--zone", unsold[0], "--machine-type", typ),
		"Machine type with name '"+typ+"' does not exist in zone '"+unsold[0]+"'.")
}

// bulk create --region calls the regional bulkInsert: GCE picks a zone
// the location policy allows, and gcloud counts what was made there.
func TestGcloudBulkCreatesInARegion(t *testing.T) {
	t.Parallel()
	g := newGcloudFront(t, sim.Config{}, Options{})
	create := func(pattern string, extra ...string) map[string]any {
		var result map[string]any
		g.ok(t, &result, append([]string{"compute", "instances", "bulk", "create", "--name-pattern", pattern, "--count", "2",
			"--region", "us-central1", "--machine-type", "g2-standard-4"}, extra...)...)
		return result
	}
	zonesOf := func(result map[string]any) []string {
		var zones []string
		for _, inst := range jsonAt(result, "instances").([]any) {
			zone := inst.(map[string]any)["zone"].(string)
			zones = append(zones, zone[strings.LastIndexByte(zone, '/')+1:])
		}
		return zones
	}
	first := create("any-#")
	if first["createdInstanceCount"] != 2.0 || !slices.Equal(zonesOf(first), []string{"us-central1-a", "us-central1-a"}) {
		t.Errorf("bulk create --region printed %v", first)
	}
	denied := create("away-#", "--location-policy", "us-central1-a=deny")
	if zones := zonesOf(denied); denied["createdInstanceCount"] != 2.0 || len(zones) != 2 || zones[0] == "us-central1-a" || zones[0] != zones[1] {
		t.Errorf("with us-central1-a denied, bulk create --region printed %v", denied)
	}
	for _, name := range []string{"any-1", "any-2"} {
		if _, ok := g.world.ByName(cloud, scope(gcloudProject, "us-central1-a"), name); !ok {
			t.Errorf("%s was not made in us-central1-a", name)
		}
	}
	// gcloud prints a bulk create's refusal and exits 0: what it printed,
	// and what was made, tell.
	refused := func(args []string, want string) {
		t.Helper()
		_, stderr, _ := g.run(t, append([]string{"compute", "instances", "bulk", "create", "--count", "2", "--machine-type", "g2-standard-4"}, args...)...)
		wantIn(t, "gcloud's stderr", stderr, want)
	}
	refused([]string{"--name-pattern", "even-#", "--region", "us-central1", "--target-distribution-shape", "balanced"},
		"Invalid value for field 'resource.locationPolicy.targetShape': 'BALANCED'.")
	refused([]string{"--name-pattern", "lost-#", "--region", "mars-central1"}, "projects/demo-project/regions/mars-central1")
	if n := len(g.world.List(cloud, nil)); n != 4 {
		t.Errorf("%d instances, want the four of the two bulk creates that were not refused", n)
	}
}
