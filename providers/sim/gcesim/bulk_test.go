// SPDX-License-Identifier: Apache-2.0

package gcesim

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	"github.com/googleapis/gax-go/v2/apierror"
	"google.golang.org/protobuf/proto"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// zoneBase is the test zone under GCE's own base, which requests may name
// resources by.
const zoneBase = "https://www.googleapis.com/compute/v1/projects/gpufleet-test/zones/us-central1-a"

// batch describes a bulkInsert; the zero value asks for nothing, so each
// test names its instances, by names or by pattern.
type batch struct {
	names           []string
	pattern         string
	count, minCount int64
	machineType     string
	labels          map[string]string
	requestID       string
}

func (b batch) request() *computepb.BulkInsertInstanceRequest {
	if b.machineType == "" {
		b.machineType = "g2-standard-4"
	}
	res := &computepb.BulkInsertInstanceResource{
		InstanceProperties: &computepb.InstanceProperties{
			MachineType: proto.String(b.machineType),
			Labels:      b.labels,
			Disks: []*computepb.AttachedDisk{{
				Boot:       proto.Bool(true),
				AutoDelete: proto.Bool(true),
				InitializeParams: &computepb.AttachedDiskInitializeParams{
					SourceImage: proto.String("projects/debian-cloud/global/images/family/debian-12"),
					DiskSizeGb:  proto.Int64(200),
				},
			}},
			NetworkInterfaces: []*computepb.NetworkInterface{{Network: proto.String("global/networks/default")}},
			Scheduling:        &computepb.Scheduling{OnHostMaintenance: proto.String("TERMINATE")},
			Metadata:          &computepb.Metadata{Items: []*computepb.Items{{Key: proto.String("startup-script"), Value: proto.String("echo hi")}}},
			ServiceAccounts:   []*computepb.ServiceAccount{{Email: proto.String("default"), Scopes: []string{"https://www.googleapis.com/auth/cloud-platform"}}},
		},
	}
	if b.count != 0 {
		res.Count = proto.Int64(b.count)
	}
	if b.minCount != 0 {
		res.MinCount = proto.Int64(b.minCount)
	}
	if b.pattern != "" {
		res.NamePattern = proto.String(b.pattern)
	}
	if len(b.names) > 0 {
		res.PerInstanceProperties = map[string]*computepb.BulkInsertInstanceResourcePerInstanceProperties{}
		for _, name := range b.names {
			res.PerInstanceProperties[name] = &computepb.BulkInsertInstanceResourcePerInstanceProperties{}
		}
	}
	req := &computepb.BulkInsertInstanceRequest{Project: project, Zone: zone, BulkInsertInstanceResourceResource: res}
	if b.requestID != "" {
		req.RequestId = proto.String(b.requestID)
	}
	return req
}

// bulk sends a bulkInsert and waits for its operation, which may fail.
func (f *fixture) bulk(t *testing.T, b batch) (*compute.Operation, error) {
	t.Helper()
	ctx := context.Background()
	op, err := f.instances.BulkInsert(ctx, b.request())
	if err != nil {
		t.Fatalf("bulkInsert refused: %v", err)
	}
	return op, op.Wait(ctx)
}

// zoneStatus is the bulk operation's status for the test zone.
func zoneStatus(t *testing.T, op *computepb.Operation) *computepb.BulkInsertOperationStatus {
	t.Helper()
	st := op.GetInstancesBulkInsertOperationMetadata().GetPerLocationStatus()["zones/"+zone]
	if st == nil {
		t.Fatalf("operation has no perLocationStatus for zones/%s: %v", zone, op.GetInstancesBulkInsertOperationMetadata())
	}
	return st
}

func wantCounts(t *testing.T, op *computepb.Operation, status string, target, created, failed int32) {
	t.Helper()
	st := zoneStatus(t, op)
	if st.GetStatus() != status || st.GetTargetVmCount() != target || st.GetCreatedVmCount() != created ||
		st.GetFailedToCreateVmCount() != failed || st.DeletedVmCount == nil || st.GetDeletedVmCount() != 0 {
		t.Errorf("zone status %v, want %s with target %d, created %d, failed %d, deleted 0", st, status, target, created, failed)
	}
}

func (f *fixture) names(t *testing.T) []string {
	t.Helper()
	names, err := listNames(t, f, &computepb.AggregatedListInstancesRequest{Project: project})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

func TestBulkInsertCreatesAll(t *testing.T) {
	f := newFixture(t, sim.Config{OperationTime: 30 * time.Second, PendingFor: 30 * time.Second}, Options{})
	ctx := context.Background()
	labels := map[string]string{"gpufleet-fleet": "demo", "gpufleet-pool": "l4"}
	op, err := f.instances.BulkInsert(ctx, batch{names: []string{"train-c", "train-a", "train-b"}, count: 3, labels: labels}.request())
	if err != nil {
		t.Fatal(err)
	}

	t.Run("accepted", func(t *testing.T) {
		got := op.Proto()
		if got.GetOperationType() != "bulkInsert" || got.GetStatus() != computepb.Operation_PENDING || got.GetInsertTime() != "2026-03-01T12:00:00.000+00:00" {
			t.Errorf("operation %v, want a pending bulkInsert", got)
		}
		if got.GetTargetLink() != f.zoneLink()+"/instances" || got.TargetId != nil || got.GetZone() != f.zoneLink() || got.GetOperationGroupId() == "" {
			t.Errorf("targetLink %q targetId %v zone %q group %q", got.GetTargetLink(), got.TargetId, got.GetZone(), got.GetOperationGroupId())
		}
		wantCounts(t, got, "CREATING", 3, 0, 0)
		if s := f.get(t, zone, "train-a").GetStatus(); s != "PROVISIONING" {
			t.Errorf("while the operation runs an instance is %s, want PROVISIONING", s)
		}
	})
	t.Run("polled through zoneOperations", func(t *testing.T) {
		f.clock.Advance(30 * time.Second)
		got, err := f.operations.Get(ctx, &computepb.GetZoneOperationRequest{Project: project, Zone: zone, Operation: op.Name()})
		if err != nil {
			t.Fatal(err)
		}
		if got.GetStatus() != computepb.Operation_DONE || got.GetError() != nil || got.GetEndTime() != "2026-03-01T12:00:30.000+00:00" {
			t.Errorf("operation %v, want DONE without error", got)
		}
		wantCounts(t, got, "DONE", 3, 3, 0)
		waited, err := f.operations.Wait(ctx, &computepb.WaitZoneOperationRequest{Project: project, Zone: zone, Operation: op.Name()})
		if err != nil || waited.GetName() != op.Name() || waited.GetStatus() != computepb.Operation_DONE {
			t.Errorf("wait: %v, %v", waited, err)
		}
		if err := op.Wait(ctx); err != nil {
			t.Errorf("the SDK's Wait: %v", err)
		}
		if got := op.Proto().GetOperationGroupId(); got != waited.GetOperationGroupId() {
			t.Errorf("operation group %q, then %q", got, waited.GetOperationGroupId())
		}
	})
	t.Run("listed with their names and labels", func(t *testing.T) {
		f.clock.Advance(time.Minute)
		if got, want := f.names(t), []string{"train-a", "train-b", "train-c"}; !slices.Equal(got, want) {
			t.Errorf("listed %v, want %v", got, want)
		}
		for _, name := range []string{"train-a", "train-b", "train-c"} {
			inst := f.get(t, zone, name)
			if !maps.Equal(inst.GetLabels(), labels) || inst.GetStatus() != "RUNNING" ||
				inst.GetMachineType() != f.zoneLink()+"/machineTypes/g2-standard-4" || inst.GetDisks()[0].GetDiskSizeGb() != 200 {
				t.Errorf("%s: labels %v status %s type %s", name, inst.GetLabels(), inst.GetStatus(), inst.GetMachineType())
			}
		}
	})
	if n := f.calls(OpBulkInsert); n != 1 {
		t.Errorf("bulkInsert called %d times, want 1", n)
	}
}

// TestBulkInsertPartial: between minCount and count, as many as fit are
// created and the operation succeeds, saying how many.
func TestBulkInsertPartial(t *testing.T) {
	f := newFixture(t, sim.Config{}, Options{})
	f.world.SetCapacity("gcp", zone, "g2-standard-4", catalog.OnDemand, 4)
	f.create(t, vm{name: "already"})
	op, err := f.bulk(t, batch{pattern: "part-##", count: 5, minCount: 2})
	if err != nil {
		t.Fatalf("Wait: %v", err)
	}
	if op.Proto().GetError() != nil {
		t.Errorf("a partial fulfilment failed: %v", op.Proto().GetError())
	}
	wantCounts(t, op.Proto(), "DONE", 5, 3, 2)
	if got, want := f.names(t), []string{"already", "part-01", "part-02", "part-03"}; !slices.Equal(got, want) {
		t.Errorf("listed %v, want %v", got, want)
	}
}

// TestBulkInsertShortfall: when fewer than minCount fit, the operation
// fails as an insert's does and nothing is created, not even for a while.
func TestBulkInsertShortfall(t *testing.T) {
	tests := []struct {
		name       string
		setup      func(f *fixture)
		b          batch
		code       string
		message    string
		httpStatus int
	}{
		{"capacity", func(f *fixture) { f.world.SetCapacity("gcp", zone, "g2-standard-4", catalog.OnDemand, 2) },
			batch{names: []string{"a-1", "a-2", "a-3", "a-4"}, count: 4, minCount: 3}, "ZONE_RESOURCE_POOL_EXHAUSTED", stockOut, 503},
		{"capacity, minCount defaulting to count", func(f *fixture) { f.world.SetCapacity("gcp", zone, "g2-standard-4", catalog.OnDemand, 2) },
			batch{pattern: "a-#", count: 3}, "ZONE_RESOURCE_POOL_EXHAUSTED", stockOut, 503},
		{"regional quota", func(f *fixture) { f.world.SetQuota("gcp", "us-central1", "NVIDIA_L4_GPUS", 2) },
			batch{pattern: "q-#", count: 3}, "QUOTA_EXCEEDED", "Quota 'NVIDIA_L4_GPUS' exceeded. Limit: 2.0 in region us-central1.", 403},
		{"global quota", func(f *fixture) { f.world.SetQuota("gcp", "", "GPUS_ALL_REGIONS", 8) },
			batch{pattern: "q-#", count: 3, minCount: 3, machineType: "g2-standard-48"}, "QUOTA_EXCEEDED", "Quota 'GPUS_ALL_REGIONS' exceeded. Limit: 8.0 globally.", 403},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, sim.Config{OperationTime: 20 * time.Second}, Options{})
			tt.setup(f)
			ctx := context.Background()
			op, err := f.instances.BulkInsert(ctx, tt.b.request())
			if err != nil {
				t.Fatalf("bulkInsert refused, but GCE fails the operation: %v", err)
			}
			if names := f.names(t); len(names) != 0 {
				t.Errorf("while the operation runs, %v exist", names)
			}
			f.clock.Advance(20 * time.Second)
			err = op.Wait(ctx)
			var apiErr *apierror.APIError
			if !errors.As(err, &apiErr) || apiErr.HTTPCode() != tt.httpStatus {
				t.Fatalf("Wait returned %v, want an *apierror.APIError with HTTP %d", err, tt.httpStatus)
			}
			errs := op.Proto().GetError().GetErrors()
			if len(errs) != 1 || errs[0].GetCode() != tt.code || errs[0].GetMessage() != tt.message {
				t.Errorf("operation errors %v, want %s: %s", errs, tt.code, tt.message)
			}
			wantCounts(t, op.Proto(), "DONE", int32(tt.b.count), 0, int32(tt.b.count))
			if names := f.names(t); len(names) != 0 {
				t.Errorf("a failed bulkInsert left %v", names)
			}
		})
	}
}

func TestBulkInsertWithinQuota(t *testing.T) {
	f := newFixture(t, sim.Config{}, Options{})
	f.world.SetQuota("gcp", "us-central1", "NVIDIA_L4_GPUS", 3)
	op, err := f.bulk(t, batch{pattern: "q-#", count: 5, minCount: 1})
	if err != nil {
		t.Fatal(err)
	}
	wantCounts(t, op.Proto(), "DONE", 5, 3, 2)
	if q := f.regionQuotas(t, "us-central1")["NVIDIA_L4_GPUS"]; q.GetUsage() != 3 {
		t.Errorf("quota reads %v, want usage 3", q)
	}
}

func TestBulkInsertIsIdempotentOnRequestID(t *testing.T) {
	f := newFixture(t, sim.Config{OperationTime: time.Minute}, Options{})
	ctx := context.Background()
	const requestID = "6b1f0e2d-3c4a-4b5d-8e7f-9a0b1c2d3e4f"
	b := batch{names: []string{"idem-0", "idem-1"}, count: 2, requestID: requestID}
	first, err := f.instances.BulkInsert(ctx, b.request())
	if err != nil {
		t.Fatal(err)
	}
	again := func(t *testing.T, b batch) {
		t.Helper()
		op, err := f.instances.BulkInsert(ctx, b.request())
		if err != nil {
			t.Fatal(err)
		}
		if op.Name() != first.Name() || op.Proto().GetOperationType() != "bulkInsert" {
			t.Errorf("retry returned %s operation %s, want the original %s", op.Proto().GetOperationType(), op.Name(), first.Name())
		}
	}

	t.Run("retry while running", func(t *testing.T) { again(t, b) })
	t.Run("retry after done, with another body", func(t *testing.T) {
		f.clock.Advance(time.Minute)
		again(t, batch{names: []string{"other-0", "other-1", "other-2"}, count: 3, requestID: requestID})
		if got := f.names(t); !slices.Equal(got, []string{"idem-0", "idem-1"}) {
			t.Errorf("listed %v after retries", got)
		}
	})
	t.Run("retry after the instances were deleted", func(t *testing.T) {
		for _, name := range []string{"idem-0", "idem-1"} {
			del, err := f.instances.Delete(ctx, &computepb.DeleteInstanceRequest{Project: project, Zone: zone, Instance: name})
			if err != nil {
				t.Fatal(err)
			}
			f.clock.Advance(time.Minute)
			if err := del.Wait(ctx); err != nil {
				t.Fatal(err)
			}
		}
		again(t, b)
		if got := f.names(t); len(got) != 0 {
			t.Errorf("the retry relaunched %v", got)
		}
	})
	t.Run("insert's requestIds are the same", func(t *testing.T) {
		const shared = "7c2e1f3a-4b5c-4d6e-9f8a-0b1c2d3e4f5a"
		inserted, err := f.instances.Insert(ctx, vm{name: "single", requestID: shared}.request())
		if err != nil {
			t.Fatal(err)
		}
		op, err := f.instances.BulkInsert(ctx, batch{pattern: "single-#", count: 2, requestID: shared}.request())
		if err != nil {
			t.Fatal(err)
		}
		if op.Name() != inserted.Name() {
			t.Errorf("bulkInsert with an insert's requestId returned %s, want the insert's %s", op.Name(), inserted.Name())
		}
		if got := f.names(t); !slices.Equal(got, []string{"single"}) {
			t.Errorf("listed %v", got)
		}
	})
	if n := f.calls(OpBulkInsert); n != 5 {
		t.Errorf("bulkInsert called %d times, want 5", n)
	}
}

// TestBulkInsertNamePattern: numbers start after the biggest one among the
// zone's instances whose names match the pattern, and at 1 without any.
func TestBulkInsertNamePattern(t *testing.T) {
	f := newFixture(t, sim.Config{}, Options{})
	for _, v := range []vm{
		{name: "node-0007"}, {name: "node-0042"},
		{name: "node-12"}, {name: "node-99999"}, {name: "node-9000-old"}, {name: "other-0100"},
		{name: "node-0500", zone: "us-central1-b"},
	} {
		f.create(t, v)
	}
	tests := []struct {
		name, pattern string
		count         int64
		want          []string
	}{
		{"after the biggest match", "node-####", 2, []string{"node-0043", "node-0044"}},
		{"after its own", "node-####", 1, []string{"node-0045"}},
		{"from 1, with a suffix", "w-##-gpu", 3, []string{"w-01-gpu", "w-02-gpu", "w-03-gpu"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := f.names(t)
			if _, err := f.bulk(t, batch{pattern: tt.pattern, count: tt.count}); err != nil {
				t.Fatal(err)
			}
			var added []string
			for _, name := range f.names(t) {
				if !slices.Contains(before, name) {
					added = append(added, name)
				}
			}
			slices.Sort(added)
			if !slices.Equal(added, tt.want) {
				t.Errorf("created %v, want %v", added, tt.want)
			}
		})
	}
}

// TestInvalidBulkInsert sends what the SDK lets a caller send but GCE
// refuses; each is a 400 naming the field, and nothing is created.
func TestInvalidBulkInsert(t *testing.T) {
	names := func(n ...string) func(r *computepb.BulkInsertInstanceResource) {
		return func(r *computepb.BulkInsertInstanceResource) {
			r.NamePattern = nil
			r.PerInstanceProperties = map[string]*computepb.BulkInsertInstanceResourcePerInstanceProperties{}
			for _, name := range n {
				r.PerInstanceProperties[name] = &computepb.BulkInsertInstanceResourcePerInstanceProperties{}
			}
		}
	}
	tests := []struct {
		name    string
		edit    func(r *computepb.BulkInsertInstanceResource)
		reason  string
		message string
	}{
		{"no count", func(r *computepb.BulkInsertInstanceResource) { r.Count = nil },
			"required", "Required field 'resource.count' not specified"},
		{"count of 0", func(r *computepb.BulkInsertInstanceResource) { r.Count = proto.Int64(0) },
			"invalid", "Invalid value for field 'resource.count': '0'. Must be greater than or equal to 1."},
		{"count over the limit", func(r *computepb.BulkInsertInstanceResource) { r.Count = proto.Int64(5001) },
			"invalid", "Invalid value for field 'resource.count': '5001'. Must be less than or equal to 5000."},
		{"minCount over count", func(r *computepb.BulkInsertInstanceResource) { r.MinCount = proto.Int64(3) },
			"invalid", "Invalid value for field 'resource.minCount': '3'. Must be less than or equal to count (2)."},
		{"minCount of 0", func(r *computepb.BulkInsertInstanceResource) { r.MinCount = proto.Int64(0) },
			"invalid", "Invalid value for field 'resource.minCount': '0'. Must be greater than or equal to 1."},
		{"no names", func(r *computepb.BulkInsertInstanceResource) { r.NamePattern = nil },
			"required", "Required field 'resource.namePattern' or 'resource.perInstanceProperties' not specified"},
		{"pattern and names", func(r *computepb.BulkInsertInstanceResource) {
			names("x-1", "x-2")(r)
			r.NamePattern = proto.String("x-#")
		},
			"invalid", "Invalid value for field 'resource.namePattern': 'x-#'. Exactly one of namePattern and perInstanceProperties must be set."},
		{"pattern without placeholder", func(r *computepb.BulkInsertInstanceResource) { r.NamePattern = proto.String("node") },
			"invalid", "Invalid value for field 'resource.namePattern': 'node'. The name pattern must contain one continuous sequence of '#' placeholder characters."},
		{"pattern with two placeholders", func(r *computepb.BulkInsertInstanceResource) { r.NamePattern = proto.String("n-##-#") },
			"invalid", "Invalid value for field 'resource.namePattern': 'n-##-#'. The name pattern must contain one continuous sequence of '#' placeholder characters."},
		{"placeholder of 19", func(r *computepb.BulkInsertInstanceResource) {
			r.NamePattern = proto.String("n-" + strings.Repeat("#", 19))
		},
			"invalid", "Invalid value for field 'resource.namePattern': 'n-" + strings.Repeat("#", 19) + "'. The name pattern placeholder can contain up to 18 characters."},
		{"pattern naming from a digit", func(r *computepb.BulkInsertInstanceResource) { r.NamePattern = proto.String("###") },
			"invalid", "Invalid value for field 'resource.namePattern': '###'. The names it generates must be a match of regex '(?:[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?)'"},
		{"pattern with capitals", func(r *computepb.BulkInsertInstanceResource) { r.NamePattern = proto.String("Node-#") },
			"invalid", ""},
		{"pattern without room", func(r *computepb.BulkInsertInstanceResource) {
			r.NamePattern = proto.String("n-#")
			r.Count = proto.Int64(10)
		},
			"invalid", "Invalid value for field 'resource.namePattern': 'n-#'. The name pattern has room for 9 more names after number 0, not 10."},
		{"name with underscore", names("ok-1", "bad_name"),
			"invalid", "Invalid value for field 'resource.perInstanceProperties': 'bad_name'. Must be a match of regex '(?:[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?)'"},
		{"count above the names", names("only-1"),
			"invalid", "Invalid value for field 'resource.count': '2'. Must equal the number of names in perInstanceProperties (1) when namePattern is not set."},
		{"count below the names", names("n-1", "n-2", "n-3"),
			"invalid", "Invalid value for field 'resource.count': '2'. Must equal the number of names in perInstanceProperties (3) when namePattern is not set."},
		{"no instance properties", func(r *computepb.BulkInsertInstanceResource) { r.InstanceProperties = nil },
			"required", "Required field 'resource.instanceProperties' not specified"},
		{"no machine type", func(r *computepb.BulkInsertInstanceResource) { r.InstanceProperties.MachineType = nil },
			"required", "Required field 'resource.instanceProperties.machineType' not specified"},
		{"machine type as a URL", func(r *computepb.BulkInsertInstanceResource) {
			r.InstanceProperties.MachineType = proto.String("zones/us-central1-a/machineTypes/g2-standard-4")
		}, "invalid", "Invalid value for field 'resource.instanceProperties.machineType': 'zones/us-central1-a/machineTypes/g2-standard-4'. Bulk insert takes a machine type name, such as 'g2-standard-4', not a URL."},
		{"unknown machine type", func(r *computepb.BulkInsertInstanceResource) {
			r.InstanceProperties.MachineType = proto.String("n9-giant-1")
		},
			"invalid", "Invalid value for field 'resource.instanceProperties.machineType': 'n9-giant-1'. Machine type with name 'n9-giant-1' does not exist in zone 'us-central1-a'."},
		{"label key with capitals", func(r *computepb.BulkInsertInstanceResource) {
			r.InstanceProperties.Labels = map[string]string{"Env": "prod"}
		},
			"invalid", "Invalid value for field 'resource.instanceProperties.labels': ''. Label key 'Env' violates format constraints. The key must start with a lowercase character, can only contain lowercase letters, numeric characters, underscores and dashes. The key can be at most 63 characters long. International characters are allowed."},
		{"unknown provisioning model", func(r *computepb.BulkInsertInstanceResource) {
			r.InstanceProperties.Scheduling.ProvisioningModel = proto.String("CHEAP")
		}, "invalid", "Invalid value for field 'resource.instanceProperties.scheduling.provisioningModel': 'CHEAP'. Must be one of [SPOT, STANDARD]."},
		{"no disks", func(r *computepb.BulkInsertInstanceResource) { r.InstanceProperties.Disks = nil },
			"invalid", "Invalid value for field 'resource.instanceProperties.disks': ''. Boot disk must be specified."},
		{"boot disk from a snapshot", func(r *computepb.BulkInsertInstanceResource) {
			init := r.InstanceProperties.Disks[0].InitializeParams
			init.SourceImage, init.SourceSnapshot = nil, proto.String("global/snapshots/base")
		}, "invalid", "Invalid value for field 'resource.instanceProperties.disks[0].initializeParams.sourceSnapshot': 'global/snapshots/base'. Bulk insert cannot create boot disks from snapshots; use an image."},
		{"flexibility policy on a zone", func(r *computepb.BulkInsertInstanceResource) {
			r.InstanceFlexibilityPolicy = &computepb.InstanceFlexibilityPolicy{}
		}, "invalid", "Invalid value for field 'resource.instanceFlexibilityPolicy': ''. Instance flexibility policy is supported only for regional bulkInsert requests."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, sim.Config{}, Options{})
			req := batch{pattern: "fine-#", count: 2}.request()
			tt.edit(req.BulkInsertInstanceResourceResource)
			_, err := f.instances.BulkInsert(context.Background(), req)
			wantAPIError(t, err, 400, tt.reason, tt.message)
			if n := len(f.world.List("gcp", nil)); n != 0 {
				t.Errorf("a refused bulkInsert created %d instances", n)
			}
		})
	}
	t.Run("requestId not a UUID", func(t *testing.T) {
		f := newFixture(t, sim.Config{}, Options{})
		_, err := f.instances.BulkInsert(context.Background(), batch{pattern: "fine-#", count: 2, requestID: "retry-1"}.request())
		wantAPIError(t, err, 400, "invalid", "Invalid value for field 'requestId': 'retry-1'. The request id must be a valid UUID with the exception that zero UUID is not supported (00000000-0000-0000-0000-000000000000).")
	})
}

// TestBulkInsertRefusals covers what GCE refuses other than with a 400.
func TestBulkInsertRefusals(t *testing.T) {
	ctx := context.Background()
	t.Run("a name taken", func(t *testing.T) {
		f := newFixture(t, sim.Config{}, Options{})
		f.create(t, vm{name: "taken"})
		_, err := f.instances.BulkInsert(ctx, batch{names: []string{"free", "taken"}, count: 2}.request())
		wantAPIError(t, err, 409, "alreadyExists", "The resource 'projects/gpufleet-test/zones/us-central1-a/instances/taken' already exists")
		if got := f.names(t); !slices.Equal(got, []string{"taken"}) {
			t.Errorf("listed %v", got)
		}
	})
	t.Run("unknown zone", func(t *testing.T) {
		f := newFixture(t, sim.Config{}, Options{})
		req := batch{pattern: "z-#", count: 1}.request()
		req.Zone = "atlantis-1a"
		_, err := f.instances.BulkInsert(ctx, req)
		wantAPIError(t, err, 404, "notFound", "The resource 'projects/gpufleet-test/zones/atlantis-1a' was not found")
	})
	t.Run("an instance template", func(t *testing.T) {
		f := newFixture(t, sim.Config{}, Options{})
		req := batch{pattern: "z-#", count: 1}.request()
		req.BulkInsertInstanceResourceResource.InstanceProperties = nil
		req.BulkInsertInstanceResourceResource.SourceInstanceTemplate = proto.String("global/instanceTemplates/gpu")
		_, err := f.instances.BulkInsert(ctx, req)
		wantAPIError(t, err, 404, "notFound", "The resource 'projects/gpufleet-test/global/instanceTemplates/gpu' was not found")
	})
}

func TestBulkInsertFaults(t *testing.T) {
	ctx := context.Background()
	t.Run("throttled", func(t *testing.T) {
		f := newFixture(t, sim.Config{}, Options{})
		f.addFault(t, sim.Fault{Kind: sim.FaultThrottle, Op: OpBulkInsert})
		_, err := f.instances.BulkInsert(ctx, batch{pattern: "t-#", count: 2}.request())
		wantAPIError(t, err, 403, "rateLimitExceeded", "Rate Limit Exceeded")
		if n := f.calls(OpBulkInsert); n != 1 {
			t.Errorf("bulkInsert called %d times, want 1", n)
		}
	})
	t.Run("an insert's fault spares it", func(t *testing.T) {
		f := newFixture(t, sim.Config{}, Options{})
		f.addFault(t, sim.Fault{Kind: sim.FaultThrottle, Op: OpInsert})
		if _, err := f.bulk(t, batch{pattern: "t-#", count: 2}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("denied", func(t *testing.T) {
		f := newFixture(t, sim.Config{}, Options{})
		f.addFault(t, sim.Fault{Kind: sim.FaultThrottle, Code: "forbidden", Op: OpBulkInsert})
		_, err := f.instances.BulkInsert(ctx, batch{pattern: "t-#", count: 2}.request())
		wantAPIError(t, err, 403, "forbidden", "Required 'compute.instances.create' permission for 'projects/gpufleet-test/zones/us-central1-a/instances'")
	})
	operationFaults := []struct {
		name    string
		fault   sim.Fault
		code    string
		message string
	}{
		{"fails after acceptance", sim.Fault{Kind: sim.FaultFailLater, Op: OpBulkInsert}, "ZONE_RESOURCE_POOL_EXHAUSTED", stockOut},
		{"stock-out fault", sim.Fault{Kind: sim.FaultCapacity, InstanceType: "g2-standard-4"}, "ZONE_RESOURCE_POOL_EXHAUSTED", stockOut},
		{"quota fault", sim.Fault{Kind: sim.FaultQuota, Op: OpBulkInsert}, "QUOTA_EXCEEDED", "Quota 'NVIDIA_L4_GPUS' exceeded. Limit: 1048576.0 in region us-central1."},
	}
	for _, tt := range operationFaults {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, sim.Config{}, Options{})
			f.addFault(t, tt.fault)
			op, err := f.bulk(t, batch{pattern: "t-#", count: 2, minCount: 1})
			if err == nil {
				t.Fatal("Wait succeeded on a failed operation")
			}
			errs := op.Proto().GetError().GetErrors()
			if len(errs) != 1 || errs[0].GetCode() != tt.code || errs[0].GetMessage() != tt.message {
				t.Errorf("operation errors %v, want %s: %s", errs, tt.code, tt.message)
			}
			if names := f.names(t); len(names) != 0 {
				t.Errorf("a failed bulkInsert left %v", names)
			}
		})
	}
}

// TestBulkInsertJSON checks the wire shape a raw client sees: int64 counts
// as strings in, the operation's metadata under GCE's field names out.
func TestBulkInsertJSON(t *testing.T) {
	f := newFixture(t, sim.Config{}, Options{})
	body := `{"count":"2","namePattern":"raw-#","instanceProperties":{"machineType":"g2-standard-4",` +
		`"disks":[{"boot":true,"initializeParams":{"sourceImage":"projects/debian-cloud/global/images/family/debian-12"}}]}}`
	resp, err := http.Post(f.url+"/compute/v1/projects/gpufleet-test/zones/us-central1-a/instances/bulkInsert", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %s", resp.Status, raw)
	}
	var op struct {
		OperationType string `json:"operationType"`
		Metadata      struct {
			PerLocationStatus map[string]map[string]any `json:"perLocationStatus"`
		} `json:"instancesBulkInsertOperationMetadata"`
	}
	if err := json.Unmarshal(raw, &op); err != nil {
		t.Fatal(err)
	}
	st := op.Metadata.PerLocationStatus["zones/us-central1-a"]
	if op.OperationType != "bulkInsert" || st["status"] != "DONE" || st["targetVmCount"] != 2.0 || st["createdVmCount"] != 2.0 {
		t.Errorf("operation %s", raw)
	}
	if got := f.names(t); !slices.Equal(got, []string{"raw-1", "raw-2"}) {
		t.Errorf("listed %v", got)
	}
}
