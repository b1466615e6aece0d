// SPDX-License-Identifier: Apache-2.0

package gcesim

import (
	"encoding/json"
	"net/http"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/providers/sim/simtls"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// The zones, regions, machine types and accelerator types gcloud lists
// are the world's catalog, with the fields gcloud shows.
func TestGcloudListsTheCatalog(t *testing.T) {
	t.Parallel()
	g := newGcloudFront(t, sim.Config{}, Options{})
	var want []string
	for _, r := range g.world.Catalog().RegionsOf(cloud) {
		want = append(want, r.Zones...)
	}
	slices.Sort(want)

	t.Run("zones", func(t *testing.T) {
		var zones []map[string]any
		g.ok(t, &zones, "compute", "zones", "list")
		var got []string
		for _, z := range zones {
			got = append(got, z["name"].(string))
			if z["status"] != "UP" || z["kind"] != "compute#zone" || len(jsonAt(z, "availableCpuPlatforms").([]any)) == 0 {
				t.Errorf("zone %v", z)
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("zones %v, want %v", got, want)
		}
		for _, z := range zones {
			if z["name"] == "us-central1-a" && z["region"] != g.link("projects/"+gcloudProject+"/regions/us-central1") {
				t.Errorf("us-central1-a's region is %v", z["region"])
			}
		}
	})
	t.Run("regions", func(t *testing.T) {
		var regions []map[string]any
		g.ok(t, &regions, "compute", "regions", "list")
		if len(regions) != len(g.world.Catalog().RegionsOf(cloud)) {
			t.Errorf("%d regions, want %d", len(regions), len(g.world.Catalog().RegionsOf(cloud)))
		}
		for _, r := range regions {
			if r["name"] != "us-central1" {
				continue
			}
			zones := jsonAt(r, "zones").([]any)
			if len(zones) != 4 || zones[0] != g.link("projects/"+gcloudProject+"/zones/us-central1-a") || r["status"] != "UP" {
				t.Errorf("us-central1: %v", r)
			}
			if !strings.Contains(mustJSON(t, r["quotas"]), `"metric":"NVIDIA_L4_GPUS"`) {
				t.Errorf("us-central1's quotas %v lack NVIDIA_L4_GPUS", r["quotas"])
			}
		}
	})
	t.Run("machine types", func(t *testing.T) {
		var types []map[string]any
		g.ok(t, &types, "compute", "machine-types", "list", "--zones", "us-central1-a")
		found := false
		for _, mt := range types {
			if mt["name"] != "g2-standard-4" {
				continue
			}
			found = true
			for field, want := range map[string]any{
				"guestCpus": 4.0, "memoryMb": 16384.0, "isSharedCpu": false, "maximumPersistentDisks": 128.0,
				"zone": "us-central1-a", "selfLink": g.link("projects/" + gcloudProject + "/zones/us-central1-a/machineTypes/g2-standard-4"),
			} {
				if mt[field] != want {
					t.Errorf("g2-standard-4 %s = %v, want %v", field, mt[field], want)
				}
			}
			if a := mustJSON(t, mt["accelerators"]); a != `[{"guestAcceleratorCount":1,"guestAcceleratorType":"nvidia-l4"}]` {
				t.Errorf("g2-standard-4 accelerators %s", a)
			}
		}
		if !found {
			t.Errorf("us-central1-a lists no g2-standard-4: %v", types)
		}
	})
	t.Run("accelerator types", func(t *testing.T) {
		var accels []map[string]any
		g.ok(t, &accels, "compute", "accelerator-types", "list")
		seen := map[string]bool{}
		for _, a := range accels {
			if strings.HasSuffix(a["zone"].(string), "/zones/us-central1-a") {
				seen[a["name"].(string)] = true
				if a["name"] == "nvidia-l4" && (a["maximumCardsPerInstance"] != 8.0 || a["description"] != "NVIDIA L4") {
					t.Errorf("nvidia-l4: %v", a)
				}
			}
		}
		for _, name := range []string{"nvidia-l4", "nvidia-tesla-a100", "nvidia-h100-80gb"} {
			if !seen[name] {
				t.Errorf("us-central1-a lacks %s: %v", name, seen)
			}
		}
	})
}

// An instance's life through gcloud: created alone and three at once (a
// batch), described, listed in pages and by zone, refused a second time,
// deleted alone and two at once, and not found once gone.
func TestGcloudInstanceLifecycle(t *testing.T) {
	t.Parallel()
	g := newGcloudFront(t, sim.Config{}, Options{})
	zoneA, zoneB := "us-central1-a", "us-central1-b"

	var created []map[string]any
	g.ok(t, &created, "compute", "instances", "create", "solo", "--zone", zoneA, "--machine-type", "g2-standard-4",
		"--accelerator", "type=nvidia-l4,count=1", "--maintenance-policy", "TERMINATE",
		"--metadata", "role=trainer", "--labels", "team=ml", "--tags", "gpu,ssh")
	if len(created) != 1 {
		t.Fatalf("create printed %v", created)
	}
	solo := created[0]
	for _, c := range []struct {
		path []any
		want any
	}{
		{[]any{"status"}, "RUNNING"},
		{[]any{"selfLink"}, g.link("projects/" + gcloudProject + "/zones/" + zoneA + "/instances/solo")},
		{[]any{"machineType"}, g.link("projects/" + gcloudProject + "/zones/" + zoneA + "/machineTypes/g2-standard-4")},
		{[]any{"guestAccelerators", 0, "acceleratorType"}, g.link("projects/" + gcloudProject + "/zones/" + zoneA + "/acceleratorTypes/nvidia-l4")},
		{[]any{"guestAccelerators", 0, "acceleratorCount"}, 1.0},
		{[]any{"metadata", "kind"}, "compute#metadata"},
		{[]any{"metadata", "items", 0, "key"}, "role"},
		{[]any{"labels", "team"}, "ml"},
		{[]any{"tags", "items", 1}, "ssh"},
		{[]any{"networkInterfaces", 0, "name"}, "nic0"},
		{[]any{"networkInterfaces", 0, "network"}, g.link("projects/" + gcloudProject + "/global/networks/default")},
		{[]any{"networkInterfaces", 0, "subnetwork"}, g.link("projects/" + gcloudProject + "/regions/us-central1/subnetworks/default")},
		{[]any{"networkInterfaces", 0, "stackType"}, "IPV4_ONLY"},
		{[]any{"networkInterfaces", 0, "accessConfigs", 0, "type"}, "ONE_TO_ONE_NAT"},
		{[]any{"disks", 0, "boot"}, true},
		{[]any{"disks", 0, "type"}, "PERSISTENT"},
		{[]any{"disks", 0, "mode"}, "READ_WRITE"},
		{[]any{"disks", 0, "source"}, g.link("projects/" + gcloudProject + "/zones/" + zoneA + "/disks/solo")},
		{[]any{"disks", 0, "licenses", 0}, g.link("projects/debian-cloud/global/licenses/debian-12-bookworm")},
		{[]any{"scheduling", "onHostMaintenance"}, "TERMINATE"},
		{[]any{"serviceAccounts", 0, "email"}, defaultServiceAccount(gcloudProject)},
		{[]any{"cpuPlatform"}, "Intel Cascade Lake"},
	} {
		if got := jsonAt(solo, c.path...); got != c.want {
			t.Errorf("%v = %v, want %v", c.path, got, c.want)
		}
	}
	for _, path := range [][]any{{"fingerprint"}, {"labelFingerprint"}, {"metadata", "fingerprint"}, {"creationTimestamp"},
		{"lastStartTimestamp"}, {"networkInterfaces", 0, "fingerprint"}, {"networkInterfaces", 0, "accessConfigs", 0, "natIP"}, {"id"}} {
		if s, _ := jsonAt(solo, path...).(string); s == "" {
			t.Errorf("%v is empty", path)
		}
	}
	if ip, err := netip.ParseAddr(jsonAt(solo, "networkInterfaces", 0, "networkIP").(string)); err != nil || !netip.MustParsePrefix("10.128.0.0/20").Contains(ip) {
		t.Errorf("networkIP %v is not in us-central1's default range", jsonAt(solo, "networkInterfaces", 0, "networkIP"))
	}

	// Several at once go to the batch endpoint, each its own insert.
	g.ok(t, &created, "compute", "instances", "create", "b1", "b2", "b3", "--zone", zoneA, "--machine-type", "g2-standard-4")
	if len(created) != 3 {
		t.Errorf("create b1 b2 b3 printed %d instances", len(created))
	}
	if n := g.requests.count(http.MethodPost, batchPath); n == 0 {
		t.Error("gcloud made no batch request")
	}
	g.ok(t, nil, "compute", "instances", "create", "c1", "--zone", zoneB, "--machine-type", "g2-standard-4")

	var described map[string]any
	g.ok(t, &described, "compute", "instances", "describe", "b2", "--zone", zoneA)
	if described["name"] != "b2" || described["status"] != "RUNNING" || jsonAt(described, "zone") != g.link("projects/"+gcloudProject+"/zones/"+zoneA) {
		t.Errorf("describe b2: %v", described)
	}

	t.Run("list in pages", func(t *testing.T) {
		before := g.requests.count(http.MethodGet, "/aggregated/instances")
		var listed []map[string]any
		g.ok(t, &listed, "compute", "instances", "list", "--page-size", "2")
		wantNames(t, listed, "b1", "b2", "b3", "c1", "solo")
		if n := g.requests.count(http.MethodGet, "/aggregated/instances") - before; n < 3 {
			t.Errorf("gcloud read %d pages of five instances at two a page", n)
		}
	})
	t.Run("list by zone", func(t *testing.T) {
		var listed []map[string]any
		g.ok(t, &listed, "compute", "instances", "list", "--zones", zoneA+","+zoneB)
		wantNames(t, listed, "b1", "b2", "b3", "c1", "solo")
		g.ok(t, &listed, "compute", "instances", "list", "--zones", zoneB)
		wantNames(t, listed, "c1")
	})
	t.Run("create again", func(t *testing.T) {
		stderr := g.fails(t, "compute", "instances", "create", "solo", "--zone", zoneA, "--machine-type", "g2-standard-4", "--log-http")
		wantIn(t, "gcloud's stderr", stderr, "The resource 'projects/"+gcloudProject+"/zones/"+zoneA+"/instances/solo' already exists", `"reason":"alreadyExists"`, "status: 409")
	})

	stderr := g.ok(t, nil, "compute", "instances", "delete", "solo", "--zone", zoneA, "--quiet")
	wantIn(t, "delete's stderr", stderr, "Deleted ["+g.link("projects/"+gcloudProject+"/zones/"+zoneA+"/instances/solo")+"]")
	stderr = g.ok(t, nil, "compute", "instances", "delete", "b1", "b2", "--zone", zoneA, "--quiet")
	wantIn(t, "delete's stderr", stderr, "/instances/b1].", "/instances/b2].")
	for _, name := range []string{"solo", "b1", "b2"} {
		if _, ok := g.world.ByName(cloud, scope(gcloudProject, zoneA), name); ok {
			t.Errorf("%s is still there", name)
		}
	}
	t.Run("delete again", func(t *testing.T) {
		stderr := g.fails(t, "compute", "instances", "delete", "solo", "--zone", zoneA, "--quiet", "--log-http")
		wantIn(t, "gcloud's stderr", stderr, "The resource 'projects/"+gcloudProject+"/zones/"+zoneA+"/instances/solo' was not found", `"reason":"notFound"`)
	})
}

func wantNames(t *testing.T, listed []map[string]any, want ...string) {
	t.Helper()
	var got []string
	for _, inst := range listed {
		got = append(got, inst["name"].(string))
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("listed %v, want each of %v once", got, want)
	}
}

// What GCE refuses, gcloud reports with GCE's own words and codes:
// stock-outs and quotas on the operation, bad references on the request.
func TestGcloudSurfacesErrors(t *testing.T) {
	t.Parallel()
	g := newGcloudFront(t, sim.Config{}, Options{})
	// (A second create of a name and a delete of a missing instance are
	// in TestGcloudInstanceLifecycle.)
	// us-central1-c has no g2-standard-4 left; us-east4 no L4 quota.
	g.world.SetCapacity(cloud, "us-central1-c", "g2-standard-4", catalog.OnDemand, 0)
	g.world.SetQuota(cloud, "us-east4", "NVIDIA_L4_GPUS", 0)

	create := func(zone, name string, extra ...string) []string {
		return append([]string{"compute", "instances", "create", name, "--zone", zone, "--machine-type", "g2-standard-4"}, extra...)
	}
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"stock-out", create("us-central1-c", "starved"),
			// gcloud prints the operation's error as YAML, wrapping the message.
			[]string{"code: ZONE_RESOURCE_POOL_EXHAUSTED", "message: The zone 'projects/demo-project/zones/us-central1-c' does not have enough"}},
		{"quota", create("us-east4-a", "over", "--log-http"),
			[]string{"Quota 'NVIDIA_L4_GPUS' exceeded. Limit: 0.0 in region us-east4.", "metric name = compute.googleapis.com/nvidia_l4_gpus",
				"limit name = NVIDIA-L4-GPUS-per-project-region", `"code":"QUOTA_EXCEEDED"`}},
		{"unknown network", create("us-central1-a", "lost", "--network", "nowhere"),
			[]string{"Invalid value for field 'resource.networkInterfaces[0].network': 'projects/demo-project/global/networks/nowhere'. The referenced network resource cannot be found."}},
		{"unknown subnetwork", create("us-central1-a", "lost", "--subnet", "nowhere"),
			[]string{"Invalid value for field 'resource.networkInterfaces[0].subnetwork': 'projects/demo-project/regions/us-central1/subnetworks/nowhere'. The referenced subnetwork resource cannot be found."}},
		{"unknown machine type", []string{"compute", "instances", "create", "lost", "--zone", "us-central1-a", "--machine-type", "g9-huge-1"},
			[]string{"Machine type with name 'g9-huge-1' does not exist in zone 'us-central1-a'."}},
		{"another machine type's GPUs", create("us-central1-a", "lost", "--accelerator", "type=nvidia-tesla-a100,count=1"),
			[]string{"[nvidia-tesla-a100, g2-standard-4] features are not compatible for creating instance."}},
		{"unknown image family", create("us-central1-a", "lost", "--image-family", "debian-99", "--image-project", "debian-cloud"),
			[]string{"The resource 'projects/debian-cloud/global/images/family/debian-99' was not found"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantIn(t, "gcloud's stderr", g.fails(t, tt.args...), tt.want...)
		})
	}
	for _, name := range []string{"starved", "over", "lost"} {
		if insts := g.world.List(cloud, func(i *sim.Instance) bool { return i.Name == name }); len(insts) != 0 {
			t.Errorf("refused instance %s exists", name)
		}
	}
}

// An empty bucket of write requests answers 403 rateLimitExceeded; gcloud
// reports it for the call it struck and creates the rest of a batch.
func TestGcloudSurfacesThrottling(t *testing.T) {
	t.Parallel()
	g := newGcloudFront(t, sim.Config{}, Options{})
	if err := g.world.SetRateLimits(sim.RateLimit{Cloud: cloud, Class: sim.ClassWrite, Rate: 0.001, Burst: 1}); err != nil {
		t.Fatal(err)
	}
	stderr := g.fails(t, "compute", "instances", "create", "t1", "t2", "--zone", "us-central1-a", "--machine-type", "g2-standard-4", "--log-http")
	wantIn(t, "gcloud's stderr", stderr, "Rate Limit Exceeded", `"reason":"rateLimitExceeded"`, "403")
	if n := len(g.world.List(cloud, nil)); n != 1 {
		t.Errorf("%d instances made, want the one a token allowed", n)
	}
	if n := g.world.Throttled()["gcp "+OpInsert]; n != 1 {
		t.Errorf("%d inserts throttled, want 1", n)
	}
}

// With operations that take time, gcloud waits on them, more than once,
// and the instance goes through PROVISIONING and STAGING to RUNNING, and
// through STOPPING when deleted.
func TestGcloudWaitsForOperations(t *testing.T) {
	t.Parallel()
	const latency = 1500 * time.Millisecond
	g := newGcloudFront(t, sim.Config{OperationTime: latency, PendingFor: latency},
		Options{WaitTimeout: 250 * time.Millisecond, PollInterval: 10 * time.Millisecond})
	instance := g.url + "/compute/v1/projects/" + gcloudProject + "/zones/us-central1-a/instances/slow"

	// watch reads the instance's status every 50ms until stop is closed.
	watch := func(stop <-chan struct{}) func() []string {
		var mu sync.Mutex
		var seen []string
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				select {
				case <-stop:
					return
				case <-time.After(50 * time.Millisecond):
				}
				resp, err := http.Get(instance)
				if err != nil {
					continue
				}
				var inst struct{ Status string }
				_ = json.NewDecoder(resp.Body).Decode(&inst)
				resp.Body.Close()
				mu.Lock()
				if inst.Status != "" && (len(seen) == 0 || seen[len(seen)-1] != inst.Status) {
					seen = append(seen, inst.Status)
				}
				mu.Unlock()
			}
		}()
		return func() []string {
			<-done
			mu.Lock()
			defer mu.Unlock()
			return seen
		}
	}

	stop := make(chan struct{})
	statuses := watch(stop)
	var created []map[string]any
	g.ok(t, &created, "compute", "instances", "create", "slow", "--zone", "us-central1-a", "--machine-type", "g2-standard-4")
	time.Sleep(100 * time.Millisecond)
	close(stop)
	if len(created) != 1 || created[0]["status"] != "RUNNING" {
		t.Errorf("create printed %v, want the instance RUNNING", created)
	}
	if got := statuses(); !slices.Equal(got, []string{"PROVISIONING", "STAGING", "RUNNING"}) {
		t.Errorf("statuses while created %v, want PROVISIONING, STAGING, RUNNING", got)
	}
	waits := g.requests.count(http.MethodPost, "/wait")
	if waits < 2 {
		t.Errorf("gcloud waited on the insert %d times, want more than once", waits)
	}

	stop = make(chan struct{})
	statuses = watch(stop)
	g.ok(t, nil, "compute", "instances", "delete", "slow", "--zone", "us-central1-a", "--quiet")
	close(stop)
	// The watch may see the instance RUNNING before gcloud asks; once
	// STOPPING it is gone, which the watch does not record.
	if got := statuses(); len(got) == 0 || got[len(got)-1] != "STOPPING" {
		t.Errorf("statuses while deleted %v, want STOPPING last", got)
	}
	if n := g.requests.count(http.MethodPost, "/wait") - waits; n < 2 {
		t.Errorf("gcloud waited on the delete %d times, want more than once", n)
	}
	if _, ok := g.world.ByName(cloud, scope(gcloudProject, "us-central1-a"), "slow"); ok {
		t.Error("the deleted instance is still there")
	}
}

// gcloud's bulk create calls bulkInsert, waits for it, then counts what
// it made from the zone's operations of the group: the per-instance
// inserts the bulkInsert stands for.
func TestGcloudBulkCreate(t *testing.T) {
	t.Parallel()
	g := newGcloudFront(t, sim.Config{}, Options{})
	var result map[string]any
	g.ok(t, &result, "compute", "instances", "bulk", "create", "--name-pattern", "train-#", "--count", "3",
		"--zone", "us-central1-a", "--machine-type", "g2-standard-4")
	if n := g.requests.count(http.MethodGet, "/zones/us-central1-a/operations"); n != 1 {
		t.Errorf("gcloud listed the zone's operations %d times, want once", n)
	}
	if result["createdInstanceCount"] != 3.0 || result["failedInstanceCount"] != 0.0 || len(jsonAt(result, "instances").([]any)) != 3 {
		t.Errorf("bulk create printed %v", result)
	}
	for _, name := range []string{"train-1", "train-2", "train-3"} {
		if _, ok := g.world.ByName(cloud, scope(gcloudProject, "us-central1-a"), name); !ok {
			t.Errorf("%s was not made", name)
		}
	}
}

// Networks and subnetworks gcloud makes are there for instances, which
// get their address in the subnetwork's range; a network in use cannot
// be deleted.
func TestGcloudNetworks(t *testing.T) {
	t.Parallel()
	g := newGcloudFront(t, sim.Config{}, Options{})
	g.ok(t, nil, "compute", "networks", "create", "gpu-net", "--subnet-mode", "custom")
	g.ok(t, nil, "compute", "networks", "subnets", "create", "nodes", "--network", "gpu-net", "--region", "us-central1", "--range", "10.8.0.0/24")
	var created []map[string]any
	g.ok(t, &created, "compute", "instances", "create", "on-net", "--zone", "us-central1-a", "--machine-type", "g2-standard-4",
		"--network", "gpu-net", "--subnet", "nodes", "--no-address")
	if len(created) != 1 {
		t.Fatalf("create printed %v", created)
	}
	nic := jsonAt(created[0], "networkInterfaces", 0)
	if jsonAt(nic, "network") != g.link("projects/"+gcloudProject+"/global/networks/gpu-net") ||
		jsonAt(nic, "subnetwork") != g.link("projects/"+gcloudProject+"/regions/us-central1/subnetworks/nodes") || jsonAt(nic, "accessConfigs") != nil {
		t.Errorf("network interface %v", nic)
	}
	if ip, err := netip.ParseAddr(jsonAt(nic, "networkIP").(string)); err != nil || !netip.MustParsePrefix("10.8.0.0/24").Contains(ip) {
		t.Errorf("networkIP %v is not in the subnetwork's range", jsonAt(nic, "networkIP"))
	}
	stderr := g.fails(t, "compute", "networks", "delete", "gpu-net", "--quiet")
	wantIn(t, "gcloud's stderr", stderr, "The network resource 'projects/demo-project/global/networks/gpu-net' is already being used by 'projects/demo-project/zones/us-central1-a/instances/on-net'")
}

// Over https, with the emulator's own CA, links name the https base.
func TestGcloudOverHTTPS(t *testing.T) {
	t.Parallel()
	gcloudPath(t)
	files, err := simtls.Ensure(filepath.Join(t.TempDir(), "tls"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := files.ServerConfig()
	if err != nil {
		t.Fatal(err)
	}
	g := newGcloudFrontTLS(t, sim.Config{}, Options{}, cfg, files.CA)
	if !strings.HasPrefix(g.url, "https://127.0.0.1:") {
		t.Fatalf("front at %s", g.url)
	}
	var created []map[string]any
	g.ok(t, &created, "compute", "instances", "create", "secure", "--zone", "us-central1-a", "--machine-type", "g2-standard-4")
	if len(created) != 1 || created[0]["selfLink"] != g.link("projects/"+gcloudProject+"/zones/us-central1-a/instances/secure") {
		t.Errorf("create printed %v, want the instance under %s", created, g.url)
	}
}
