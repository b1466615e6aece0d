// SPDX-License-Identifier: Apache-2.0

package gcesim

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"testing"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/api/iterator"
	"google.golang.org/api/option"
	"google.golang.org/protobuf/proto"

	"github.com/gpufleet/gpufleet/providers/sim"
)

const (
	region = "us-central1"
	// policyBase is where the region's policies are under GCE's own base,
	// which requests may name them by.
	policyBase = "https://www.googleapis.com/compute/v1/projects/gpufleet-test/regions/us-central1/resourcePolicies/"
	// regionPolicies is the same under any base.
	regionPolicies = "projects/gpufleet-test/regions/us-central1/resourcePolicies/"
)

// policyClients are SDK clients for resource policies and their regional
// operations, on the fixture's front.
func (f *fixture) policyClients(t *testing.T) (*compute.ResourcePoliciesClient, *compute.RegionOperationsClient) {
	t.Helper()
	ctx := context.Background()
	opts := []option.ClientOption{option.WithEndpoint(f.url), option.WithoutAuthentication()}
	policies, err := compute.NewResourcePoliciesRESTClient(ctx, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { policies.Close() })
	ops, err := compute.NewRegionOperationsRESTClient(ctx, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ops.Close() })
	return policies, ops
}

func compactPolicy(name, collocation string) *computepb.InsertResourcePolicyRequest {
	return &computepb.InsertResourcePolicyRequest{Project: project, Region: region, ResourcePolicyResource: &computepb.ResourcePolicy{
		Name:                 proto.String(name),
		Description:          proto.String("gang " + name),
		GroupPlacementPolicy: &computepb.ResourcePolicyGroupPlacementPolicy{Collocation: proto.String(collocation)},
	}}
}

// makePolicy inserts a policy and waits for its regional operation.
func makePolicy(t *testing.T, policies *compute.ResourcePoliciesClient, name, collocation string) {
	t.Helper()
	ctx := context.Background()
	op, err := policies.Insert(ctx, compactPolicy(name, collocation))
	if err != nil {
		t.Fatal(err)
	}
	if err := op.Wait(ctx); err != nil {
		t.Fatal(err)
	}
}

// insertIn inserts an instance named into policies and waits for it.
func (f *fixture) insertIn(v vm, policies ...string) error {
	ctx := context.Background()
	req := v.request()
	req.InstanceResource.ResourcePolicies = policies
	op, err := f.instances.Insert(ctx, req)
	if err != nil {
		return err
	}
	return op.Wait(ctx)
}

// Inserting, reading, listing and deleting a policy, with GCE's regional
// operations and errors.
func TestResourcePolicyLifecycle(t *testing.T) {
	f := newFixture(t, sim.Config{}, Options{})
	policies, regionOps := f.policyClients(t)
	ctx := context.Background()

	const requestID = "5d1c7a2e-3b4f-4e6a-9c8d-7f6e5d4c3b2a"
	req := compactPolicy("gang", "COLLOCATED")
	req.RequestId = proto.String(requestID)
	op, err := policies.Insert(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	first := op.Proto()
	if first.GetStatus() != computepb.Operation_RUNNING || first.GetRegion() != f.link("projects/gpufleet-test/regions/us-central1") ||
		first.GetTargetLink() != f.link(regionPolicies+"gang") || first.GetOperationType() != "insert" {
		t.Errorf("insert answered %v, want a RUNNING regional insert of the policy", first)
	}
	done, err := regionOps.Wait(ctx, &computepb.WaitRegionOperationRequest{Project: project, Region: region, Operation: op.Name()})
	if err != nil {
		t.Fatal(err)
	}
	if done.GetStatus() != computepb.Operation_DONE || done.GetError() != nil || done.GetEndTime() == "" {
		t.Errorf("wait answered %v, want it DONE without error", done)
	}
	got, err := regionOps.Get(ctx, &computepb.GetRegionOperationRequest{Project: project, Region: region, Operation: op.Name()})
	if err != nil || got.GetStatus() != computepb.Operation_DONE {
		t.Errorf("get answered %v, %v", got, err)
	}
	again, err := policies.Insert(ctx, req)
	if err != nil || again.Name() != op.Name() {
		t.Errorf("a repeated requestId answered %v, %v; want operation %s", again, err, op.Name())
	}
	_, err = policies.Insert(ctx, compactPolicy("gang", "COLLOCATED"))
	wantAPIError(t, err, 409, "alreadyExists", "The resource 'projects/gpufleet-test/regions/us-central1/resourcePolicies/gang' already exists")

	// The wire shape of a policy.
	resp, err := http.Get(f.url + "/compute/v1/projects/gpufleet-test/regions/us-central1/resourcePolicies/gang")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var raw map[string]any
	if err := json.Unmarshal(body, &raw); err != nil {
		t.Fatal(err)
	}
	for field, want := range map[string]any{
		"kind":                 "compute#resourcePolicy",
		"name":                 "gang",
		"description":          "gang gang",
		"region":               f.link("projects/gpufleet-test/regions/us-central1"),
		"selfLink":             f.link(regionPolicies + "gang"),
		"status":               "READY",
		"groupPlacementPolicy": map[string]any{"collocation": "COLLOCATED"},
	} {
		if b, _ := json.Marshal(raw[field]); string(b) != mustJSON(t, want) {
			t.Errorf("%s = %s, want %s", field, b, mustJSON(t, want))
		}
	}
	if _, ok := raw["id"].(string); !ok {
		t.Errorf("id %v is not a string, as GCE writes uint64s", raw["id"])
	}

	for _, name := range []string{"c", "a", "b"} {
		makePolicy(t, policies, name, "COLLOCATED")
	}
	var names []string
	for _, p := range all(t, policies.List(ctx, &computepb.ListResourcePoliciesRequest{Project: project, Region: region, MaxResults: proto.Uint32(1)}).Next) {
		names = append(names, p.GetName())
	}
	if want := []string{"a", "b", "c", "gang"}; !slices.Equal(names, want) {
		t.Errorf("listed %v a page at a time, want %v", names, want)
	}
	_, err = policies.List(ctx, &computepb.ListResourcePoliciesRequest{Project: project, Region: "europe-west4"}).Next()
	if err != iterator.Done {
		t.Errorf("another region lists %v, want nothing", err)
	}

	del, err := policies.Delete(ctx, &computepb.DeleteResourcePolicyRequest{Project: project, Region: region, ResourcePolicy: "gang"})
	if err != nil {
		t.Fatal(err)
	}
	if err := del.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if del.Proto().GetOperationType() != "delete" || del.Proto().GetError() != nil {
		t.Errorf("delete ended %v", del.Proto())
	}
	for name, call := range map[string]func() error{
		"get": func() error {
			_, err := policies.Get(ctx, &computepb.GetResourcePolicyRequest{Project: project, Region: region, ResourcePolicy: "gang"})
			return err
		},
		"delete": func() error {
			_, err := policies.Delete(ctx, &computepb.DeleteResourcePolicyRequest{Project: project, Region: region, ResourcePolicy: "gang"})
			return err
		},
	} {
		t.Run(name+" after delete", func(t *testing.T) {
			wantAPIError(t, call(), 404, "notFound", "The resource 'projects/gpufleet-test/regions/us-central1/resourcePolicies/gang' was not found")
		})
	}
	_, err = policies.Get(ctx, &computepb.GetResourcePolicyRequest{Project: project, Region: "mars-north1", ResourcePolicy: "a"})
	wantAPIError(t, err, 404, "notFound", "The resource 'projects/gpufleet-test/regions/mars-north1' was not found")
	_, err = regionOps.Get(ctx, &computepb.GetRegionOperationRequest{Project: project, Region: region, Operation: "operation-0-0"})
	wantAPIError(t, err, 404, "notFound", "The resource 'projects/gpufleet-test/regions/us-central1/operations/operation-0-0' was not found")
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestInvalidResourcePolicy(t *testing.T) {
	f := newFixture(t, sim.Config{}, Options{})
	policies, _ := f.policyClients(t)
	ctx := context.Background()
	spread := compactPolicy("x", "")
	spread.ResourcePolicyResource.GroupPlacementPolicy = nil
	bad := compactPolicy("x", "NEARBY")
	badName := compactPolicy("Not_A_Name", "COLLOCATED")
	for name, req := range map[string]*computepb.InsertResourcePolicyRequest{"no policy": spread, "unknown collocation": bad, "bad name": badName} {
		t.Run(name, func(t *testing.T) {
			_, err := policies.Insert(ctx, req)
			wantAPIError(t, err, 400, "invalid", "")
		})
	}
}

// Instances name policies of their own region; an insert takes URLs, a
// bulkInsert's instance properties names; the instance reads back with the
// policy's URL; a policy in use cannot be deleted until its instances are.
func TestInstancesInResourcePolicies(t *testing.T) {
	f := newFixture(t, sim.Config{}, Options{})
	policies, _ := f.policyClients(t)
	ctx := context.Background()
	makePolicy(t, policies, "gang", "COLLOCATED")

	if err := f.insertIn(vm{name: "by-path"}, "projects/gpufleet-test/regions/us-central1/resourcePolicies/gang"); err != nil {
		t.Fatal(err)
	}
	if err := f.insertIn(vm{name: "by-url"}, policyBase+"gang"); err != nil {
		t.Fatal(err)
	}
	req := batch{names: []string{"bulk-1", "bulk-2"}, count: 2}.request()
	req.BulkInsertInstanceResourceResource.InstanceProperties.ResourcePolicies = []string{"gang"}
	op, err := f.instances.BulkInsert(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if err := op.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"by-path", "by-url", "bulk-1", "bulk-2"} {
		if got := f.get(t, zone, name).GetResourcePolicies(); !slices.Equal(got, []string{f.link(regionPolicies + "gang")}) {
			t.Errorf("%s: resource policies %q, want the policy's URL", name, got)
		}
	}

	refused := []struct {
		name    string
		call    func() error
		status  int
		reason  string
		message string
	}{
		{"unknown policy", func() error { return f.insertIn(vm{name: "lost"}, "regions/us-central1/resourcePolicies/nope") },
			404, "notFound", "The resource 'projects/gpufleet-test/regions/us-central1/resourcePolicies/nope' was not found"},
		{"policy of another region", func() error { return f.insertIn(vm{name: "far"}, "regions/europe-west4/resourcePolicies/gang") },
			400, "invalid", "Invalid value for field 'resource.resourcePolicies[0]': 'regions/europe-west4/resourcePolicies/gang'. Resource policy must be in the same region as the instance."},
		{"compact policy, another zone", func() error {
			return f.insertIn(vm{name: "apart", zone: "us-central1-b"}, "regions/us-central1/resourcePolicies/gang")
		},
			400, "invalid", "Invalid value for field 'resource.resourcePolicies[0]': '" + f.link(regionPolicies+"gang") + "'. The instances of a compact placement policy must be in one zone, and this policy's are in zone 'us-central1-a'."},
		{"bulk names a URL", func() error {
			req := batch{names: []string{"bulk-3"}, count: 1}.request()
			req.BulkInsertInstanceResourceResource.InstanceProperties.ResourcePolicies = []string{policyBase + "gang"}
			_, err := f.instances.BulkInsert(ctx, req)
			return err
		}, 400, "invalid", ""},
		{"delete while in use", func() error {
			_, err := policies.Delete(ctx, &computepb.DeleteResourcePolicyRequest{Project: project, Region: region, ResourcePolicy: "gang"})
			return err
		}, 400, "resourceInUseByAnotherResource",
			"The resource_policy resource 'projects/gpufleet-test/regions/us-central1/resourcePolicies/gang' is already being used by 'projects/gpufleet-test/zones/us-central1-a/instances/by-path'"},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			wantAPIError(t, tt.call(), tt.status, tt.reason, tt.message)
		})
	}
	for _, name := range []string{"lost", "far", "apart", "bulk-3"} {
		if _, ok := f.world.ByName("gcp", "projects/gpufleet-test/zones/us-central1-a", name); ok {
			t.Errorf("refused instance %s was made", name)
		}
	}

	// A policy that does not collocate spans zones.
	makePolicy(t, policies, "spread", "UNSPECIFIED_COLLOCATION")
	if err := f.insertIn(vm{name: "spread-a"}, "regions/us-central1/resourcePolicies/spread"); err != nil {
		t.Fatal(err)
	}
	if err := f.insertIn(vm{name: "spread-b", zone: "us-central1-b"}, "regions/us-central1/resourcePolicies/spread"); err != nil {
		t.Fatal(err)
	}

	for _, name := range []string{"by-path", "by-url", "bulk-1", "bulk-2"} {
		op, err := f.instances.Delete(ctx, &computepb.DeleteInstanceRequest{Project: project, Zone: zone, Instance: name})
		if err != nil {
			t.Fatal(err)
		}
		if err := op.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	del, err := policies.Delete(ctx, &computepb.DeleteResourcePolicyRequest{Project: project, Region: region, ResourcePolicy: "gang"})
	if err != nil {
		t.Fatalf("deleting the emptied policy: %v", err)
	}
	if err := del.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	// With the compact policy gone, its name is free again, and a new one
	// may be in another zone.
	makePolicy(t, policies, "gang", "COLLOCATED")
	if err := f.insertIn(vm{name: "moved", zone: "us-central1-b"}, "regions/us-central1/resourcePolicies/gang"); err != nil {
		t.Fatal(err)
	}
}

// Faults reach the policy calls by their method names.
func TestResourcePolicyFaults(t *testing.T) {
	f := newFixture(t, sim.Config{}, Options{})
	policies, _ := f.policyClients(t)
	ctx := context.Background()
	f.addFault(t, sim.Fault{Cloud: "gcp", Op: OpPolicyInsert, Kind: "server-error", Code: "forbidden"})
	_, err := policies.Insert(ctx, compactPolicy("gang", "COLLOCATED"))
	wantAPIError(t, err, 403, "forbidden", "Required 'compute.resourcePolicies.create' permission for 'projects/gpufleet-test/regions/us-central1/resourcePolicies/gang'")
	if f.calls(OpPolicyInsert) != 1 {
		t.Errorf("%d insert calls counted, want 1", f.calls(OpPolicyInsert))
	}
}
