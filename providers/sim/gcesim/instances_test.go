// SPDX-License-Identifier: Apache-2.0

package gcesim

import (
	"context"
	"maps"
	"strconv"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"

	"github.com/gpufleet/gpufleet/providers/sim"
)

func TestInsertCreatesInstance(t *testing.T) {
	const googleBase = "https://www.googleapis.com/compute/v1/projects/gpufleet-test/zones/us-central1-a"
	tests := []struct {
		name        string
		machineType string
	}{
		{"full URL", googleBase + "/machineTypes/a3-highgpu-8g"},
		{"partial URL", "projects/gpufleet-test/zones/us-central1-a/machineTypes/a3-highgpu-8g"},
		{"zonal path", "zones/us-central1-a/machineTypes/a3-highgpu-8g"},
		{"bare name", "a3-highgpu-8g"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, sim.Config{}, Options{User: "ops@example.com"})
			ctx := context.Background()
			labels := map[string]string{"gpufleet-fleet": "demo", "gpufleet-token": "abc"}
			req := vm{name: "train-0", labels: labels, requestID: "8d3c1f9e-2b7a-4c5d-9e6f-0a1b2c3d4e5f"}.request()
			req.InstanceResource.MachineType = proto.String(tt.machineType)

			op, err := f.instances.Insert(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			if err := op.Wait(ctx); err != nil {
				t.Fatal(err)
			}
			got := op.Proto()
			// Links are written under the base the request came on.
			base := f.zoneLink()
			if got.GetOperationType() != "insert" || got.GetStatus() != computepb.Operation_DONE || got.GetProgress() != 100 || got.GetError() != nil {
				t.Errorf("operation %v, want a finished insert without error", got)
			}
			if got.GetTargetLink() != base+"/instances/train-0" || got.GetZone() != base || got.GetUser() != "ops@example.com" {
				t.Errorf("operation links %q %q user %q", got.GetTargetLink(), got.GetZone(), got.GetUser())
			}
			if got.GetSelfLink() != base+"/operations/"+got.GetName() || got.GetId() == 0 {
				t.Errorf("operation selfLink %q id %d", got.GetSelfLink(), got.GetId())
			}
			if got.GetInsertTime() != "2026-03-01T12:00:00.000+00:00" || got.GetEndTime() == "" {
				t.Errorf("operation times insert %q end %q", got.GetInsertTime(), got.GetEndTime())
			}

			inst := f.get(t, zone, "train-0")
			if inst.GetId() != got.GetTargetId() {
				t.Errorf("instance id %d, operation targetId %d", inst.GetId(), got.GetTargetId())
			}
			checks := map[string][2]string{
				"status":            {inst.GetStatus(), "RUNNING"},
				"zone":              {inst.GetZone(), base},
				"machineType":       {inst.GetMachineType(), base + "/machineTypes/a3-highgpu-8g"},
				"selfLink":          {inst.GetSelfLink(), base + "/instances/train-0"},
				"creationTimestamp": {inst.GetCreationTimestamp(), "2026-03-01T12:00:00.000+00:00"},
				"provisioningModel": {inst.GetScheduling().GetProvisioningModel(), "STANDARD"},
				"onHostMaintenance": {inst.GetScheduling().GetOnHostMaintenance(), "TERMINATE"},
				"network":           {inst.GetNetworkInterfaces()[0].GetNetwork(), f.link("projects/gpufleet-test/global/networks/default")},
				"subnetwork":        {inst.GetNetworkInterfaces()[0].GetSubnetwork(), f.link("projects/gpufleet-test/regions/us-central1/subnetworks/default")},
				"diskSizeGb":        {strconv.FormatInt(inst.GetDisks()[0].GetDiskSizeGb(), 10), "200"},
			}
			for field, c := range checks {
				if c[0] != c[1] {
					t.Errorf("%s = %q, want %q", field, c[0], c[1])
				}
			}
			if !maps.Equal(inst.GetLabels(), labels) {
				t.Errorf("labels %v, want %v", inst.GetLabels(), labels)
			}
			if inst.LastStopTimestamp != nil {
				t.Errorf("a running instance has lastStopTimestamp %q", inst.GetLastStopTimestamp())
			}
			// One insert and one poll of its operation, which was done at
			// once; then the get.
			for op, want := range map[string]int{OpInsert: 1, OpOperationGet: 1, OpGet: 1} {
				if n := f.calls(op); n != want {
					t.Errorf("%s called %d times, want %d", op, n, want)
				}
			}
		})
	}
}

func TestOperationLifecycle(t *testing.T) {
	f := newFixture(t, sim.Config{OperationTime: 30 * time.Second, PendingFor: 90 * time.Second}, Options{})
	ctx := context.Background()
	op, err := f.instances.Insert(ctx, vm{name: "slow"}.request())
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name      string
		advance   time.Duration
		opStatus  computepb.Operation_Status
		vmStatus  string
		startTime bool
	}{
		{"accepted", 0, computepb.Operation_PENDING, "PROVISIONING", false},
		{"running", 10 * time.Second, computepb.Operation_RUNNING, "PROVISIONING", true},
		{"operation done", 20 * time.Second, computepb.Operation_DONE, "STAGING", true},
		{"booted", 60 * time.Second, computepb.Operation_DONE, "RUNNING", true},
	}
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			f.clock.Advance(step.advance)
			if err := op.Poll(ctx); err != nil {
				t.Fatal(err)
			}
			if got := op.Proto().GetStatus(); got != step.opStatus {
				t.Errorf("operation status %v, want %v", got, step.opStatus)
			}
			if got := op.Proto().StartTime != nil; got != step.startTime {
				t.Errorf("operation has startTime: %v, want %v", got, step.startTime)
			}
			if got := f.get(t, zone, "slow").GetStatus(); got != step.vmStatus {
				t.Errorf("instance status %q, want %q", got, step.vmStatus)
			}
		})
	}
	if n := f.calls(OpOperationGet); n != len(steps) {
		t.Errorf("operation polled %d times, want %d", n, len(steps))
	}
}

func TestWaitOperation(t *testing.T) {
	f := newFixture(t, sim.Config{OperationTime: time.Minute}, Options{WaitTimeout: 300 * time.Millisecond, PollInterval: 5 * time.Millisecond})
	ctx := context.Background()
	op, err := f.instances.Insert(ctx, vm{name: "waited"}.request())
	if err != nil {
		t.Fatal(err)
	}
	wait := func() (*computepb.Operation, error) {
		return f.operations.Wait(ctx, &computepb.WaitZoneOperationRequest{Project: project, Zone: zone, Operation: op.Name()})
	}

	t.Run("gives up after the real-clock cap", func(t *testing.T) {
		began := time.Now()
		got, err := wait()
		if err != nil {
			t.Fatal(err)
		}
		if got.GetStatus() == computepb.Operation_DONE {
			t.Errorf("operation is DONE before its time")
		}
		if elapsed := time.Since(began); elapsed < 300*time.Millisecond {
			t.Errorf("wait returned after %v, before the 300ms cap", elapsed)
		}
	})
	t.Run("returns when the operation is done", func(t *testing.T) {
		var wg sync.WaitGroup
		wg.Go(func() {
			time.Sleep(50 * time.Millisecond)
			f.clock.Advance(time.Minute)
		})
		got, err := wait()
		wg.Wait()
		if err != nil {
			t.Fatal(err)
		}
		if got.GetStatus() != computepb.Operation_DONE {
			t.Errorf("status %v, want DONE", got.GetStatus())
		}
	})
	t.Run("unknown operation", func(t *testing.T) {
		_, err := f.operations.Wait(ctx, &computepb.WaitZoneOperationRequest{Project: project, Zone: zone, Operation: "operation-0-00000000"})
		wantAPIError(t, err, 404, "notFound", "The resource 'projects/gpufleet-test/zones/us-central1-a/operations/operation-0-00000000' was not found")
	})
	t.Run("operation of another zone", func(t *testing.T) {
		_, err := f.operations.Get(ctx, &computepb.GetZoneOperationRequest{Project: project, Zone: "us-central1-b", Operation: op.Name()})
		wantAPIError(t, err, 404, "notFound", "")
	})
	if n := f.calls(OpOperationWait); n != 3 {
		t.Errorf("wait called %d times, want 3", n)
	}
}

func TestInsertIsIdempotentOnRequestID(t *testing.T) {
	f := newFixture(t, sim.Config{OperationTime: time.Minute}, Options{})
	ctx := context.Background()
	req := vm{name: "once", requestID: "5f0c6a1e-7d2b-4e3a-8c9d-1e2f3a4b5c6d", labels: map[string]string{"slot": "0"}}.request()
	first, err := f.instances.Insert(ctx, req)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("retry while running", func(t *testing.T) {
		again, err := f.instances.Insert(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if again.Name() != first.Name() {
			t.Errorf("retry returned operation %s, want the original %s", again.Name(), first.Name())
		}
	})
	t.Run("retry after done, with another body", func(t *testing.T) {
		f.clock.Advance(time.Minute)
		changed := proto.Clone(req).(*computepb.InsertInstanceRequest)
		changed.InstanceResource.Labels = map[string]string{"slot": "1"}
		again, err := f.instances.Insert(ctx, changed)
		if err != nil {
			t.Fatal(err)
		}
		if again.Name() != first.Name() || !again.Done() {
			t.Errorf("retry returned operation %s (done %v), want the finished original %s", again.Name(), again.Done(), first.Name())
		}
		if got := f.get(t, zone, "once").GetLabels()["slot"]; got != "0" {
			t.Errorf("the retry changed the instance: slot %q", got)
		}
	})
	t.Run("one instance", func(t *testing.T) {
		if n := len(f.world.List("gcp", nil)); n != 1 {
			t.Errorf("%d instances, want 1", n)
		}
	})
	t.Run("same name, new requestId", func(t *testing.T) {
		other := proto.Clone(req).(*computepb.InsertInstanceRequest)
		other.RequestId = proto.String("0b7e4c2a-1f3d-4a5b-9c8d-7e6f5a4b3c2d")
		_, err := f.instances.Insert(ctx, other)
		wantAPIError(t, err, 409, "alreadyExists", "The resource 'projects/gpufleet-test/zones/us-central1-a/instances/once' already exists")
	})
	t.Run("same name in another zone", func(t *testing.T) {
		other := vm{name: "once", zone: "us-central1-b"}.request()
		if _, err := f.instances.Insert(ctx, other); err != nil {
			t.Errorf("names are unique per zone, but: %v", err)
		}
	})
}

func TestDelete(t *testing.T) {
	f := newFixture(t, sim.Config{}, Options{})
	ctx := context.Background()
	created := f.create(t, vm{name: "doomed"})
	const requestID = "3a2b1c0d-9e8f-4a7b-8c6d-5e4f3a2b1c0d"
	del := &computepb.DeleteInstanceRequest{Project: project, Zone: zone, Instance: "doomed", RequestId: proto.String(requestID)}

	op, err := f.instances.Delete(ctx, del)
	if err != nil {
		t.Fatal(err)
	}
	if err := op.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if got := op.Proto(); got.GetOperationType() != "delete" || got.GetTargetId() != created.GetId() || got.GetError() != nil {
		t.Errorf("operation %v, want a successful delete of %d", got, created.GetId())
	}

	tests := []struct {
		name string
		call func() error
		want func(t *testing.T, err error)
	}{
		{"get after delete", func() error {
			_, err := f.instances.Get(ctx, &computepb.GetInstanceRequest{Project: project, Zone: zone, Instance: "doomed"})
			return err
		}, func(t *testing.T, err error) {
			wantAPIError(t, err, 404, "notFound", "The resource 'projects/gpufleet-test/zones/us-central1-a/instances/doomed' was not found")
		}},
		{"retry with the same requestId", func() error {
			again, err := f.instances.Delete(ctx, del)
			if err == nil && again.Name() != op.Name() {
				t.Errorf("retry returned operation %s, want %s", again.Name(), op.Name())
			}
			return err
		}, func(t *testing.T, err error) {
			if err != nil {
				t.Errorf("retry failed: %v", err)
			}
		}},
		{"delete again without requestId", func() error {
			_, err := f.instances.Delete(ctx, &computepb.DeleteInstanceRequest{Project: project, Zone: zone, Instance: "doomed"})
			return err
		}, func(t *testing.T, err error) {
			wantAPIError(t, err, 404, "notFound", "The resource 'projects/gpufleet-test/zones/us-central1-a/instances/doomed' was not found")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.want(t, tt.call()) })
	}
}

func TestGetByNumericID(t *testing.T) {
	f := newFixture(t, sim.Config{}, Options{})
	created := f.create(t, vm{name: "by-id"})
	got := f.get(t, zone, strconv.FormatUint(created.GetId(), 10))
	if got.GetName() != "by-id" {
		t.Errorf("got %q by id, want by-id", got.GetName())
	}
	_, err := f.instances.Get(context.Background(), &computepb.GetInstanceRequest{Project: project, Zone: "us-central1-b", Instance: strconv.FormatUint(created.GetId(), 10)})
	wantAPIError(t, err, 404, "notFound", "")
}
