// SPDX-License-Identifier: Apache-2.0

package armsim

import (
	"context"
	"encoding/json"
	"maps"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/providers/sim/simtls"
	"github.com/gpufleet/gpufleet/schema/catalog"

	"github.com/gpufleet/gpufleet/providers/sim/clienttest"
)

// pythonWithAzure finds a python3 that can import the Azure SDK for
// Python: the first one on PATH may be a pyenv shim without it, so every
// python3 on PATH is tried, and Debian's own.
func pythonWithAzure(t *testing.T) string {
	t.Helper()
	candidates := []string{}
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		candidates = append(candidates, filepath.Join(dir, "python3"))
	}
	candidates = append(candidates, "/usr/bin/python3")
	for _, py := range candidates {
		if _, err := os.Stat(py); err != nil {
			continue
		}
		check := exec.Command(py, "-c", "import azure.mgmt.compute, azure.mgmt.network, azure.mgmt.resource")
		if check.Run() == nil {
			return py
		}
	}
	clienttest.Missing(t, "python3-azure", "apt-get install python3-azure (Debian's, for /usr/bin/python3)")
	return ""
}

// stepResult is one step of testdata/pythonsdk/scenario.py.
type stepResult struct {
	OK         bool            `json:"ok"`
	Value      json.RawMessage `json:"value"`
	Status     int             `json:"status"`
	Code       string          `json:"code"`
	Message    string          `json:"message"`
	RetryAfter string          `json:"retryAfter"`
	Seconds    float64         `json:"seconds"`
}

// scriptResults are the steps of a script of testdata/pythonsdk by name.
type scriptResults map[string]stepResult

// value decodes a step's value, failing the test when the step failed.
func (results scriptResults) value(t *testing.T, name string, v any) {
	t.Helper()
	r := results[name]
	if !r.OK {
		t.Fatalf("%s failed: %d %s %s", name, r.Status, r.Code, r.Message)
	}
	if err := json.Unmarshal(r.Value, v); err != nil {
		t.Fatalf("%s: %v: %s", name, err, r.Value)
	}
}

// refused checks a step failed with ARM's status and code, and a message
// holding text.
func (results scriptResults) refused(t *testing.T, name string, status int, code, text string) {
	t.Helper()
	r := results[name]
	if r.OK || r.Code != code || r.Status != status || !strings.Contains(r.Message, text) {
		t.Errorf("%s: got ok=%v %d %s %q, want %d %s containing %q", name, r.OK, r.Status, r.Code, r.Message, status, code, text)
	}
}

// runScript serves front over https and runs a script of
// testdata/pythonsdk against it with py, env added to its environment,
// and returns the steps it printed.
func runScript(t *testing.T, py string, front *Server, script string, env ...string) scriptResults {
	t.Helper()
	t.Cleanup(func() {
		if n := front.panics.Load(); n != 0 {
			t.Errorf("%d requests reached the last-resort recover", n)
		}
	})
	files, err := simtls.Ensure(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tlsConfig, err := files.ServerConfig()
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(front)
	srv.TLS = tlsConfig
	srv.StartTLS()
	t.Cleanup(srv.Close)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, filepath.Join("testdata", "pythonsdk", script))
	cmd.Env = append(os.Environ(), "ARM_ENDPOINT="+srv.URL, "SUBSCRIPTION="+testSub, "REQUESTS_CA_BUNDLE="+files.CA,
		"PYTHONDONTWRITEBYTECODE=1")
	cmd.Env = append(cmd.Env, env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", script, err, stderr.String())
	}
	var results scriptResults
	if err := json.Unmarshal(out, &results); err != nil {
		t.Fatalf("%s printed no results: %v\n%s\n%s", script, err, out, stderr.String())
	}
	return results
}

// The Azure SDK for Python (Debian's python3-azure: azure-mgmt-compute
// 29, azure-mgmt-network 23, azure-mgmt-resource 22, azure-core 1.26)
// drives the front over https as it drives Azure: a resource group, a
// network with subnets and an interface, VMs whose creation it polls
// through InProgress, their listing across pages, idempotent repeats,
// deletes, and the failures ARM answers with its own codes.
func TestPythonSDK(t *testing.T) {
	py := pythonWithAzure(t)
	if testing.Short() {
		t.Skip("drives the Azure SDK for Python in real time")
	}
	const opTime = time.Second
	world, err := sim.New(sim.Config{Catalog: catalog.Default(), OperationTime: opTime, PendingFor: opTime})
	if err != nil {
		t.Fatal(err)
	}
	// Zone 2 of eastus does not offer the T4 size (SkuNotAvailable, at
	// once); zone 3 has no room for it, nor westus3 for the A100 (the
	// create is accepted and its operation fails).
	world.SetOffered(cloud, "eastus-2", t4, false)
	world.SetCapacity(cloud, "eastus-3", t4, catalog.OnDemand, 0)
	westus3, _ := world.Region(cloud, "westus3")
	for _, z := range westus3.Zones {
		world.SetCapacity(cloud, z, a100, catalog.OnDemand, 0)
	}
	if err := world.AddFaults(&sim.Fault{Cloud: cloud, Op: OpUsages, Kind: sim.FaultThrottle, Times: 1}); err != nil {
		t.Fatal(err)
	}
	front := New(world, Options{PageSize: 2, ThrottleRetryAfter: 3 * time.Second})
	results := runScript(t, py, front, "scenario.py")
	value := results.value

	t.Run("resource group", func(t *testing.T) {
		var g struct {
			ID, Location, State, Fixture string
			Exists                       bool
			Listed                       []string
		}
		value(t, "group", &g)
		if g.ID != "/subscriptions/"+testSub+"/resourceGroups/py-rg" || g.Location != "eastus" || g.State != "Succeeded" || !g.Exists ||
			g.Fixture != "eastus" || !slices.Equal(g.Listed, []string{"gpufleet", "py-rg"}) {
			t.Errorf("group %+v", g)
		}
	})
	t.Run("network", func(t *testing.T) {
		var v struct {
			First, State, Second, SecondState string
			Subnets                           []string
		}
		value(t, "vnet", &v)
		if v.First != "InProgress" || v.State != "Succeeded" || !slices.Equal(v.Subnets, []string{"default", "second"}) ||
			v.Second != "10.10.1.0/24" || v.SecondState != "Succeeded" {
			t.Errorf("vnet %+v", v)
		}
		var nic struct{ ID, IP, State string }
		value(t, "nic", &nic)
		if nic.IP != "10.10.0.4" || nic.State != "Succeeded" || !strings.HasSuffix(nic.ID, "/networkInterfaces/py-nic") {
			t.Errorf("nic %+v", nic)
		}
	})
	t.Run("VM created through its operation", func(t *testing.T) {
		var vm struct {
			First, State, VMID, NIC string
			Zones                   []string
			Waited                  bool
		}
		value(t, "vm", &vm)
		if vm.First != "InProgress" || !vm.Waited || vm.State != "Succeeded" || vm.VMID == "" || !slices.Equal(vm.Zones, []string{"1"}) {
			t.Errorf("vm %+v", vm)
		}
		if s := results["vm"].Seconds; s < opTime.Seconds() || s > 10 {
			t.Errorf("create took %.1f s; want the operation's %.1f s and a short poll, not azure-core's 30 s default", s, opTime.Seconds())
		}
		var got struct {
			State, Size, NICVM string
			Statuses           []string
		}
		value(t, "get", &got)
		if got.State != "Succeeded" || got.Size != t4 || !slices.Contains(got.Statuses, "PowerState/running") ||
			!strings.HasSuffix(got.NICVM, "/virtualMachines/py-vm") {
			t.Errorf("get %+v", got)
		}
		var again struct{ VMID, State string }
		value(t, "createAgain", &again)
		if again.VMID != vm.VMID || again.State != "Succeeded" {
			t.Errorf("a second PUT made %+v, want the same VM %s", again, vm.VMID)
		}
	})
	t.Run("tags replaced by PATCH", func(t *testing.T) {
		var u struct {
			Tags, Read map[string]string
			Size       string
		}
		value(t, "updateTags", &u)
		want := map[string]string{"team": "ml", "gpufleet-fleet": "ml"}
		if !maps.Equal(u.Tags, want) || !maps.Equal(u.Read, want) || u.Size != t4 {
			t.Errorf("after the PATCH: %+v, want tags %v on a %s", u, want, t4)
		}
	})
	t.Run("listing across pages", func(t *testing.T) {
		var many []string
		value(t, "many", &many)
		var list struct{ Pages [][]string }
		value(t, "list", &list)
		seen := map[string]int{}
		for _, p := range list.Pages {
			if len(p) > 2 {
				t.Errorf("page of %d, want at most the front's 2", len(p))
			}
			for _, name := range p {
				seen[name]++
			}
		}
		want := []string{"py-vm", "py-many-0", "py-many-1", "py-many-2", "py-many-3", "py-many-4"}
		if len(list.Pages) != 3 || len(seen) != len(want) {
			t.Errorf("pages %v, want every VM of %v once over 3 pages", list.Pages, want)
		}
		for _, name := range want {
			if seen[name] != 1 {
				t.Errorf("%s seen %d times in %v", name, seen[name], list.Pages)
			}
		}
		var all []string
		value(t, "listAll", &all)
		if !slices.Contains(all, "py-vm") || len(all) != len(want) {
			t.Errorf("list all %v", all)
		}
	})
	refusals := []struct {
		step, code string
		status     int
		text       string
	}{
		{"overlappingSubnet", "NetcfgSubnetRangesOverlap", 400, "overlaps with that of an existing subnet in virtual network 'py-vnet'"},
		{"nicBadSubnet", "InvalidResourceReference", 400, "/subnets/missing referenced by resource"},
		{"wrongGroup", "ResourceGroupNotFound", 404, "Resource group 'no-such-rg' could not be found."},
		{"wrongNIC", "InvalidResourceReference", 400, "/networkInterfaces/no-such-nic referenced by resource"},
		{"wrongSubnet", "InvalidResourceReference", 400, "/subnets/no-such-subnet referenced by resource"},
		{"skuNotAvailable", "SkuNotAvailable", 409, "is currently not available in location 'eastus' zones '2'"},
		{"zonalAllocationFailed", "ZonalAllocationFailed", 200, "sufficient capacity for the requested VM size in this zone"},
		{"allocationFailed", "AllocationFailed", 200, "sufficient capacity for the requested VM size in this region"},
		{"throttled", "TooManyRequests", 429, "throttled"},
		{"badVersionGroup", "InvalidApiVersionParameter", 400, "The api-version '2099-01-01' is invalid. The supported versions are '2025-04-01,"},
		{"badVersionVM", "NoRegisteredProviderFound", 400, "API version '2099-01-01' for type 'virtualMachines'"},
		{"nicInUse", "NicInUse", 400, "is used by existing resource"},
	}
	for _, tt := range refusals {
		t.Run("refused: "+tt.step, func(t *testing.T) {
			r := results[tt.step]
			if r.OK || r.Code != tt.code || r.Status != tt.status || !strings.Contains(r.Message, tt.text) {
				t.Errorf("got ok=%v %d %s %q, want %d %s containing %q", r.OK, r.Status, r.Code, r.Message, tt.status, tt.code, tt.text)
			}
		})
	}
	t.Run("throttle says when to retry", func(t *testing.T) {
		if r := results["throttled"]; r.RetryAfter != "3" {
			t.Errorf("Retry-After %q, want the front's 3 s", r.RetryAfter)
		}
	})
	t.Run("deletes", func(t *testing.T) {
		var del struct {
			First string
			Gone  bool
		}
		value(t, "delete", &del)
		if del.First != "InProgress" || !del.Gone {
			t.Errorf("delete %+v", del)
		}
		var again string
		value(t, "deleteAgain", &again)
		if again != "Succeeded" {
			t.Errorf("a delete of a deleted VM ended %q", again)
		}
		var g struct {
			First  string
			Exists bool
			VMs    []string
		}
		value(t, "deleteGroup", &g)
		if g.First != "InProgress" || g.Exists || len(g.VMs) != 0 {
			t.Errorf("group delete %+v", g)
		}
		if left := world.List(cloud, func(inst *sim.Instance) bool { return strings.Contains(inst.Scope, "/resourcegroups/py-rg") }); len(left) != 0 {
			t.Errorf("%d VMs left in the deleted group", len(left))
		}
	})
}

// The Azure SDK for Python meets the front where it is as strict as ARM
// (testdata/pythonsdk/strict.py): an interface one VM has is refused to
// another, a request without a bearer token is turned away, a failed
// create is retried by a PUT, a VM is deallocated, stopped, started and
// restarted, the subscription describes itself and its locations, and a
// user-assigned identity must be the subscription's.
func TestPythonSDKStrict(t *testing.T) {
	py := pythonWithAzure(t)
	if testing.Short() {
		t.Skip("drives the Azure SDK for Python in real time")
	}
	const opTime = 500 * time.Millisecond
	world, err := sim.New(sim.Config{Catalog: catalog.Default(), OperationTime: opTime, PendingFor: opTime})
	if err != nil {
		t.Fatal(err)
	}
	held := "/subscriptions/" + testSub + "/resourceGroups/" + testRG + "/providers/Microsoft.ManagedIdentity/userAssignedIdentities/py-nodes"
	if err := world.SetAccount(sim.Account{Identities: []string{held}}); err != nil {
		t.Fatal(err)
	}
	// The first create in zone 2 finds no room; the next does.
	if err := world.AddFaults(&sim.Fault{Cloud: cloud, Op: OpPut, Zone: "eastus-2", Kind: sim.FaultCapacity, Times: 1}); err != nil {
		t.Fatal(err)
	}
	results := runScript(t, py, New(world, Options{}), "strict.py", "HELD_IDENTITY="+held)
	created := func(t *testing.T, step string) string {
		t.Helper()
		var vm struct{ State, VMID string }
		results.value(t, step, &vm)
		if vm.State != "Succeeded" || vm.VMID == "" {
			t.Errorf("%s: %+v, want a VM Succeeded", step, vm)
		}
		return vm.VMID
	}
	vmID := "/subscriptions/" + testSub + "/resourceGroups/" + testRG + "/providers/Microsoft.Compute/virtualMachines/"

	t.Run("an interface is one VM's", func(t *testing.T) {
		var nic string
		results.value(t, "nicSetup", &nic)
		first := created(t, "nicFirst")
		results.refused(t, "nicTaken", 400, "NicInUse",
			"Network interface "+nic+" is used by existing resource "+vmID+"strict-a. In order to use this network interface for a new virtual machine, please detach it from the existing one.")
		if again := created(t, "nicSameVM"); again != first {
			t.Errorf("a re-PUT of the VM with its own interface made %s, want %s", again, first)
		}
		created(t, "nicFreed")
	})
	t.Run("a bearer token is required", func(t *testing.T) {
		var missing, basic, bearer struct {
			Status          int
			Body, Challenge string
		}
		results.value(t, "authMissing", &missing)
		results.value(t, "authBasic", &basic)
		results.value(t, "authBearer", &bearer)
		if missing.Status != 401 || missing.Body != `{"error":{"code":"AuthenticationFailed","message":"Authentication failed. The 'Authorization' header is missing."}}` ||
			missing.Challenge != `Bearer authorization_uri="https://login.microsoftonline.com/common", error="invalid_token", error_description="The authentication failed because of missing 'Authorization' header."` {
			t.Errorf("without a header: %+v", missing)
		}
		if basic.Status != 401 || !strings.Contains(basic.Body, `"code":"InvalidAuthenticationToken"`) || !strings.HasPrefix(basic.Challenge, "Bearer ") {
			t.Errorf("with basic credentials: %+v", basic)
		}
		if bearer.Status != 200 {
			t.Errorf("with a bearer token: %+v", bearer)
		}
	})
	t.Run("a failed create is retried", func(t *testing.T) {
		var r struct {
			FirstCode, FailedState, SecondFirst, State, Power string
			SameVM                                            bool
		}
		results.value(t, "retry", &r)
		if r.FirstCode != "ZonalAllocationFailed" || r.FailedState != "Failed" || r.SecondFirst != "InProgress" ||
			r.State != "Succeeded" || !r.SameVM || r.Power != "PowerState/running" {
			t.Errorf("retry %+v, want a failure, then a new operation to a running VM of the same vmId", r)
		}
	})
	t.Run("power actions", func(t *testing.T) {
		var steps []struct{ Action, First, Power string }
		results.value(t, "power", &steps)
		want := []string{"PowerState/deallocated", "PowerState/running", "PowerState/stopped", "PowerState/running", "PowerState/deallocated"}
		if len(steps) != len(want) {
			t.Fatalf("steps %+v", steps)
		}
		for i, st := range steps {
			if st.First != "InProgress" || st.Power != want[i] {
				t.Errorf("%s: first %s, then %s; want InProgress, then %s", st.Action, st.First, st.Power, want[i])
			}
		}
		results.refused(t, "powerOffDeallocated", 409, "OperationNotAllowed", "since the VM is either deallocated or marked to be deallocated")
	})
	t.Run("subscription and locations", func(t *testing.T) {
		var s struct {
			ID, SubscriptionID, State, DisplayName, TenantID, SpendingLimit string
			Locations                                                       []string
			East                                                            struct{ DisplayName, Regional, RegionType, GeographyGroup string }
		}
		results.value(t, "subscription", &s)
		if s.ID != "/subscriptions/"+testSub || s.SubscriptionID != testSub || s.State != "Enabled" || s.DisplayName == "" ||
			s.TenantID != emulatorTenant || s.SpendingLimit != "Off" {
			t.Errorf("subscription %+v", s)
		}
		if !slices.Equal(s.Locations, locations(catalog.Default())) {
			t.Errorf("locations %v, want the catalog's", s.Locations)
		}
		if s.East.DisplayName != "East US" || s.East.Regional != "(US) East US" || s.East.RegionType != "Physical" || s.East.GeographyGroup != "US" {
			t.Errorf("eastus %+v", s.East)
		}
	})
	t.Run("a user-assigned identity must exist", func(t *testing.T) {
		missing := strings.Replace(held, "py-nodes", "not-created", 1)
		results.refused(t, "identityMissing", 400, "FailedIdentityOperation", "Resource '"+missing+"' was not found.")
		created(t, "identityHeld")
	})
}

// The Azure SDK for Python meets what a VM's allocation does
// (testdata/pythonsdk/allocation.py): a deallocated VM gives its zone's
// room back and a start finds it taken, and a new subscription's quotas
// list as ARM's usages and hold a GPU create back until raised.
func TestPythonSDKAllocation(t *testing.T) {
	py := pythonWithAzure(t)
	if testing.Short() {
		t.Skip("drives the Azure SDK for Python in real time")
	}
	const opTime = 300 * time.Millisecond
	newWorld := func(t *testing.T) *sim.World {
		world, err := sim.New(sim.Config{Catalog: catalog.Default(), OperationTime: opTime, PendingFor: opTime})
		if err != nil {
			t.Fatal(err)
		}
		return world
	}
	t.Run("deallocate frees room", func(t *testing.T) {
		world := newWorld(t)
		world.SetCapacity(catalog.Azure, "eastus-1", t4, catalog.OnDemand, 1)
		results := runScript(t, py, New(world, Options{}), "allocation.py", "PHASE=capacity")
		var state, power string
		results.value(t, "createFirst", &state)
		if results.value(t, "deallocateFirst", &power); power != "PowerState/deallocated" {
			t.Errorf("after deallocate: %s", power)
		}
		if results.value(t, "createSecond", &state); state != "Succeeded" {
			t.Errorf("a VM in the room the deallocated one left: %s", state)
		}
		results.refused(t, "startWithoutRoom", 200, "ZonalAllocationFailed", "We do not have sufficient capacity for the requested VM size in this zone")
		if results.value(t, "stillDeallocated", &power); power != "PowerState/deallocated" {
			t.Errorf("after a failed start: %s", power)
		}
		var deleted bool
		results.value(t, "deleteSecond", &deleted)
		if results.value(t, "startWithRoom", &power); power != "PowerState/running" {
			t.Errorf("start once the room is free: %s", power)
		}
		results.value(t, "deallocateAgain", &power)
		results.value(t, "deleteDeallocated", &deleted)
	})
	t.Run("a new subscription's quotas", func(t *testing.T) {
		const family = "standardNCASv3_T4Family"
		world := newWorld(t)
		if err := world.SetQuotas(sim.QuotaSet{Base: sim.NewAccount}); err != nil {
			t.Fatal(err)
		}
		front := New(world, Options{})
		results := runScript(t, py, front, "allocation.py", "PHASE=quota")
		var usages map[string]struct{ Limit, Used int }
		results.value(t, "usages", &usages)
		if u := usages["cores"]; u.Limit != 10 || u.Used != 0 {
			t.Errorf("cores %+v, want limit 10", u)
		}
		if u := usages["lowPriorityCores"]; u.Limit != 10 {
			t.Errorf("lowPriorityCores %+v, want limit 10", u)
		}
		if u, ok := usages[family]; !ok || u.Limit != 0 {
			t.Errorf("%s %+v (listed %v), want limit 0", family, u, ok)
		}
		results.refused(t, "createOverQuota", 409, "OperationNotAllowed",
			"exceeding approved "+family+" Cores quota. Additional details - Deployment Model: Resource Manager, Location: eastus, Current Limit: 0, Current Usage: 0, Additional Required: 4, (Minimum) New Limit Required: 4.")

		if err := world.SetQuotas(sim.QuotaSet{Base: sim.NewAccount, Quotas: []sim.QuotaLimit{
			{Cloud: catalog.Azure, Region: "eastus", Name: family, Limit: 64},
			{Cloud: catalog.Azure, Region: "eastus", Name: catalog.AzureCores, Limit: 64},
		}}); err != nil {
			t.Fatal(err)
		}
		results = runScript(t, py, front, "allocation.py", "PHASE=quotaRaised")
		var state string
		if results.value(t, "createUnderQuota", &state); state != "Succeeded" {
			t.Errorf("create under the raised limit: %s", state)
		}
		results.value(t, "usagesRaised", &usages)
		if u := usages[family]; u.Limit != 64 || u.Used != 4 {
			t.Errorf("%s after the create %+v, want 4 of 64", family, u)
		}
		if u := usages["cores"]; u.Limit != 64 || u.Used != 4 {
			t.Errorf("cores after the create %+v, want 4 of 64", u)
		}
	})
}
