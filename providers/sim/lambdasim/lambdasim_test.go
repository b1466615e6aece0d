// SPDX-License-Identifier: Apache-2.0

package lambdasim

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

var epoch = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

const (
	testKey    = "secret-test-key"
	testSSHKey = "ops"
	a10        = "gpu_1x_a10"
	h100       = "gpu_8x_h100_sxm5"
)

// testCatalog is two Lambda regions, each one zone named as the region,
// with an A10 type in both and an H100 type in one, on-demand only, and a
// GPU quota the account has.
func testCatalog() *catalog.Catalog {
	return &catalog.Catalog{
		Regions: []catalog.Region{
			{Cloud: catalog.Lambda, Name: "us-east-1", Country: "US", Zones: []string{"us-east-1"}},
			{Cloud: catalog.Lambda, Name: "us-west-1", Country: "US", Zones: []string{"us-west-1"}},
		},
		Offers: []catalog.Offer{
			{Cloud: catalog.Lambda, Region: "us-east-1", InstanceType: a10, Market: catalog.OnDemand, GPUModel: "A10", GPUs: 1, VCPUs: 30, MemoryGiB: 200, PriceMicros: 750000},
			{Cloud: catalog.Lambda, Region: "us-west-1", InstanceType: a10, Market: catalog.OnDemand, GPUModel: "A10", GPUs: 1, VCPUs: 30, MemoryGiB: 200, PriceMicros: 750000},
			{Cloud: catalog.Lambda, Region: "us-east-1", InstanceType: h100, Market: catalog.OnDemand, GPUModel: "H100", GPUs: 8, VCPUs: 208, MemoryGiB: 1800, PriceMicros: 23920000},
		},
		Quotas: []catalog.Quota{{Cloud: catalog.Lambda, Name: "gpus", Description: "GPUs", Scope: catalog.GlobalScope, Unit: catalog.GPUs}},
		QuotaUses: []catalog.QuotaUse{
			{Cloud: catalog.Lambda, InstanceType: a10, Market: catalog.OnDemand, Quota: "gpus", Per: 1},
			{Cloud: catalog.Lambda, InstanceType: h100, Market: catalog.OnDemand, Quota: "gpus", Per: 8},
		},
	}
}

type front struct {
	t      *testing.T
	world  *sim.World
	clock  *sim.ManualClock
	server *Server
	url    string
}

func newFront(t *testing.T, cfg sim.Config, opts Options) *front {
	t.Helper()
	clock := sim.NewManualClock(epoch)
	cfg.Clock = clock
	if cfg.Catalog == nil {
		cfg.Catalog = testCatalog()
	}
	w, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if opts.SSHKeys == nil {
		opts.SSHKeys = []SSHKey{{Name: testSSHKey, PublicKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAITest ops@example"}}
	}
	s := New(w, opts)
	ts := httptest.NewServer(s)
	t.Cleanup(func() {
		ts.Close()
		if n := s.panics.Load(); n != 0 {
			t.Errorf("%d requests panicked", n)
		}
	})
	return &front{t: t, world: w, clock: clock, server: s, url: ts.URL}
}

// answer is a response: its status, Retry-After, and body decoded.
type answer struct {
	status     int
	retryAfter string
	data       json.RawMessage
	err        errorBody
}

func (f *front) callAs(auth, method, path string, body any) answer {
	f.t.Helper()
	var rd io.Reader
	if body != nil {
		raw, ok := body.(string)
		if !ok {
			b, err := json.Marshal(body)
			if err != nil {
				f.t.Fatal(err)
			}
			raw = string(b)
		}
		rd = strings.NewReader(raw)
	}
	req, err := http.NewRequest(method, f.url+"/api/v1/"+path, rd)
	if err != nil {
		f.t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		f.t.Fatal(err)
	}
	a := answer{status: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After")}
	var env struct {
		Data  json.RawMessage `json:"data"`
		Error *errorBody      `json:"error"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		f.t.Fatalf("%s %s answered %d with a body that is not JSON: %q", method, path, resp.StatusCode, raw)
	}
	a.data = env.Data
	if env.Error != nil {
		a.err = *env.Error
	}
	if (resp.StatusCode == http.StatusOK) != (env.Error == nil) {
		f.t.Fatalf("%s %s answered %d with %s", method, path, resp.StatusCode, raw)
	}
	return a
}

func (f *front) call(method, path string, body any) answer {
	f.t.Helper()
	return f.callAs("Bearer "+testKey, method, path, body)
}

// decode reads an answer's data, failing the test on an error answer.
func decode[T any](t *testing.T, a answer) T {
	t.Helper()
	var v T
	if a.status != http.StatusOK {
		t.Fatalf("answered %d %s: %s", a.status, a.err.Code, a.err.Message)
	}
	if err := json.Unmarshal(a.data, &v); err != nil {
		t.Fatalf("decoding %s: %v", a.data, err)
	}
	return v
}

func launchBody(region, typ, name string) map[string]any {
	return map[string]any{
		"region_name": region, "instance_type_name": typ, "ssh_key_names": []string{testSSHKey},
		"file_system_names": []string{}, "quantity": 1, "name": name, "image": map[string]string{"family": "lambda-stack-22-04"},
		"user_data": "#cloud-config\n",
	}
}

func (f *front) launch(body map[string]any) []string {
	f.t.Helper()
	return decode[struct {
		IDs []string `json:"instance_ids"`
	}](f.t, f.call("POST", "instance-operations/launch", body)).IDs
}

func wantError(t *testing.T, a answer, status int, code string) {
	t.Helper()
	if a.status != status || a.err.Code != code {
		t.Fatalf("answered %d %q (%s), want %d %s", a.status, a.err.Code, a.err.Message, status, code)
	}
}

func TestInstanceTypes(t *testing.T) {
	f := newFront(t, sim.Config{Capacity: 4}, Options{})
	types := decode[map[string]typeAvailability](t, f.call("GET", "instance-types", nil))
	h := types[h100]
	if h.InstanceType.PriceCentsPerHour != 2392 || h.InstanceType.Specs.GPUs != 8 || h.InstanceType.Specs.VCPUs != 208 || h.InstanceType.Name != h100 {
		t.Errorf("%s is described as %+v", h100, h.InstanceType)
	}
	if !strings.HasPrefix(h.InstanceType.Description, "8x H100") || !strings.HasPrefix(h.InstanceType.GPUDescription, "H100") {
		t.Errorf("%s is described as %q with GPUs %q", h100, h.InstanceType.Description, h.InstanceType.GPUDescription)
	}
	if got := regionNames(h.Regions); got != "us-east-1" {
		t.Errorf("%s has capacity in %s, want us-east-1 alone, the one region that sells it", h100, got)
	}
	if got := regionNames(types[a10].Regions); got != "us-east-1 us-west-1" || types[a10].InstanceType.PriceCentsPerHour != 75 {
		t.Errorf("%s has capacity in %q at %d cents, want both regions at 75", a10, got, types[a10].InstanceType.PriceCentsPerHour)
	}

	// A region without room for one more is not listed, and is again once
	// room is made.
	f.world.SetCapacity(catalog.Lambda, "us-east-1", a10, catalog.OnDemand, 1)
	ids := f.launch(launchBody("us-east-1", a10, "one"))
	types = decode[map[string]typeAvailability](t, f.call("GET", "instance-types", nil))
	if got := regionNames(types[a10].Regions); got != "us-west-1" {
		t.Errorf("with us-east-1 full, %s has capacity in %q, want us-west-1", a10, got)
	}
	f.call("POST", "instance-operations/terminate", map[string]any{"instance_ids": ids})
	types = decode[map[string]typeAvailability](t, f.call("GET", "instance-types", nil))
	if got := regionNames(types[a10].Regions); got != "us-east-1 us-west-1" {
		t.Errorf("after the terminate, %s has capacity in %q, want both regions", a10, got)
	}

	// A type no region sells any longer is not listed at all.
	f.world.SetOffered(catalog.Lambda, "us-east-1", h100, false)
	types = decode[map[string]typeAvailability](t, f.call("GET", "instance-types", nil))
	if _, ok := types[h100]; ok {
		t.Errorf("%s is listed though no region sells it", h100)
	}
}

func regionNames(regions []region) string {
	var names []string
	for _, r := range regions {
		names = append(names, r.Name)
	}
	return strings.Join(names, " ")
}

func TestAuth(t *testing.T) {
	basic := func(user, pass string) string {
		return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
	}
	for _, c := range []struct {
		name string
		keys []string
		auth string
		ok   bool
	}{
		{"no key", nil, "", false},
		{"an empty bearer token", nil, "Bearer ", false},
		{"any key when none is configured", nil, "Bearer whatever", true},
		{"the configured key", []string{testKey}, "Bearer " + testKey, true},
		{"another key", []string{testKey}, "Bearer " + testKey + "x", false},
		{"basic with the key as user", []string{testKey}, basic(testKey, ""), true},
		{"basic with a password", []string{testKey}, basic(testKey, "pw"), false},
		{"basic that is not base64", []string{testKey}, "Basic %%%", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFront(t, sim.Config{}, Options{APIKeys: c.keys})
			a := f.callAs(c.auth, "GET", "instances", nil)
			if c.ok {
				decode[[]instance](t, a)
				return
			}
			wantError(t, a, http.StatusUnauthorized, CodeInvalidAPIKey)
			if a.err.Message != "API key was invalid, expired, or deleted." || a.err.Suggestion == "" {
				t.Errorf("refused with %+v", a.err)
			}
			if calls := f.world.Calls()["lambda "+OpList]; calls != 0 {
				t.Errorf("a refused key's request reached the world %d times", calls)
			}
		})
	}
}

func TestLifecycle(t *testing.T) {
	f := newFront(t, sim.Config{PendingFor: time.Minute, OperationTime: 30 * time.Second}, Options{})
	ids := f.launch(launchBody("us-east-1", h100, "gf.train.w.x"))
	if len(ids) != 1 || len(ids[0]) != 32 {
		t.Fatalf("launched %v, want one id of 32 hex digits", ids)
	}
	get := func() instance { return decode[instance](t, f.call("GET", "instances/"+ids[0], nil)) }
	inst := get()
	if inst.Status != StatusBooting || inst.IP != "" || inst.Name == nil || *inst.Name != "gf.train.w.x" {
		t.Fatalf("a new instance is %+v, want booting without an address, with its name", inst)
	}
	if inst.Region.Name != "us-east-1" || inst.InstanceType.Name != h100 || inst.InstanceType.PriceCentsPerHour != 2392 ||
		len(inst.SSHKeyNames) != 1 || inst.SSHKeyNames[0] != testSSHKey || inst.FileSystemNames == nil || inst.IsReserved {
		t.Errorf("the instance is rendered as %+v", inst)
	}
	f.clock.Advance(time.Minute - time.Nanosecond)
	if s := get().Status; s != StatusBooting {
		t.Fatalf("just before the launch time the instance is %s, want booting", s)
	}
	f.clock.Advance(time.Nanosecond)
	if inst := get(); inst.Status != StatusActive || inst.IP == "" || inst.PrivateIP == "" || inst.Hostname == "" {
		t.Fatalf("after the launch time the instance is %+v, want active with its addresses", inst)
	}

	terminated := decode[struct {
		Instances []instance `json:"terminated_instances"`
	}](t, f.call("POST", "instance-operations/terminate", map[string]any{"instance_ids": ids})).Instances
	if len(terminated) != 1 || terminated[0].ID != ids[0] || terminated[0].Status != StatusTerminating {
		t.Fatalf("terminate answered %+v, want the instance terminating", terminated)
	}
	// A second terminate while it is terminating answers it again.
	decode[json.RawMessage](t, f.call("POST", "instance-operations/terminate", map[string]any{"instance_ids": ids}))
	f.clock.Advance(30*time.Second - time.Nanosecond)
	listed := decode[[]instance](t, f.call("GET", "instances", nil))
	if len(listed) != 1 || listed[0].Status != StatusTerminating {
		t.Fatalf("during the operation time the list is %+v, want the instance terminating", listed)
	}
	f.clock.Advance(time.Nanosecond)
	if listed := decode[[]instance](t, f.call("GET", "instances", nil)); len(listed) != 0 {
		t.Fatalf("after the operation time the list is %+v, want it empty", listed)
	}
	wantError(t, f.call("GET", "instances/"+ids[0], nil), http.StatusNotFound, CodeObjectDoesNotExist)
	wantError(t, f.call("POST", "instance-operations/terminate", map[string]any{"instance_ids": ids}), http.StatusNotFound, CodeObjectDoesNotExist)
}

func TestLaunchInvalid(t *testing.T) {
	with := func(key string, v any) map[string]any {
		b := launchBody("us-east-1", a10, "n")
		if v == nil {
			delete(b, key)
		} else {
			b[key] = v
		}
		return b
	}
	for _, c := range []struct {
		name  string
		body  any
		field string
	}{
		{"unknown region", with("region_name", "mars-1"), "region_name"},
		{"no region", with("region_name", nil), "region_name"},
		{"unknown type", with("instance_type_name", "gpu_9x_z9"), "instance_type_name"},
		{"no SSH key", with("ssh_key_names", []string{}), "ssh_key_names"},
		{"two SSH keys", with("ssh_key_names", []string{testSSHKey, testSSHKey}), "ssh_key_names"},
		{"an SSH key the account lacks", with("ssh_key_names", []string{"nobody"}), "ssh_key_names"},
		{"a file system", with("file_system_names", []string{"data"}), "file_system_names"},
		{"a name over 64 characters", with("name", strings.Repeat("n", 65)), "name"},
		{"no instances", with("quantity", 0), "quantity"},
		{"a field the API does not have", with("tags", []string{"a"}), "tags"},
		{"a field of the wrong type", with("quantity", "one"), "quantity"},
		{"an image by family and id", with("image", map[string]string{"family": "f", "id": "i"}), "image"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFront(t, sim.Config{}, Options{})
			a := f.call("POST", "instance-operations/launch", c.body)
			wantError(t, a, http.StatusBadRequest, CodeInvalidParameters)
			if !strings.Contains(a.err.Message, "'"+c.field+"'") {
				t.Errorf("the error %q does not name %s", a.err.Message, c.field)
			}
			if n := len(f.world.Instances()); n != 0 {
				t.Errorf("a refused launch left %d instances", n)
			}
		})
	}
	t.Run("a name of 64 characters", func(t *testing.T) {
		f := newFront(t, sim.Config{}, Options{})
		f.launch(with("name", strings.Repeat("n", 64)))
	})
	t.Run("not JSON", func(t *testing.T) {
		f := newFront(t, sim.Config{}, Options{})
		wantError(t, f.call("POST", "instance-operations/launch", "{"), http.StatusBadRequest, CodeInvalidParameters)
	})
}

func TestLaunchCapacity(t *testing.T) {
	f := newFront(t, sim.Config{Capacity: 2}, Options{})
	two := launchBody("us-east-1", a10, "n")
	two["quantity"] = 3
	wantError(t, f.call("POST", "instance-operations/launch", two), http.StatusBadRequest, CodeInsufficientCapacity)
	if n := len(f.world.Instances()); n != 0 {
		t.Fatalf("a launch of more than fit left %d instances: it is all or nothing", n)
	}
	two["quantity"] = 2
	if ids := f.launch(two); len(ids) != 2 {
		t.Fatalf("a launch of 2 made %v", ids)
	}
	wantError(t, f.call("POST", "instance-operations/launch", launchBody("us-east-1", a10, "n")), http.StatusBadRequest, CodeInsufficientCapacity)
	// A type a region does not sell has no capacity there.
	wantError(t, f.call("POST", "instance-operations/launch", launchBody("us-west-1", h100, "n")), http.StatusBadRequest, CodeInsufficientCapacity)
}

func TestQuota(t *testing.T) {
	f := newFront(t, sim.Config{}, Options{})
	f.world.SetQuota(catalog.Lambda, "", "gpus", 8)
	f.launch(launchBody("us-east-1", h100, "n"))
	a := f.call("POST", "instance-operations/launch", launchBody("us-east-1", a10, "n"))
	wantError(t, a, http.StatusBadRequest, CodeQuotaExceeded)
	if !strings.Contains(a.err.Message, "limit 8") {
		t.Errorf("the quota error %q does not give the limit", a.err.Message)
	}
}

// TestNoIdempotency: the API takes no token, and a name is only a label.
func TestNoIdempotency(t *testing.T) {
	f := newFront(t, sim.Config{}, Options{})
	first := f.launch(launchBody("us-east-1", a10, "same"))
	second := f.launch(launchBody("us-east-1", a10, "same"))
	if first[0] == second[0] {
		t.Fatalf("two identical launches made one instance, %s", first[0])
	}
	listed := decode[[]instance](t, f.call("GET", "instances", nil))
	if len(listed) != 2 || listed[0].ID != first[0] || listed[1].ID != second[0] || *listed[0].Name != "same" || *listed[1].Name != "same" {
		t.Fatalf("the list is %+v, want both instances named same, in launch order", listed)
	}
}

func TestRateLimits(t *testing.T) {
	f := newFront(t, sim.Config{}, Options{})
	if err := f.world.SetRateLimits(DefaultRateLimits()...); err != nil {
		t.Fatal(err)
	}
	for range GeneralBurst {
		decode[[]instance](t, f.call("GET", "instances", nil))
	}
	a := f.call("GET", "instances", nil)
	wantError(t, a, http.StatusTooManyRequests, CodeTooManyRequests)
	if a.retryAfter != "1" {
		t.Errorf("a refusal of the general bucket says Retry-After %q, want 1", a.retryAfter)
	}
	// Each key has buckets of its own.
	decode[[]instance](t, f.callAs("Bearer another-key", "GET", "instances", nil))

	// Launches draw on a bucket of their own, one token each twelve seconds.
	f.launch(launchBody("us-east-1", a10, "n"))
	a = f.call("POST", "instance-operations/launch", launchBody("us-east-1", a10, "n"))
	wantError(t, a, http.StatusTooManyRequests, CodeTooManyRequests)
	if a.retryAfter != "12" {
		t.Errorf("a refusal of the launch bucket says Retry-After %q, want 12", a.retryAfter)
	}
	f.clock.Advance(11 * time.Second)
	wantError(t, f.call("POST", "instance-operations/launch", launchBody("us-east-1", a10, "n")), http.StatusTooManyRequests, CodeTooManyRequests)
	f.clock.Advance(time.Second)
	f.launch(launchBody("us-east-1", a10, "n"))
	if got := f.world.Throttled(); got["lambda "+OpList] != 1 || got["lambda "+OpLaunch] != 2 {
		t.Errorf("the world counts the refusals as %v", got)
	}

	// Lower limits, as tests and the demo set them, hold as declared.
	if err := f.world.SetRateLimits(sim.RateLimit{Cloud: catalog.Lambda, Class: sim.ClassLaunch, Rate: 1000, Burst: 5}); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		f.launch(launchBody("us-east-1", a10, "n"))
	}
}

func TestFaults(t *testing.T) {
	for _, c := range []struct {
		name   string
		fault  sim.Fault
		status int
		code   string
		retry  string
	}{
		{"capacity", sim.Fault{Kind: sim.FaultCapacity}, http.StatusBadRequest, CodeInsufficientCapacity, ""},
		{"quota", sim.Fault{Kind: sim.FaultQuota}, http.StatusBadRequest, CodeQuotaExceeded, ""},
		{"throttle", sim.Fault{Kind: sim.FaultThrottle}, http.StatusTooManyRequests, CodeTooManyRequests, "1"},
		{"server error", sim.Fault{Kind: sim.FaultServerError}, http.StatusInternalServerError, CodeUnknown, ""},
		{"server error as a 503", sim.Fault{Kind: sim.FaultServerError, Code: "503"}, http.StatusServiceUnavailable, CodeUnknown, ""},
		{"an inactive account", sim.Fault{Kind: sim.FaultServerError, Code: CodeAccountInactive}, http.StatusForbidden, CodeAccountInactive, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFront(t, sim.Config{}, Options{})
			fault := c.fault
			fault.Cloud, fault.Op, fault.Region, fault.InstanceType, fault.Times = catalog.Lambda, OpLaunch, "us-east-1", a10, 1
			if err := f.world.AddFaults(&fault); err != nil {
				t.Fatal(err)
			}
			// A launch elsewhere does not match.
			f.launch(launchBody("us-west-1", a10, "n"))
			a := f.call("POST", "instance-operations/launch", launchBody("us-east-1", a10, "n"))
			wantError(t, a, c.status, c.code)
			if a.retryAfter != c.retry {
				t.Errorf("Retry-After %q, want %q", a.retryAfter, c.retry)
			}
			if n := len(f.world.Instances()); n != 1 {
				t.Errorf("the faulted launch left %d instances beside the first", n-1)
			}
			f.launch(launchBody("us-east-1", a10, "n"))
			if got := f.world.Calls()["lambda "+OpLaunch]; got != 3 {
				t.Errorf("the world counted %d launches, want 3", got)
			}
		})
	}
	t.Run("every operation", func(t *testing.T) {
		f := newFront(t, sim.Config{}, Options{})
		if err := f.world.AddFaults(&sim.Fault{Cloud: catalog.Lambda, Kind: sim.FaultServerError, Rate: 1}); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct{ method, path string }{
			{"GET", "instance-types"}, {"GET", "instances"}, {"GET", "instances/x"}, {"GET", "ssh-keys"}, {"DELETE", "ssh-keys/x"},
		} {
			wantError(t, f.call(c.method, c.path, nil), http.StatusInternalServerError, CodeUnknown)
		}
		wantError(t, f.call("POST", "instance-operations/terminate", map[string]any{"instance_ids": []string{"x"}}), http.StatusInternalServerError, CodeUnknown)
		wantError(t, f.call("POST", "ssh-keys", map[string]string{"name": "k", "public_key": "ssh-ed25519 AAAA"}), http.StatusInternalServerError, CodeUnknown)
	})
}

func TestSSHKeys(t *testing.T) {
	f := newFront(t, sim.Config{}, Options{})
	keys := decode[[]sshKey](t, f.call("GET", "ssh-keys", nil))
	if len(keys) != 1 || keys[0].Name != testSSHKey || len(keys[0].ID) != 32 {
		t.Fatalf("the account starts with %+v, want the key Options names", keys)
	}
	added := decode[sshKey](t, f.call("POST", "ssh-keys", map[string]string{"name": "laptop", "public_key": "ssh-ed25519 AAAAlaptop me@laptop"}))
	if added.Name != "laptop" || added.ID == "" || added.ID == keys[0].ID {
		t.Fatalf("adding a key answered %+v", added)
	}
	a := f.call("POST", "ssh-keys", map[string]string{"name": "laptop", "public_key": "ssh-ed25519 AAAAother"})
	wantError(t, a, http.StatusBadRequest, CodeInvalidParameters)
	if !strings.Contains(a.err.Message, "'name'") {
		t.Errorf("a name taken is refused with %q, which does not name the field", a.err.Message)
	}
	wantError(t, f.call("POST", "ssh-keys", map[string]string{"name": "x", "public_key": "junk"}), http.StatusBadRequest, CodeInvalidParameters)
	// A launch may name the new key.
	body := launchBody("us-east-1", a10, "n")
	body["ssh_key_names"] = []string{"laptop"}
	f.launch(body)

	decode[json.RawMessage](t, f.call("DELETE", "ssh-keys/"+added.ID, nil))
	wantError(t, f.call("DELETE", "ssh-keys/"+added.ID, nil), http.StatusNotFound, CodeObjectDoesNotExist)
	if keys := decode[[]sshKey](t, f.call("GET", "ssh-keys", nil)); len(keys) != 1 {
		t.Errorf("after the delete the account has %+v", keys)
	}
	// A front started again over the world keeps its keys and adds none
	// twice.
	again := New(f.world, Options{SSHKeys: []SSHKey{{Name: testSSHKey, PublicKey: "ssh-ed25519 AAAAC3"}}})
	if n := len(again.sshKeys()); n != 1 {
		t.Errorf("a second front over the world sees %d keys, want 1", n)
	}
	// The key the account had from the start can be deleted too, and
	// stays deleted for a front started again.
	decode[json.RawMessage](t, f.call("DELETE", "ssh-keys/"+keys[0].ID, nil))
	wantError(t, f.call("DELETE", "ssh-keys/"+keys[0].ID, nil), http.StatusNotFound, CodeObjectDoesNotExist)
	if n := len(New(f.world, Options{SSHKeys: []SSHKey{{Name: testSSHKey, PublicKey: "ssh-ed25519 AAAAC3"}}}).sshKeys()); n != 0 {
		t.Errorf("after deleting it, a front started again sees %d keys, want 0", n)
	}
}

// Starting a front leaves its world as it was: the keys the account has
// from the start are not written into it, so a state file is not made or
// changed by a start alone.
func TestStartingAFrontChangesNothing(t *testing.T) {
	dir := t.TempDir()
	w, err := sim.New(sim.Config{Catalog: testCatalog(), StatePath: dir + "/state.json"})
	if err != nil {
		t.Fatal(err)
	}
	s := New(w, Options{SSHKeys: []SSHKey{{Name: testSSHKey, PublicKey: "ssh-ed25519 AAAAC3 ops@example"}}})
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	if n := w.Saves(); n != 0 {
		t.Errorf("starting a front saved the world %d times", n)
	}
	if len(s.sshKeys()) != 1 {
		t.Errorf("the account has %+v, want the key it starts with", s.sshKeys())
	}
}

func TestRoutes(t *testing.T) {
	f := newFront(t, sim.Config{}, Options{})
	for _, c := range []struct{ method, path string }{
		{"GET", "nothing"}, {"PUT", "instances"}, {"GET", "instances/"}, {"GET", "instance-operations/launch"},
	} {
		wantError(t, f.call(c.method, c.path, nil), http.StatusNotFound, CodeObjectDoesNotExist)
	}
	resp, err := http.Post(f.url+"/v1/instances", "application/json", bytes.NewReader(nil))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("a path outside /api/v1 answered %d", resp.StatusCode)
	}
}

// TestRestart: the account's keys and instances outlive a restart of the
// emulator, and its state file never holds a launch's user data.
func TestRestart(t *testing.T) {
	path := t.TempDir() + "/world.json"
	f := newFront(t, sim.Config{StatePath: path}, Options{})
	body := launchBody("us-east-1", a10, "kept")
	body["user_data"] = "#cloud-config\nsecret: hunter2\n"
	ids := f.launch(body)
	if err := f.world.Save(); err != nil {
		t.Fatal(err)
	}
	state, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(state), "hunter2") {
		t.Fatal("the state file holds a launch's user data")
	}
	again := newFront(t, sim.Config{StatePath: path}, Options{})
	listed := decode[[]instance](t, again.call("GET", "instances", nil))
	if len(listed) != 1 || listed[0].ID != ids[0] || *listed[0].Name != "kept" || listed[0].SSHKeyNames[0] != testSSHKey {
		t.Fatalf("after a restart the account lists %+v", listed)
	}
	if keys := decode[[]sshKey](t, again.call("GET", "ssh-keys", nil)); len(keys) != 1 {
		t.Fatalf("after a restart the account has keys %+v, want the one, not added twice", keys)
	}
}
