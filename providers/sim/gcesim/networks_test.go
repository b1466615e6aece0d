// SPDX-License-Identifier: Apache-2.0

package gcesim

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/api/option"
	"google.golang.org/protobuf/proto"

	"github.com/gpufleet/gpufleet/providers/sim"
)

// Every project has the default network, in auto mode, with a
// subnetwork in every region; networks and subnetworks made by a client
// are kept, and instances are checked against them.
func TestNetworksAndSubnetworks(t *testing.T) {
	f := newFixture(t, sim.Config{}, Options{})
	ctx := context.Background()
	networks := client(t, f, compute.NewNetworksRESTClient)
	subnets := client(t, f, compute.NewSubnetworksRESTClient)

	def, err := networks.Get(ctx, &computepb.GetNetworkRequest{Project: project, Network: "default"})
	if err != nil {
		t.Fatal(err)
	}
	regions := len(f.world.Catalog().RegionsOf(cloud))
	if !def.GetAutoCreateSubnetworks() || len(def.GetSubnetworks()) != regions || def.GetMtu() != 1460 ||
		def.GetSelfLink() != f.link("projects/"+project+"/global/networks/default") || def.GetRoutingConfig().GetRoutingMode() != "REGIONAL" {
		t.Errorf("default network %v", def)
	}
	sub, err := subnets.Get(ctx, &computepb.GetSubnetworkRequest{Project: project, Region: "europe-west4", Subnetwork: "default"})
	if err != nil {
		t.Fatal(err)
	}
	if sub.GetIpCidrRange() != "10.164.0.0/20" || sub.GetGatewayAddress() != "10.164.0.1" || sub.GetNetwork() != def.GetSelfLink() {
		t.Errorf("europe-west4's default subnetwork %v", sub)
	}

	op, err := networks.Insert(ctx, &computepb.InsertNetworkRequest{Project: project, NetworkResource: &computepb.Network{
		Name: proto.String("gpu"), AutoCreateSubnetworks: proto.Bool(false)}})
	if err != nil {
		t.Fatal(err)
	}
	if err := op.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if got := op.Proto(); got.GetOperationType() != "insert" || got.GetTargetLink() != f.link("projects/"+project+"/global/networks/gpu") ||
		got.GetSelfLink() != f.link("projects/"+project+"/global/operations/"+got.GetName()) {
		t.Errorf("network insert %v", got)
	}
	insertSub := func(name, region, network, cidr string) (*compute.Operation, error) {
		return subnets.Insert(ctx, &computepb.InsertSubnetworkRequest{Project: project, Region: region, SubnetworkResource: &computepb.Subnetwork{
			Name: proto.String(name), Network: proto.String(network), IpCidrRange: proto.String(cidr)}})
	}
	op, err = insertSub("nodes", "us-central1", "global/networks/gpu", "10.8.0.0/24")
	if err != nil {
		t.Fatal(err)
	}
	if err := op.Wait(ctx); err != nil {
		t.Fatal(err)
	}

	refused := []struct {
		name            string
		call            func() error
		status          int
		reason, message string
	}{
		{name: "network exists", call: func() error {
			_, err := networks.Insert(ctx, &computepb.InsertNetworkRequest{Project: project, NetworkResource: &computepb.Network{Name: proto.String("gpu"), AutoCreateSubnetworks: proto.Bool(true)}})
			return err
		}, status: 409, reason: "alreadyExists", message: "The resource 'projects/gpufleet-test/global/networks/gpu' already exists"},
		{name: "legacy network", call: func() error {
			_, err := networks.Insert(ctx, &computepb.InsertNetworkRequest{Project: project, NetworkResource: &computepb.Network{Name: proto.String("legacy")}})
			return err
		}, status: 400, reason: "invalid"},
		{name: "subnetwork of no network", call: func() error {
			_, err := insertSub("x", "us-central1", "global/networks/none", "10.9.0.0/24")
			return err
		},
			status: 400, reason: "invalid", message: "Invalid value for field 'resource.network': 'projects/gpufleet-test/global/networks/none'. The referenced network resource cannot be found."},
		{name: "overlapping range", call: func() error { _, err := insertSub("x", "us-east1", "gpu", "10.8.0.128/25"); return err },
			status: 400, reason: "invalid", message: "Invalid value for field 'resource.ipCidrRange': '10.8.0.128/25'. Invalid IPCidrRange: 10.8.0.128/25 conflicts with existing subnetwork 'nodes' in region 'us-central1'."},
		{name: "public range", call: func() error { _, err := insertSub("x", "us-central1", "gpu", "8.8.8.0/24"); return err }, status: 400, reason: "invalid"},
		{name: "not a range", call: func() error { _, err := insertSub("x", "us-central1", "gpu", "10.9.0.1/24"); return err }, status: 400, reason: "invalid"},
		{name: "subnetwork exists", call: func() error { _, err := insertSub("nodes", "us-central1", "gpu", "10.9.0.0/24"); return err },
			status: 409, reason: "alreadyExists", message: "The resource 'projects/gpufleet-test/regions/us-central1/subnetworks/nodes' already exists"},
		{name: "an auto-mode network's subnetwork", call: func() error {
			_, err := subnets.Delete(ctx, &computepb.DeleteSubnetworkRequest{Project: project, Region: "us-central1", Subnetwork: "default"})
			return err
		}, status: 400, reason: "invalid"},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			wantAPIError(t, tt.call(), tt.status, tt.reason, tt.message)
		})
	}

	// Instances on them.
	nicTests := []struct {
		name, network, subnetwork string
		wantNetwork, wantSubnet   string
		wantRange                 string
		message                   string
	}{
		{name: "default", wantNetwork: "global/networks/default", wantSubnet: "regions/us-central1/subnetworks/default", wantRange: "10.128.0.0/20"},
		{name: "custom by name", network: "gpu", subnetwork: "nodes", wantNetwork: "global/networks/gpu", wantSubnet: "regions/us-central1/subnetworks/nodes", wantRange: "10.8.0.0/24"},
		{name: "subnetwork alone", subnetwork: f.link("projects/" + project + "/regions/us-central1/subnetworks/nodes"),
			wantNetwork: "global/networks/gpu", wantSubnet: "regions/us-central1/subnetworks/nodes", wantRange: "10.8.0.0/24"},
		{name: "custom without subnetwork", network: "projects/gpufleet-test/global/networks/gpu",
			message: "Invalid value for field 'resource.networkInterfaces[0]': 'projects/gpufleet-test/global/networks/gpu'. Subnetwork should be specified for custom subnetmode network"},
		{name: "unknown network", network: "https://compute.googleapis.com/compute/v1/projects/gpufleet-test/global/networks/none",
			message: "Invalid value for field 'resource.networkInterfaces[0].network': 'projects/gpufleet-test/global/networks/none'. The referenced network resource cannot be found."},
		{name: "unknown subnetwork", network: "gpu", subnetwork: "regions/us-central1/subnetworks/none",
			message: "Invalid value for field 'resource.networkInterfaces[0].subnetwork': 'projects/gpufleet-test/regions/us-central1/subnetworks/none'. The referenced subnetwork resource cannot be found."},
		{name: "subnetwork of another region", network: "default", subnetwork: "regions/us-east1/subnetworks/default",
			message: "Invalid value for field 'resource.networkInterfaces[0].subnetwork': 'projects/gpufleet-test/regions/us-east1/subnetworks/default'. Subnetwork must be in the same region as the instance."},
		{name: "subnetwork of another network", network: "default", subnetwork: "nodes",
			message: "Invalid value for field 'resource.networkInterfaces[0].subnetwork': 'projects/gpufleet-test/regions/us-central1/subnetworks/nodes'. Subnetwork must belong to the network projects/gpufleet-test/global/networks/default."},
		{name: "network of another host", network: "https://example.com/compute/v1/projects/gpufleet-test/global/networks/default",
			message: "Invalid value for field 'resource.networkInterfaces[0].network': 'https://example.com/compute/v1/projects/gpufleet-test/global/networks/default'. The URL is malformed."},
	}
	for i, tt := range nicTests {
		t.Run("instance on "+tt.name, func(t *testing.T) {
			req := vm{name: "nic-" + string(rune('a'+i))}.request()
			req.InstanceResource.NetworkInterfaces = []*computepb.NetworkInterface{{}}
			if tt.network != "" {
				req.InstanceResource.NetworkInterfaces[0].Network = proto.String(tt.network)
			}
			if tt.subnetwork != "" {
				req.InstanceResource.NetworkInterfaces[0].Subnetwork = proto.String(tt.subnetwork)
			}
			op, err := f.instances.Insert(ctx, req)
			if tt.message != "" {
				wantAPIError(t, err, http.StatusBadRequest, "invalid", tt.message)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := op.Wait(ctx); err != nil {
				t.Fatal(err)
			}
			nic := f.get(t, zone, req.InstanceResource.GetName()).GetNetworkInterfaces()[0]
			ip, err := netip.ParseAddr(nic.GetNetworkIP())
			if nic.GetNetwork() != f.link("projects/"+project+"/"+tt.wantNetwork) || nic.GetSubnetwork() != f.link("projects/"+project+"/"+tt.wantSubnet) ||
				err != nil || !netip.MustParsePrefix(tt.wantRange).Contains(ip) || ip == netip.MustParsePrefix(tt.wantRange).Addr().Next() {
				t.Errorf("nic %v, want it on %s and %s in %s", nic, tt.wantNetwork, tt.wantSubnet, tt.wantRange)
			}
		})
	}

	// In use, a network and a subnetwork cannot be deleted.
	_, err = networks.Delete(ctx, &computepb.DeleteNetworkRequest{Project: project, Network: "gpu"})
	wantAPIError(t, err, 400, "resourceInUseByAnotherResource", "")
	_, err = subnets.Delete(ctx, &computepb.DeleteSubnetworkRequest{Project: project, Region: "us-central1", Subnetwork: "nodes"})
	wantAPIError(t, err, 400, "resourceInUseByAnotherResource", "")

	// Lists.
	var names []string
	for _, n := range all(t, networks.List(ctx, &computepb.ListNetworksRequest{Project: project, MaxResults: proto.Uint32(1)}).Next) {
		names = append(names, n.GetName())
	}
	if !slices.Equal(names, []string{"default", "gpu"}) {
		t.Errorf("networks %v", names)
	}
	names = nil
	for _, s := range all(t, subnets.List(ctx, &computepb.ListSubnetworksRequest{Project: project, Region: "us-central1"}).Next) {
		names = append(names, s.GetName())
	}
	if !slices.Equal(names, []string{"default", "nodes"}) {
		t.Errorf("us-central1's subnetworks %v", names)
	}
	count := 0
	for _, pair := range all(t, subnets.AggregatedList(ctx, &computepb.AggregatedListSubnetworksRequest{Project: project, MaxResults: proto.Uint32(3)}).Next) {
		for _, s := range pair.Value.GetSubnetworks() {
			if !strings.HasSuffix(s.GetRegion(), "/"+strings.TrimPrefix(pair.Key, "regions/")) {
				t.Errorf("%s listed under %s", s.GetSelfLink(), pair.Key)
			}
			count++
		}
	}
	if count != regions+1 {
		t.Errorf("aggregated %d subnetworks, want %d", count, regions+1)
	}
}

// A network's operations take the world's operation time, and the
// default network, once deleted, is gone for instances too.
func TestNetworkOperationsAndTheDefaultNetwork(t *testing.T) {
	f := newFixture(t, sim.Config{OperationTime: time.Minute}, Options{WaitTimeout: 50 * time.Millisecond})
	ctx := context.Background()
	networks := client(t, f, compute.NewNetworksRESTClient)
	globalOps := client(t, f, compute.NewGlobalOperationsRESTClient)

	op, err := networks.Delete(ctx, &computepb.DeleteNetworkRequest{Project: project, Network: "default"})
	if err != nil {
		t.Fatal(err)
	}
	if op.Proto().GetStatus() != computepb.Operation_PENDING {
		t.Errorf("delete answered %v, want PENDING", op.Proto().GetStatus())
	}
	f.clock.Advance(time.Second)
	waited, err := globalOps.Wait(ctx, &computepb.WaitGlobalOperationRequest{Project: project, Operation: op.Proto().GetName()})
	if err != nil || waited.GetStatus() != computepb.Operation_RUNNING || waited.GetStartTime() == "" {
		t.Errorf("wait answered %v, %v; want RUNNING once the cap passes", waited, err)
	}
	f.clock.Advance(time.Minute)
	got, err := globalOps.Get(ctx, &computepb.GetGlobalOperationRequest{Project: project, Operation: op.Proto().GetName()})
	if err != nil || got.GetStatus() != computepb.Operation_DONE || got.GetProgress() != 100 || got.GetEndTime() == "" {
		t.Errorf("get answered %v, %v; want DONE", got, err)
	}
	_, err = globalOps.Get(ctx, &computepb.GetGlobalOperationRequest{Project: project, Operation: "operation-0-00000000"})
	wantAPIError(t, err, 404, "notFound", "The resource 'projects/gpufleet-test/global/operations/operation-0-00000000' was not found")

	_, err = networks.Get(ctx, &computepb.GetNetworkRequest{Project: project, Network: "default"})
	wantAPIError(t, err, 404, "notFound", "The resource 'projects/gpufleet-test/global/networks/default' was not found")
	_, err = f.instances.Insert(ctx, vm{name: "homeless"}.request())
	wantAPIError(t, err, 400, "invalid", "Invalid value for field 'resource.networkInterfaces[0].network': 'projects/gpufleet-test/global/networks/default'. The referenced network resource cannot be found.")
	// Another project still has its own.
	if _, err := networks.Get(ctx, &computepb.GetNetworkRequest{Project: "another-project", Network: "default"}); err != nil {
		t.Errorf("another project's default network: %v", err)
	}
	if n := len(all(t, networks.List(ctx, &computepb.ListNetworksRequest{Project: project}).Next)); n != 0 {
		t.Errorf("%d networks listed after the default one was deleted", n)
	}
}

// Networks and subnetworks live in the world's state, so they are there
// after a restart.
func TestNetworksSurviveARestart(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state.json")
	world, err := sim.New(sim.Config{StatePath: state})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(New(world, Options{}))
	ctx := context.Background()
	networks, err := compute.NewNetworksRESTClient(ctx, option.WithEndpoint(ts.URL), option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	defer networks.Close()
	if _, err := networks.Insert(ctx, &computepb.InsertNetworkRequest{Project: project, NetworkResource: &computepb.Network{
		Name: proto.String("kept"), AutoCreateSubnetworks: proto.Bool(true)}}); err != nil {
		t.Fatal(err)
	}
	ts.Close()
	if err := world.Sync(); err != nil {
		t.Fatal(err)
	}

	again, err := sim.New(sim.Config{StatePath: state})
	if err != nil {
		t.Fatal(err)
	}
	restarted := httptest.NewServer(New(again, Options{}))
	t.Cleanup(restarted.Close)
	f := &fixture{url: restarted.URL}
	subnets := client(t, f, compute.NewSubnetworksRESTClient)
	sub, err := subnets.Get(ctx, &computepb.GetSubnetworkRequest{Project: project, Region: "us-east1", Subnetwork: "kept"})
	if err != nil || sub.GetIpCidrRange() != "10.142.0.0/20" {
		t.Errorf("the restarted front has %v, %v", sub, err)
	}
}
