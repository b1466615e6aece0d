// SPDX-License-Identifier: Apache-2.0

package gcp

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/providers/sim/gcesim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func testRequest(offer planner.OfferKey, fleet string, slot int) providers.CreateRequest {
	return providers.CreateRequest{
		Token:    planner.Token(fleet, "w", offer, "rev", slot),
		Offer:    offer,
		Fleet:    fleet,
		Workload: "w",
		Labels:   map[string]string{"team": "ml"},
	}
}

func (b backend) calls(op string) int { return b.world.Calls()["gcp "+op] }

// launchOwned puts an instance with the given labels straight into the
// world, bypassing the front.
func (b backend) launchOwned(t *testing.T, zone, name string, market catalog.Market, labels map[string]string) *sim.Instance {
	t.Helper()
	model := "STANDARD"
	if market == catalog.Spot {
		model = "SPOT"
	}
	res, err := b.world.Launch(sim.LaunchSpec{
		Cloud: Name, Zone: zone, InstanceType: testType, Market: market,
		Scope: "projects/" + testProject + "/zones/" + zone, Name: name, Tags: labels,
		Properties: map[string]string{"provisioningModel": model},
	})
	if err != nil {
		t.Fatal(err)
	}
	return res.Instance
}

// recorder keeps the instance resources of the inserts it sees.
type recorder struct {
	mu      sync.Mutex
	inserts []*computepb.Instance
	queries []string
}

func (rec *recorder) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/instances") {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			var inst computepb.Instance
			if err := protojson.Unmarshal(body, &inst); err == nil {
				rec.mu.Lock()
				rec.inserts = append(rec.inserts, &inst)
				rec.queries = append(rec.queries, r.URL.RawQuery)
				rec.mu.Unlock()
			}
		}
		next.ServeHTTP(w, r)
	})
}

func TestCreateSendsTheLaunchSettings(t *testing.T) {
	rec := &recorder{}
	b := newBackend(t, sim.Config{}, rec.wrap)
	tests := []struct {
		offer        planner.OfferKey
		model        string
		action       string
		restart      bool
		wantSubnet   string
		wantProperty string
	}{
		{onDemand, "STANDARD", "", true, "regions/us-central1/subnetworks/gpu", ""},
		{spot, "SPOT", "DELETE", false, "regions/us-central1/subnetworks/gpu", ""},
		{planner.OfferKey{Cloud: Name, Region: "europe-west4", Zone: "europe-west4-a", InstanceType: "a2-highgpu-1g", Market: catalog.OnDemand}, "STANDARD", "", true, "", ""},
	}
	for i, tt := range tests {
		t.Run(tt.offer.String(), func(t *testing.T) {
			req := testRequest(tt.offer, "launch", i)
			inst, err := b.provider.Create(testCtx(t), req)
			if err != nil {
				t.Fatal(err)
			}
			if inst.OfferKey != tt.offer || inst.ID != providers.InstanceName("launch", "w", req.Token) || inst.State != planner.StateRunning || inst.LaunchedAt.IsZero() {
				t.Errorf("Create returned %+v", inst)
			}
			sent := rec.inserts[len(rec.inserts)-1]
			if got := rec.queries[len(rec.queries)-1]; got != "requestId="+requestID(req.Token) {
				t.Errorf("query %q, want the token's requestId", got)
			}
			if got, want := sent.GetMachineType(), "zones/"+tt.offer.Zone+"/machineTypes/"+tt.offer.InstanceType; got != want {
				t.Errorf("machine type %q, want %q", got, want)
			}
			s := sent.GetScheduling()
			if s.GetProvisioningModel() != tt.model || s.GetInstanceTerminationAction() != tt.action || s.GetAutomaticRestart() != tt.restart || s.GetOnHostMaintenance() != "TERMINATE" {
				t.Errorf("scheduling %v", s)
			}
			disk := sent.GetDisks()[0]
			if !disk.GetBoot() || !disk.GetAutoDelete() || disk.GetInitializeParams().GetDiskSizeGb() != 200 ||
				disk.GetInitializeParams().GetSourceImage() != "projects/debian-cloud/global/images/family/debian-12" {
				t.Errorf("boot disk %v", disk)
			}
			nic := sent.GetNetworkInterfaces()[0]
			if nic.GetNetwork() != "global/networks/default" || nic.GetSubnetwork() != tt.wantSubnet {
				t.Errorf("network interface %v", nic)
			}
			if len(nic.GetAccessConfigs()) != 0 {
				t.Errorf("the VM asks for an external address")
			}
			sa := sent.GetServiceAccounts()
			if len(sa) != 1 || sa[0].GetEmail() != "nodes@gpufleet-test.iam.gserviceaccount.com" || !slices.Equal(sa[0].GetScopes(), []string{cloudPlatformScope}) {
				t.Errorf("service accounts %v", sa)
			}
			labels := sent.GetLabels()
			if labels[providers.TagFleet] != "launch" || labels[providers.TagWorkload] != "w" || labels[providers.TagToken] != req.Token || labels["team"] != "ml" {
				t.Errorf("labels %v", labels)
			}
		})
	}
}

// TestOperationsAreAwaited runs creates and deletes whose operations take
// real time, so the provider must wait on them.
func TestOperationsAreAwaited(t *testing.T) {
	b := newBackend(t, sim.Config{OperationTime: 40 * time.Millisecond}, nil)
	ctx := testCtx(t)
	inst, err := b.provider.Create(ctx, testRequest(spot, "await", 0))
	if err != nil {
		t.Fatal(err)
	}
	if inst.State != planner.StateRunning {
		t.Errorf("after its operation the instance is %s", inst.State)
	}
	waits := b.calls(gcesim.OpOperationWait)
	if waits == 0 {
		t.Errorf("the create did not wait on its operation")
	}
	if err := b.provider.Delete(ctx, inst); err != nil {
		t.Fatal(err)
	}
	if b.calls(gcesim.OpOperationWait) == waits {
		t.Errorf("the delete did not wait on its operation")
	}
	listed, err := b.provider.List(ctx, providers.Selector{Fleet: "await"})
	if err != nil || len(listed) != 0 {
		t.Errorf("after the delete List shows %v (%v)", listed, err)
	}

	// A failure after acceptance is read from the operation.
	b.world.SetCapacity(Name, testZone, testType, catalog.Spot, 0)
	_, err = b.provider.Create(ctx, testRequest(spot, "await", 1))
	if !errors.Is(err, providers.ErrCapacity) {
		t.Errorf("got %v, want a capacity error from the operation", err)
	}
}

func TestOperationTimeout(t *testing.T) {
	b := newBackend(t, sim.Config{OperationTime: time.Hour}, nil)
	b.provider.opts.OperationTimeout = 50 * time.Millisecond
	_, err := b.provider.Create(testCtx(t), testRequest(onDemand, "slow", 0))
	if !errors.Is(err, providers.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("got %v, want unavailable after the operation timeout", err)
	}
}

func TestCreateAdoptsItsOwnInstance(t *testing.T) {
	b := newBackend(t, sim.Config{}, nil)
	req := testRequest(onDemand, "adopt", 0)
	name := providers.InstanceName(req.Fleet, req.Workload, req.Token)
	// The instance exists but GCE no longer knows the requestId.
	b.launchOwned(t, testZone, name, catalog.OnDemand, providers.OwnershipTags(req))

	inst, err := b.provider.Create(testCtx(t), req)
	if err != nil {
		t.Fatal(err)
	}
	if inst.ID != name || inst.Token != req.Token {
		t.Errorf("got %+v, want the existing %s", inst, name)
	}
	if n := len(b.world.List(Name, nil)); n != 1 {
		t.Errorf("the world holds %d instances, want 1", n)
	}
}

func TestCreateRefusesAnotherTokensInstance(t *testing.T) {
	b := newBackend(t, sim.Config{}, nil)
	req := testRequest(onDemand, "taken", 0)
	name := providers.InstanceName(req.Fleet, req.Workload, req.Token)
	other := providers.OwnershipTags(req)
	other[providers.TagToken] = "gf1-ffffffffffffffffffffffffffffffff"
	b.launchOwned(t, testZone, name, catalog.OnDemand, other)

	_, err := b.provider.Create(testCtx(t), req)
	var pe *providers.Error
	if !errors.Is(err, providers.ErrInvalid) || !errors.As(err, &pe) || pe.Code != "alreadyExists" || pe.Offer != onDemand {
		t.Errorf("got %v, want an invalid alreadyExists error for the offer", err)
	}
}

func TestCreateFailures(t *testing.T) {
	tests := []struct {
		name     string
		fault    sim.Fault
		want     error
		wantCode string
		inserts  int
	}{
		{"stock-out after acceptance", sim.Fault{Kind: sim.FaultFailLater, Times: 1}, providers.ErrCapacity, "ZONE_RESOURCE_POOL_EXHAUSTED", 1},
		{"synchronous stock-out is not retried", sim.Fault{Kind: sim.FaultCapacity, Code: "insufficientCapacity", Times: 5}, providers.ErrCapacity, "insufficientCapacity", 1},
		{"synchronous quota is not retried", sim.Fault{Kind: sim.FaultQuota, Code: "quotaExceeded", Times: 5}, providers.ErrQuota, "quotaExceeded", 1},
		{"quota after acceptance", sim.Fault{Kind: sim.FaultQuota, Times: 1}, providers.ErrQuota, "QUOTA_EXCEEDED", 1},
		{"server errors are retried, within bounds", sim.Fault{Kind: sim.FaultServerError, Code: "503", Times: 100}, providers.ErrUnavailable, "backendError", 5},
		{"throttling beyond the bounds", sim.Fault{Kind: sim.FaultThrottle, Times: 100}, providers.ErrThrottled, "rateLimitExceeded", 5},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBackend(t, sim.Config{}, nil)
			fault := tt.fault
			fault.Cloud, fault.Op = Name, gcesim.OpInsert
			if err := b.world.AddFaults(&fault); err != nil {
				t.Fatal(err)
			}
			req := testRequest(onDemand, "fail", i)
			_, err := b.provider.Create(testCtx(t), req)
			var pe *providers.Error
			if !errors.Is(err, tt.want) || !errors.As(err, &pe) || pe.Code != tt.wantCode || pe.Offer != onDemand || pe.Op != "create" {
				t.Fatalf("got %v, want %v with code %s", err, tt.want, tt.wantCode)
			}
			if n := b.calls(gcesim.OpInsert); n != tt.inserts {
				t.Errorf("%d inserts, want %d", n, tt.inserts)
			}
			for _, inst := range b.world.List(Name, nil) {
				t.Errorf("a failed create left %s (%s)", inst.Name, inst.State)
			}
		})
	}
}

func TestCreateRefusesBadRequests(t *testing.T) {
	b := newBackend(t, sim.Config{}, nil)
	elsewhere := onDemand
	elsewhere.Region, elsewhere.Zone = "us-east1", "us-east1-b"
	wrongZone := onDemand
	wrongZone.Zone = "europe-west4-a"
	aws := onDemand
	aws.Cloud = "aws"
	badLabels := testRequest(onDemand, "bad", 0)
	badLabels.Labels = map[string]string{"Team": "x"}
	for name, req := range map[string]providers.CreateRequest{
		"unconfigured region":    testRequest(elsewhere, "bad", 0),
		"zone of another region": testRequest(wrongZone, "bad", 0),
		"another cloud":          testRequest(aws, "bad", 0),
		"no token":               {Offer: onDemand, Fleet: "bad", Workload: "w"},
		"label GCE refuses":      badLabels,
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := b.provider.Create(testCtx(t), req); !errors.Is(err, providers.ErrInvalid) {
				t.Errorf("got %v, want invalid", err)
			}
		})
	}
	if n := b.calls(gcesim.OpInsert); n != 0 {
		t.Errorf("%d inserts reached GCE", n)
	}
}

func TestDeleteFailures(t *testing.T) {
	b := newBackend(t, sim.Config{}, nil)
	ctx := testCtx(t)
	inst, err := b.provider.Create(ctx, testRequest(onDemand, "del", 0))
	if err != nil {
		t.Fatal(err)
	}

	other := inst
	other.Token = "gf1-ffffffffffffffffffffffffffffffff"
	if err := b.provider.Delete(ctx, other); !errors.Is(err, providers.ErrInvalid) {
		t.Errorf("deleting with another token: got %v, want invalid", err)
	}
	noZone := inst
	noZone.Zone = ""
	if err := b.provider.Delete(ctx, noZone); !errors.Is(err, providers.ErrInvalid) {
		t.Errorf("deleting without a zone: got %v, want invalid", err)
	}
	if n := b.calls(gcesim.OpDelete); n != 0 {
		t.Errorf("%d deletes reached GCE", n)
	}

	if err := b.world.AddFaults(&sim.Fault{Cloud: Name, Op: gcesim.OpDelete, Kind: sim.FaultFailLater, Times: 1}); err != nil {
		t.Fatal(err)
	}
	err = b.provider.Delete(ctx, inst)
	var pe *providers.Error
	if !errors.Is(err, providers.ErrUnavailable) || !errors.As(err, &pe) || pe.Code != "INTERNAL_ERROR" {
		t.Errorf("a delete whose operation failed: got %v, want unavailable INTERNAL_ERROR", err)
	}
	listed, err := b.provider.List(ctx, providers.Selector{Fleet: "del"})
	if err != nil || len(listed) != 1 || listed[0].State != planner.StateRunning {
		t.Errorf("after a failed delete List shows %+v (%v), want it running", listed, err)
	}
}

func TestListKeepsOwnedInstancesOfConfiguredRegions(t *testing.T) {
	b := newBackend(t, sim.Config{}, nil)
	owned := func(fleet, name string) map[string]string {
		return map[string]string{providers.TagFleet: fleet, providers.TagWorkload: "w", providers.TagToken: "gf1-" + name}
	}
	b.launchOwned(t, "us-central1-b", "in-us", catalog.OnDemand, owned("f", "in-us"))
	b.launchOwned(t, "europe-west4-a", "in-eu", catalog.Spot, owned("f", "in-eu"))
	b.launchOwned(t, "us-east1-b", "unconfigured", catalog.OnDemand, owned("f", "unconfigured"))
	b.launchOwned(t, "us-central1-b", "other-fleet", catalog.OnDemand, owned("g", "other-fleet"))
	b.launchOwned(t, "us-central1-b", "no-workload", catalog.OnDemand, map[string]string{providers.TagFleet: "f"})
	b.launchOwned(t, "us-central1-b", "foreign", catalog.OnDemand, nil)

	ctx := testCtx(t)
	names := func(sel providers.Selector) []string {
		t.Helper()
		got, err := b.provider.List(ctx, sel)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, inst := range got {
			out = append(out, inst.ID)
		}
		slices.Sort(out)
		return out
	}
	if got, want := names(providers.Selector{Fleet: "f"}), []string{"in-eu", "in-us"}; !slices.Equal(got, want) {
		t.Errorf("fleet f: got %v, want %v", got, want)
	}
	if got, want := names(providers.Selector{}), []string{"in-eu", "in-us", "other-fleet"}; !slices.Equal(got, want) {
		t.Errorf("every fleet: got %v, want %v", got, want)
	}
	before := b.calls(gcesim.OpAggregatedList)
	if got := names(providers.Selector{Fleet: "Not A Label"}); len(got) != 0 {
		t.Errorf("a fleet no label can name: got %v", got)
	}
	if b.calls(gcesim.OpAggregatedList) != before {
		t.Errorf("a fleet no label can name was looked up")
	}

	got, _ := b.provider.List(ctx, providers.Selector{Fleet: "f"})
	for _, inst := range got {
		if inst.ID == "in-eu" {
			want := planner.OfferKey{Cloud: Name, Region: "europe-west4", Zone: "europe-west4-a", InstanceType: testType, Market: catalog.Spot}
			if inst.OfferKey != want || inst.Fleet != "f" || inst.Workload != "w" || inst.Token != "gf1-in-eu" || inst.State != planner.StateRunning || inst.LaunchedAt.IsZero() {
				t.Errorf("in-eu listed as %+v", inst)
			}
		}
	}
}

// TestListTellsPreemptionFromDeletion: a spot VM is preempted when GCE
// says it took it back, with the compute.instances.preempted operation it
// records; one that is stopping because someone deletes it (an earlier
// run of gpufleet, whose delete is still in flight) is not, though its
// status is the same.
func TestListTellsPreemptionFromDeletion(t *testing.T) {
	b := newBackend(t, sim.Config{OperationTime: time.Hour}, nil)
	labels := func(token string) map[string]string {
		return map[string]string{providers.TagFleet: "stop", providers.TagWorkload: "w", providers.TagToken: token}
	}
	deleted := b.launchOwned(t, testZone, "deleted-vm", catalog.Spot, labels("gf1-x"))
	if _, err := b.world.StartDelete(deleted.ID, "", nil); err != nil {
		t.Fatal(err)
	}
	taken := b.launchOwned(t, testZone, "taken-vm", catalog.Spot, labels("gf1-y"))
	if err := b.world.Preempt(taken.ID); err != nil {
		t.Fatal(err)
	}
	states := func() map[string]planner.State {
		t.Helper()
		got, err := b.provider.List(testCtx(t), providers.Selector{Fleet: "stop"})
		if err != nil || len(got) != 2 {
			t.Fatalf("List: %v %v", got, err)
		}
		out := map[string]planner.State{}
		for _, inst := range got {
			out[inst.ID] = inst.State
		}
		return out
	}
	got := states()
	if got["deleted-vm"] != planner.StateStopping {
		t.Errorf("a spot VM someone deletes is %s, want stopping: GCE did not take it back", got["deleted-vm"])
	}
	if got["taken-vm"] != planner.StatePreempted {
		t.Errorf("a spot VM GCE preempted is %s, want preempted", got["taken-vm"])
	}
	if n := b.calls("zoneOperations.list"); n != 1 {
		t.Errorf("%d operation lists, want one for the zone with stopped spot VMs", n)
	}
	// One this provider is deleting is on its way out, not a leftover to
	// delete again.
	b.provider.markDeleting(testZone+"/deleted-vm", true)
	if got := states()["deleted-vm"]; got != planner.StateTerminated {
		t.Errorf("a spot VM we are deleting is %s, want terminated", got)
	}
}

func TestOffers(t *testing.T) {
	b := newBackend(t, sim.Config{}, nil)
	offers, err := b.provider.Offers(testCtx(t))
	if err != nil || len(offers) == 0 {
		t.Fatalf("Offers: %d, %v", len(offers), err)
	}
	regions := map[string]bool{}
	for _, o := range offers {
		if o.Cloud != Name || regionOf(o.Zone) != o.Region {
			t.Errorf("offer %s", o.OfferKey)
		}
		regions[o.Region] = true
	}
	if len(regions) != 2 || !regions["us-central1"] || !regions["europe-west4"] {
		t.Errorf("offers in %v, want the two configured regions", regions)
	}
}

func TestNewRefusesIncompleteConfig(t *testing.T) {
	ctx := context.Background()
	noProject := testConfig()
	noProject.Project = ""
	noRegions := testConfig()
	noRegions.Regions = nil
	if _, err := New(ctx, noProject, catalog.Default(), Options{}); err == nil {
		t.Errorf("no project: New succeeded")
	}
	if _, err := New(ctx, noRegions, catalog.Default(), Options{}); err == nil {
		t.Errorf("no regions: New succeeded")
	}
	if _, err := New(ctx, nil, catalog.Default(), Options{}); err == nil {
		t.Errorf("no config: New succeeded")
	}
}

// A create repeated with the token of an instance since deleted gets GCE's
// replay of the first insert and no instance: the token is spent, which
// the caller must hear as such, not as a missing instance, or it asks with
// the same token for ever.
func TestACreateWhoseInstanceIsGoneSaysTheTokenIsSpent(t *testing.T) {
	b := newBackend(t, sim.Config{}, nil)
	ctx := testCtx(t)
	req := testRequest(spot, "spent", 0)
	inst, err := b.provider.Create(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.provider.Delete(ctx, inst); err != nil {
		t.Fatal(err)
	}
	_, err = b.provider.Create(ctx, req)
	if !errors.Is(err, providers.ErrTokenSpent) {
		t.Errorf("got %v, want the token reported spent", err)
	}
	if listed, _ := b.provider.List(ctx, providers.Selector{Fleet: "spent"}); len(listed) != 0 {
		t.Errorf("a second instance was launched for a spent token: %v", listed)
	}
}
