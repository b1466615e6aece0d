// SPDX-License-Identifier: Apache-2.0

package gcesim

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"

	"github.com/gpufleet/gpufleet/providers/sim"
)

// A zone's operations are listed, a bulkInsert with an insert for each
// instance it made, in its group, each of which can be read on its own.
func TestListOperations(t *testing.T) {
	f := newFixture(t, sim.Config{OperationTime: time.Minute}, Options{})
	ctx := context.Background()
	single, err := f.instances.Insert(ctx, vm{name: "alone"}.request())
	if err != nil {
		t.Fatal(err)
	}
	bulk, err := f.instances.BulkInsert(ctx, batch{pattern: "b-#", count: 2}.request())
	if err != nil {
		t.Fatal(err)
	}
	group := bulk.Proto().GetOperationGroupId()
	list := func(filter string, page uint32) []*computepb.Operation {
		req := &computepb.ListZoneOperationsRequest{Project: project, Zone: zone, MaxResults: proto.Uint32(page)}
		if filter != "" {
			req.Filter = proto.String(filter)
		}
		return all(t, f.operations.List(ctx, req).Next)
	}
	names := func(ops []*computepb.Operation) []string {
		var out []string
		for _, op := range ops {
			out = append(out, op.GetOperationType()+" "+lastSegment(op.GetTargetLink()))
		}
		return out
	}

	if got := names(list("", 1)); !slices.Equal(got, []string{"insert alone", "bulkInsert instances", "insert b-1", "insert b-2"}) {
		t.Errorf("operations %v", got)
	}
	// gcloud's bulk create finds the group's members with a regex filter.
	members := list(`operationGroupId eq ".*\b`+strings.ReplaceAll(group, "-", `\-`)+`\b.*"`, 0)
	if got := names(members); !slices.Equal(got, []string{"bulkInsert instances", "insert b-1", "insert b-2"}) {
		t.Errorf("the group's operations %v", got)
	}
	if got := names(list(`(operationType eq insert) (targetLink ne ".*/alone")`, 0)); !slices.Equal(got, []string{"insert b-1", "insert b-2"}) {
		t.Errorf("filtered operations %v", got)
	}
	member := members[1]
	if member.GetStatus() != computepb.Operation_PENDING || member.GetOperationGroupId() != group || member.InstancesBulkInsertOperationMetadata != nil ||
		member.GetTargetId() == 0 || member.GetSelfLink() != f.zoneLink()+"/operations/"+member.GetName() {
		t.Errorf("member operation %v", member)
	}

	f.clock.Advance(time.Minute)
	got, err := f.operations.Get(ctx, &computepb.GetZoneOperationRequest{Project: project, Zone: zone, Operation: member.GetName()})
	if err != nil || got.GetStatus() != computepb.Operation_DONE || got.GetTargetLink() != member.GetTargetLink() {
		t.Errorf("member get %v, %v", got, err)
	}
	for _, name := range []string{bulk.Name() + "-2", bulk.Name() + "-01", single.Name() + "-0", "nothing-0"} {
		_, err := f.operations.Get(ctx, &computepb.GetZoneOperationRequest{Project: project, Zone: zone, Operation: name})
		wantAPIError(t, err, 404, "notFound", "")
	}
	for _, filter := range []string{`progress eq x`, `name = a AND status eq DONE`, `name eq "("`} {
		_, err := f.operations.List(ctx, &computepb.ListZoneOperationsRequest{Project: project, Zone: zone, Filter: proto.String(filter)}).Next()
		wantAPIError(t, err, 400, "invalid", "")
	}
}

// A QUOTA_EXCEEDED operation error carries the quotaInfo gcloud prints.
func TestQuotaErrorDetails(t *testing.T) {
	f := newFixture(t, sim.Config{}, Options{})
	ctx := context.Background()
	for _, tt := range []struct {
		region, quota           string
		zone, metric, limitName string
		dimensions              map[string]string
	}{
		{"us-central1", "NVIDIA_L4_GPUS", zone, "compute.googleapis.com/nvidia_l4_gpus", "NVIDIA-L4-GPUS-per-project-region", map[string]string{"region": "us-central1"}},
		{"", "GPUS_ALL_REGIONS", "europe-west4-a", "compute.googleapis.com/gpus_all_regions", "GPUS-ALL-REGIONS-per-project", nil},
	} {
		t.Run(tt.quota, func(t *testing.T) {
			f.world.SetQuota(cloud, tt.region, tt.quota, 0)
			op, err := f.instances.Insert(ctx, vm{name: "over", zone: tt.zone}.request())
			if err != nil {
				t.Fatal(err)
			}
			_ = op.Wait(ctx)
			errs := op.Proto().GetError().GetErrors()
			if len(errs) != 1 || errs[0].GetCode() != "QUOTA_EXCEEDED" || len(errs[0].GetErrorDetails()) != 1 {
				t.Fatalf("errors %v", errs)
			}
			info := errs[0].GetErrorDetails()[0].GetQuotaInfo()
			if info.GetMetricName() != tt.metric || info.GetLimitName() != tt.limitName || info.GetLimit() != 0 || len(info.GetDimensions()) != len(tt.dimensions) ||
				info.GetDimensions()["region"] != tt.dimensions["region"] {
				t.Errorf("quotaInfo %v", info)
			}
		})
	}
}

// The aggregated list has every scope's operations: zonal ones and those
// on networks.
func TestAggregatedOperations(t *testing.T) {
	f := newFixture(t, sim.Config{}, Options{})
	ctx := context.Background()
	f.create(t, vm{name: "a"})
	f.create(t, vm{name: "b", zone: "europe-west4-a"})
	networks := client(t, f, compute.NewNetworksRESTClient)
	if _, err := networks.Insert(ctx, &computepb.InsertNetworkRequest{Project: project, NetworkResource: &computepb.Network{
		Name: proto.String("n"), AutoCreateSubnetworks: proto.Bool(true)}}); err != nil {
		t.Fatal(err)
	}
	globalOps := client(t, f, compute.NewGlobalOperationsRESTClient)
	seen := map[string][]string{}
	for _, pair := range all(t, globalOps.AggregatedList(ctx, &computepb.AggregatedListGlobalOperationsRequest{Project: project, MaxResults: proto.Uint32(1)}).Next) {
		for _, op := range pair.Value.GetOperations() {
			seen[pair.Key] = append(seen[pair.Key], op.GetOperationType()+" "+lastSegment(op.GetTargetLink()))
		}
	}
	want := map[string][]string{"global": {"insert n"}, "zones/europe-west4-a": {"insert b"}, "zones/us-central1-a": {"insert a"}}
	if !maps.EqualFunc(seen, want, slices.Equal) {
		t.Errorf("aggregated operations %v, want %v", seen, want)
	}
}

// A preemption is an operation GCE records itself, of type
// compute.instances.preempted, done, by the system, on the VM it took
// back; a delete of a spot VM is not one, though the VM stops the same
// way. It is how a caller tells the two apart.
func TestAPreemptionIsAnOperation(t *testing.T) {
	f := newFixture(t, sim.Config{}, Options{})
	ctx := context.Background()
	taken := f.create(t, vm{name: "taken", spot: true, terminationAction: "DELETE"})
	deleted := f.create(t, vm{name: "deleted", spot: true, terminationAction: "DELETE"})
	if err := f.world.Preempt(strconv.FormatUint(taken.GetId(), 10)); err != nil {
		t.Fatal(err)
	}
	op, err := f.instances.Delete(ctx, &computepb.DeleteInstanceRequest{Project: project, Zone: zone, Instance: deleted.GetName()})
	if err != nil {
		t.Fatal(err)
	}
	if err := op.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	got := all(t, f.operations.List(ctx, &computepb.ListZoneOperationsRequest{
		Project: project, Zone: zone, Filter: proto.String(`operationType="compute.instances.preempted"`),
	}).Next)
	if len(got) != 1 {
		t.Fatalf("preemptions %v, want the one", got)
	}
	p := got[0]
	if p.GetTargetId() != taken.GetId() || p.GetTargetLink() != f.zoneLink()+"/instances/taken" || p.GetStatus() != computepb.Operation_DONE || p.GetUser() != "system" {
		t.Errorf("the preemption reads %v", p)
	}
	again, err := f.operations.Get(ctx, &computepb.GetZoneOperationRequest{Project: project, Zone: zone, Operation: p.GetName()})
	if err != nil || again.GetOperationType() != "compute.instances.preempted" {
		t.Errorf("the preemption read on its own: %v, %v", again, err)
	}
}
