// SPDX-License-Identifier: Apache-2.0

package gcesim

import (
	"context"
	"errors"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	"github.com/googleapis/gax-go/v2/apierror"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/option"
	"google.golang.org/protobuf/proto"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

const (
	project = "gpufleet-test"
	zone    = "us-central1-a"
)

// start is when every test world begins, so timestamps can be asserted.
var start = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// fixture is a world on a manual clock behind a front on loopback, with the
// official SDK clients pointed at it.
type fixture struct {
	world      *sim.World
	clock      *sim.ManualClock
	server     *Server
	url        string
	instances  *compute.InstancesClient
	operations *compute.ZoneOperationsClient
	regions    *compute.RegionsClient
	projects   *compute.ProjectsClient
	types      *compute.MachineTypesClient
	disks      *compute.DisksClient
}

func newFixture(t *testing.T, cfg sim.Config, opts Options) *fixture {
	t.Helper()
	clock := sim.NewManualClock(start)
	cfg.Clock = clock
	world, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := New(world, opts)
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	// The SDK talks only to the loopback server: its own HTTP client, no
	// credentials, no metadata server.
	clientOpts := []option.ClientOption{option.WithEndpoint(ts.URL), option.WithHTTPClient(ts.Client())}
	ctx := context.Background()
	instances, err := compute.NewInstancesRESTClient(ctx, clientOpts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { instances.Close() })
	operations, err := compute.NewZoneOperationsRESTClient(ctx, clientOpts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { operations.Close() })
	regions, err := compute.NewRegionsRESTClient(ctx, clientOpts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { regions.Close() })
	projects, err := compute.NewProjectsRESTClient(ctx, clientOpts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { projects.Close() })
	types, err := compute.NewMachineTypesRESTClient(ctx, clientOpts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { types.Close() })
	disks, err := compute.NewDisksRESTClient(ctx, clientOpts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { disks.Close() })
	t.Cleanup(func() {
		if n := srv.panics.Load(); n != 0 {
			t.Errorf("%d requests reached the panic recovery", n)
		}
	})
	return &fixture{world: world, clock: clock, server: srv, url: ts.URL, instances: instances, operations: operations,
		regions: regions, projects: projects, types: types, disks: disks}
}

// vm describes an instance to insert; the zero value is a valid on-demand
// L4 VM.
type vm struct {
	name, zone, machineType string
	labels                  map[string]string
	spot                    bool
	terminationAction       string
	requestID               string
}

func (v vm) request() *computepb.InsertInstanceRequest {
	if v.zone == "" {
		v.zone = zone
	}
	if v.machineType == "" {
		v.machineType = "g2-standard-4"
	}
	res := &computepb.Instance{
		Name:        proto.String(v.name),
		MachineType: proto.String("zones/" + v.zone + "/machineTypes/" + v.machineType),
		Labels:      v.labels,
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
	}
	if v.spot {
		res.Scheduling.ProvisioningModel = proto.String("SPOT")
		res.Scheduling.AutomaticRestart = proto.Bool(false)
		res.Scheduling.InstanceTerminationAction = proto.String(v.terminationAction)
	}
	req := &computepb.InsertInstanceRequest{Project: project, Zone: v.zone, InstanceResource: res}
	if v.requestID != "" {
		req.RequestId = proto.String(v.requestID)
	}
	return req
}

// create inserts an instance, waits for its operation and reads it back.
func (f *fixture) create(t *testing.T, v vm) *computepb.Instance {
	t.Helper()
	ctx := context.Background()
	op, err := f.instances.Insert(ctx, v.request())
	if err != nil {
		t.Fatalf("inserting %s: %v", v.name, err)
	}
	if err := op.Wait(ctx); err != nil {
		t.Fatalf("waiting for %s: %v", v.name, err)
	}
	if e := op.Proto().GetError(); e != nil {
		t.Fatalf("inserting %s failed: %v", v.name, e)
	}
	return f.get(t, v.zoneOr(), v.name)
}

// zoneSelling is the first zone of region whose catalog sells every one
// of types on demand.
func zoneSelling(t *testing.T, w *sim.World, region string, types ...string) string {
	t.Helper()
	r, ok := w.Catalog().Region(cloud, region)
	if !ok {
		t.Fatalf("no region %s", region)
	}
	for _, z := range r.Zones {
		if !slices.ContainsFunc(types, func(typ string) bool { _, ok := w.Type(cloud, z, typ, catalog.OnDemand); return !ok }) {
			return z
		}
	}
	t.Fatalf("no zone of %s sells %v", region, types)
	return ""
}

func (v vm) zoneOr() string {
	if v.zone == "" {
		return zone
	}
	return v.zone
}

func (f *fixture) get(t *testing.T, zone, name string) *computepb.Instance {
	t.Helper()
	inst, err := f.instances.Get(context.Background(), &computepb.GetInstanceRequest{Project: project, Zone: zone, Instance: name})
	if err != nil {
		t.Fatalf("getting %s: %v", name, err)
	}
	return inst
}

// link is the URL the front writes for a resource path: under the base
// the request came on, which for the fixture's clients is the loopback
// server's.
func (f *fixture) link(path string) string { return f.url + "/compute/v1/" + path }

// zoneLink is the URL of the test zone.
func (f *fixture) zoneLink() string { return f.link(scope(project, zone)) }

func (f *fixture) calls(op string) int { return f.world.Calls()["gcp "+op] }

func (f *fixture) addFault(t *testing.T, fault sim.Fault) {
	t.Helper()
	if fault.Times == 0 && fault.Rate == 0 {
		fault.Times = 1
	}
	if err := f.world.AddFaults(&fault); err != nil {
		t.Fatal(err)
	}
}

// wantAPIError asserts that err is the SDK's own error for an HTTP error
// from GCE, with the status, reason and message given.
func wantAPIError(t *testing.T, err error, status int, reason, message string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want %d %s", status, reason)
	}
	var apiErr *apierror.APIError
	if !errors.As(err, &apiErr) {
		t.Fatalf("error %v (%T) is not an *apierror.APIError", err, err)
	}
	if apiErr.HTTPCode() != status {
		t.Errorf("HTTP code %d, want %d", apiErr.HTTPCode(), status)
	}
	var gerr *googleapi.Error
	if !errors.As(err, &gerr) {
		t.Fatalf("error %v does not wrap a *googleapi.Error", err)
	}
	if gerr.Code != status {
		t.Errorf("googleapi code %d, want %d", gerr.Code, status)
	}
	if len(gerr.Errors) != 1 || gerr.Errors[0].Reason != reason {
		t.Errorf("errors %+v, want one with reason %q", gerr.Errors, reason)
	}
	if message != "" && gerr.Message != message {
		t.Errorf("message\n got %q\nwant %q", gerr.Message, message)
	}
}
