// SPDX-License-Identifier: Apache-2.0

package gcesim

import (
	"context"
	"errors"
	"testing"
	"time"

	"cloud.google.com/go/compute/apiv1/computepb"
	"github.com/googleapis/gax-go/v2/apierror"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

const stockOut = "The zone 'projects/gpufleet-test/zones/us-central1-a' does not have enough resources available to fulfill the request. Try a different zone, or try again later."

// TestSynchronousFaults covers faults GCE reports on the request itself:
// the SDK returns them as an *apierror.APIError wrapping a
// *googleapi.Error with the HTTP code and reason.
func TestSynchronousFaults(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name    string
		fault   sim.Fault
		call    func(f *fixture) error
		status  int
		reason  string
		message string
	}{
		{
			name:  "throttled insert",
			fault: sim.Fault{Kind: sim.FaultThrottle},
			call: func(f *fixture) error {
				_, err := f.instances.Insert(ctx, vm{name: "x"}.request())
				return err
			},
			status: 403, reason: "rateLimitExceeded", message: "Rate Limit Exceeded",
		},
		{
			name:  "throttled list",
			fault: sim.Fault{Kind: sim.FaultThrottle, Op: OpAggregatedList},
			call: func(f *fixture) error {
				_, err := f.instances.AggregatedList(ctx, &computepb.AggregatedListInstancesRequest{Project: project}).Next()
				return err
			},
			status: 403, reason: "rateLimitExceeded", message: "Rate Limit Exceeded",
		},
		{
			name:  "server error on insert",
			fault: sim.Fault{Kind: sim.FaultServerError, Op: OpInsert},
			call: func(f *fixture) error {
				_, err := f.instances.Insert(ctx, vm{name: "x"}.request())
				return err
			},
			status: 500, reason: "backendError", message: "Internal error. Please try again or contact Google Support.",
		},
		{
			name:  "stock-out asked for synchronously",
			fault: sim.Fault{Kind: sim.FaultCapacity, Code: "insufficientCapacity"},
			call: func(f *fixture) error {
				_, err := f.instances.Insert(ctx, vm{name: "x"}.request())
				return err
			},
			status: 503, reason: "insufficientCapacity", message: stockOut,
		},
		{
			name:  "quota asked for synchronously",
			fault: sim.Fault{Kind: sim.FaultQuota, Code: "quotaExceeded", InstanceType: "a3-highgpu-8g"},
			call: func(f *fixture) error {
				_, err := f.instances.Insert(ctx, vm{name: "x", machineType: "a3-highgpu-8g"}.request())
				return err
			},
			status: 403, reason: "quotaExceeded", message: "Quota 'NVIDIA_H100_GPUS' exceeded. Limit: 1048576.0 in region us-central1.",
		},
		{
			name:  "throttled delete",
			fault: sim.Fault{Kind: sim.FaultThrottle, Op: OpDelete},
			call: func(f *fixture) error {
				_, err := f.instances.Delete(ctx, &computepb.DeleteInstanceRequest{Project: project, Zone: zone, Instance: "x"})
				return err
			},
			status: 403, reason: "rateLimitExceeded", message: "Rate Limit Exceeded",
		},
		{
			name:  "denied regions.get",
			fault: sim.Fault{Kind: sim.FaultServerError, Code: "forbidden", Op: OpRegionGet},
			call: func(f *fixture) error {
				_, err := f.regions.Get(ctx, &computepb.GetRegionRequest{Project: project, Region: "us-central1"})
				return err
			},
			status: 403, reason: "forbidden", message: "Required 'compute.regions.get' permission for 'projects/gpufleet-test/regions/us-central1'",
		},
		{
			name:  "denied projects.get",
			fault: sim.Fault{Kind: sim.FaultServerError, Code: "forbidden", Op: OpProjectGet},
			call: func(f *fixture) error {
				_, err := f.projects.Get(ctx, &computepb.GetProjectRequest{Project: project})
				return err
			},
			status: 403, reason: "forbidden", message: "Required 'compute.projects.get' permission for 'projects/gpufleet-test'",
		},
		{
			name:  "denied machineTypes.list",
			fault: sim.Fault{Kind: sim.FaultServerError, Code: "forbidden", Op: OpMachineTypesList},
			call: func(f *fixture) error {
				_, err := f.types.List(ctx, &computepb.ListMachineTypesRequest{Project: project, Zone: zone}).Next()
				return err
			},
			status: 403, reason: "forbidden", message: "Required 'compute.machineTypes.list' permission for 'projects/gpufleet-test'",
		},
		{
			name:  "denied instances.insert",
			fault: sim.Fault{Kind: sim.FaultThrottle, Code: "forbidden", Op: OpInsert},
			call: func(f *fixture) error {
				_, err := f.instances.Insert(ctx, vm{name: "x"}.request())
				return err
			},
			status: 403, reason: "forbidden", message: "Required 'compute.instances.create' permission for 'projects/gpufleet-test/zones/us-central1-a/instances/x'",
		},
		{
			name:  "token without the scope",
			fault: sim.Fault{Kind: sim.FaultServerError, Code: "insufficientPermissions", Op: OpMachineTypesAggregatedList},
			call: func(f *fixture) error {
				_, err := f.types.AggregatedList(ctx, &computepb.AggregatedListMachineTypesRequest{Project: project}).Next()
				return err
			},
			status: 403, reason: "insufficientPermissions", message: "Request had insufficient authentication scopes.",
		},
		{
			name:  "throttled regions.get",
			fault: sim.Fault{Kind: sim.FaultThrottle, Op: OpRegionGet, Region: "europe-west4"},
			call: func(f *fixture) error {
				_, err := f.regions.Get(ctx, &computepb.GetRegionRequest{Project: project, Region: "europe-west4"})
				return err
			},
			status: 403, reason: "rateLimitExceeded", message: "Rate Limit Exceeded",
		},
		{
			name:  "throttled projects.get",
			fault: sim.Fault{Kind: sim.FaultThrottle, Op: OpProjectGet},
			call: func(f *fixture) error {
				_, err := f.projects.Get(ctx, &computepb.GetProjectRequest{Project: project})
				return err
			},
			status: 403, reason: "rateLimitExceeded", message: "Rate Limit Exceeded",
		},
		{
			name:  "throttled machine types of one zone",
			fault: sim.Fault{Kind: sim.FaultThrottle, Op: OpMachineTypesList, Zone: zone},
			call: func(f *fixture) error {
				_, err := f.types.List(ctx, &computepb.ListMachineTypesRequest{Project: project, Zone: zone}).Next()
				return err
			},
			status: 403, reason: "rateLimitExceeded", message: "Rate Limit Exceeded",
		},
		{
			name: "unknown zone",
			call: func(f *fixture) error {
				_, err := f.instances.Insert(ctx, vm{name: "x", zone: "mars-central1-a"}.request())
				return err
			},
			status: 404, reason: "notFound", message: "The resource 'projects/gpufleet-test/zones/mars-central1-a' was not found",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, sim.Config{}, Options{})
			if tt.fault.Kind != "" {
				f.addFault(t, tt.fault)
			}
			wantAPIError(t, tt.call(f), tt.status, tt.reason, tt.message)
			if n := len(f.world.List("gcp", nil)); n != 0 {
				t.Errorf("a refused request left %d instances", n)
			}
		})
	}
}

// TestRetriedServerError shows a 503 on a read is retried by the SDK's
// own policy until it succeeds.
func TestRetriedServerError(t *testing.T) {
	f := newFixture(t, sim.Config{}, Options{})
	f.create(t, vm{name: "steady"})
	f.addFault(t, sim.Fault{Kind: sim.FaultServerError, Code: "503", Op: OpGet, Times: 2})
	f.get(t, zone, "steady")
	// One get in create, then two 503s and the retry that succeeds.
	if n := f.calls(OpGet); n != 4 {
		t.Errorf("get called %d times, want 4", n)
	}
}

// TestOperationFaults covers what GCE reports on the insert operation: the
// insert succeeds, the operation ends DONE with error.errors[] and an HTTP
// status, so the SDK's Operation.Wait returns an *apierror.APIError and the
// codes are in op.Proto().GetError().
func TestOperationFaults(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name        string
		setup       func(f *fixture)
		machineType string
		spot        bool
		code        string
		message     string
		httpStatus  int32
	}{
		{
			name:  "stock-out fault",
			setup: func(f *fixture) { f.addFault(t, sim.Fault{Kind: sim.FaultCapacity}) },
			code:  "ZONE_RESOURCE_POOL_EXHAUSTED", message: stockOut, httpStatus: 503,
		},
		{
			name: "stock-out fault with its own code",
			setup: func(f *fixture) {
				f.addFault(t, sim.Fault{Kind: sim.FaultCapacity, Code: "ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS"})
			},
			code: "ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS", message: stockOut, httpStatus: 503,
		},
		{
			name:  "zone out of capacity",
			setup: func(f *fixture) { f.world.SetCapacity("gcp", zone, "g2-standard-4", catalog.Spot, 0) },
			spot:  true,
			code:  "ZONE_RESOURCE_POOL_EXHAUSTED", message: stockOut, httpStatus: 503,
		},
		{
			name: "quota fault",
			setup: func(f *fixture) {
				f.world.SetQuota("gcp", "us-central1", "NVIDIA_H100_GPUS", 8)
				f.addFault(t, sim.Fault{Kind: sim.FaultQuota})
			},
			machineType: "a3-highgpu-8g",
			code:        "QUOTA_EXCEEDED", message: "Quota 'NVIDIA_H100_GPUS' exceeded. Limit: 8.0 in region us-central1.", httpStatus: 403,
		},
		{
			name:        "region out of quota",
			setup:       func(f *fixture) { f.world.SetQuota("gcp", "us-central1", "NVIDIA_A100_80GB_GPUS", 4) },
			machineType: "a2-ultragpu-8g",
			code:        "QUOTA_EXCEEDED", message: "Quota 'NVIDIA_A100_80GB_GPUS' exceeded. Limit: 4.0 in region us-central1.", httpStatus: 403,
		},
		{
			name:  "fails after acceptance",
			setup: func(f *fixture) { f.addFault(t, sim.Fault{Kind: sim.FaultFailLater}) },
			code:  "ZONE_RESOURCE_POOL_EXHAUSTED", message: stockOut, httpStatus: 503,
		},
		{
			name: "fails after acceptance with its own code",
			setup: func(f *fixture) {
				f.addFault(t, sim.Fault{Kind: sim.FaultFailLater, Code: "ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS"})
			},
			code: "ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS", message: stockOut, httpStatus: 503,
		},
		{
			name:        "fails after acceptance on quota",
			setup:       func(f *fixture) { f.addFault(t, sim.Fault{Kind: sim.FaultFailLater, Code: "QUOTA_EXCEEDED"}) },
			machineType: "g2-standard-48",
			code:        "QUOTA_EXCEEDED", message: "Quota 'NVIDIA_L4_GPUS' exceeded. Limit: 1048576.0 in region us-central1.", httpStatus: 403,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, sim.Config{OperationTime: 20 * time.Second}, Options{})
			tt.setup(f)
			op, err := f.instances.Insert(ctx, vm{name: "doomed", machineType: tt.machineType, spot: tt.spot}.request())
			if err != nil {
				t.Fatalf("insert refused, but GCE accepts and fails the operation: %v", err)
			}
			if got := f.get(t, zone, "doomed").GetStatus(); got != "PROVISIONING" {
				t.Errorf("while the operation runs the instance is %s, want PROVISIONING", got)
			}
			f.clock.Advance(20 * time.Second)

			err = op.Wait(ctx)
			var apiErr *apierror.APIError
			if !errors.As(err, &apiErr) || apiErr.HTTPCode() != int(tt.httpStatus) {
				t.Fatalf("Wait returned %v, want an *apierror.APIError with HTTP %d", err, tt.httpStatus)
			}
			got := op.Proto()
			if got.GetStatus() != computepb.Operation_DONE || got.GetHttpErrorStatusCode() != tt.httpStatus {
				t.Errorf("operation status %v HTTP %d, want DONE %d", got.GetStatus(), got.GetHttpErrorStatusCode(), tt.httpStatus)
			}
			errs := got.GetError().GetErrors()
			if len(errs) != 1 || errs[0].GetCode() != tt.code || errs[0].GetMessage() != tt.message {
				t.Errorf("operation errors %v, want %s: %s", errs, tt.code, tt.message)
			}
			_, err = f.instances.Get(ctx, &computepb.GetInstanceRequest{Project: project, Zone: zone, Instance: "doomed"})
			wantAPIError(t, err, 404, "notFound", "")
		})
	}
}

func TestDeleteFailsAfterAcceptance(t *testing.T) {
	f := newFixture(t, sim.Config{}, Options{})
	ctx := context.Background()
	f.create(t, vm{name: "sticky"})
	f.addFault(t, sim.Fault{Kind: sim.FaultFailLater, Op: OpDelete})
	op, err := f.instances.Delete(ctx, &computepb.DeleteInstanceRequest{Project: project, Zone: zone, Instance: "sticky"})
	if err != nil {
		t.Fatal(err)
	}
	var apiErr *apierror.APIError
	if err := op.Wait(ctx); !errors.As(err, &apiErr) || apiErr.HTTPCode() != 500 {
		t.Errorf("Wait returned %v, want HTTP 500", err)
	}
	if code := op.Proto().GetError().GetErrors()[0].GetCode(); code != "INTERNAL_ERROR" {
		t.Errorf("code %s, want INTERNAL_ERROR", code)
	}
	if got := f.get(t, zone, "sticky").GetStatus(); got != "RUNNING" {
		t.Errorf("after a failed delete the instance is %s, want RUNNING", got)
	}
}

func TestLatency(t *testing.T) {
	f := newFixture(t, sim.Config{}, Options{})
	f.addFault(t, sim.Fault{Kind: sim.FaultLatency, Op: OpInsert, Latency: sim.Duration(200 * time.Millisecond), Times: 2})

	t.Run("slows the call", func(t *testing.T) {
		began := time.Now()
		if _, err := f.instances.Insert(context.Background(), vm{name: "slow"}.request()); err != nil {
			t.Fatal(err)
		}
		if elapsed := time.Since(began); elapsed < 200*time.Millisecond {
			t.Errorf("insert took %v, want at least 200ms", elapsed)
		}
	})
	t.Run("caller's deadline wins", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		_, err := f.instances.Insert(ctx, vm{name: "impatient"}.request())
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("got %v, want the context's deadline", err)
		}
	})
}

// TestSpotPreemption: GCE's signal for a reclaimed spot VM is status
// TERMINATED with lastStopTimestamp; the emulator lists it so for the
// world's PreemptedVisibleFor, then it is gone.
func TestSpotPreemption(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name    string
		preempt func(t *testing.T, f *fixture)
	}{
		{"world preempts", func(t *testing.T, f *fixture) {
			inst := f.world.List("gcp", nil)[0]
			if err := f.world.Preempt(inst.ID); err != nil {
				t.Fatal(err)
			}
		}},
		{"preempt fault on a call", func(t *testing.T, f *fixture) {
			f.addFault(t, sim.Fault{Kind: sim.FaultPreempt, Op: OpAggregatedList})
			if _, err := listNames(t, f, &computepb.AggregatedListInstancesRequest{Project: project}); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, sim.Config{PreemptedVisibleFor: 5 * time.Minute}, Options{})
			f.create(t, vm{name: "cheap", spot: true, terminationAction: "DELETE"})
			f.clock.Advance(time.Hour)
			tt.preempt(t, f)

			inst := f.get(t, zone, "cheap")
			if inst.GetStatus() != "TERMINATED" || inst.GetLastStopTimestamp() != "2026-03-01T13:00:00.000+00:00" {
				t.Errorf("preempted instance: status %s lastStop %q", inst.GetStatus(), inst.GetLastStopTimestamp())
			}
			if s := inst.GetScheduling(); s.GetProvisioningModel() != "SPOT" || s.GetInstanceTerminationAction() != "DELETE" || s.GetAutomaticRestart() {
				t.Errorf("scheduling %v", s)
			}
			f.clock.Advance(5 * time.Minute)
			_, err := f.instances.Get(ctx, &computepb.GetInstanceRequest{Project: project, Zone: zone, Instance: "cheap"})
			wantAPIError(t, err, 404, "notFound", "")
		})
	}
}
