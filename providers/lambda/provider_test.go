// SPDX-License-Identifier: Apache-2.0

package lambda

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/providers/sim/lambdasim"
	"github.com/gpufleet/gpufleet/schema"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

const (
	testKey     = "lambda-test-key-7f3a9c"
	testSSHKey  = "gpufleet"
	testRegion  = "us-east-1"
	otherRegion = "us-west-1"
	a10         = "gpu_1x_a10"
	h100        = "gpu_8x_h100_sxm5"
)

var testOffer = planner.OfferKey{Cloud: Name, Region: testRegion, Zone: testRegion, InstanceType: a10, Market: catalog.OnDemand}

// testCatalog is Lambda Cloud as the catalog will have it: regions of one
// zone each, named as the region, on-demand offers only. The account's
// GPU limit, which Lambda enforces without publishing it, is a quota of
// the world's, so that a launch over it can be refused.
func testCatalog() *catalog.Catalog {
	offer := func(region, typ, gpu string, gpus int, micros int64) catalog.Offer {
		return catalog.Offer{Cloud: Name, Region: region, InstanceType: typ, Market: catalog.OnDemand, GPUModel: gpu, GPUs: gpus, VCPUs: 30 * gpus, MemoryGiB: 200 * float64(gpus), PriceMicros: micros}
	}
	return &catalog.Catalog{
		Source: "test",
		Regions: []catalog.Region{
			{Cloud: Name, Name: testRegion, Geo: "us", Country: "US", Zones: []string{testRegion}},
			{Cloud: Name, Name: otherRegion, Geo: "us", Country: "US", Zones: []string{otherRegion}},
			{Cloud: Name, Name: "europe-central-1", Geo: "eu", Country: "DE", Zones: []string{"europe-central-1"}},
		},
		Offers: []catalog.Offer{
			offer(testRegion, a10, "A10", 1, 750000),
			offer(otherRegion, a10, "A10", 1, 750000),
			offer("europe-central-1", a10, "A10", 1, 750000),
			offer(testRegion, h100, "H100", 8, 23920000),
		},
		Quotas: []catalog.Quota{{Cloud: Name, Name: "gpus", Description: "GPUs of the account", Scope: catalog.GlobalScope, Unit: catalog.GPUs}},
		QuotaUses: []catalog.QuotaUse{
			{Cloud: Name, InstanceType: a10, Market: catalog.OnDemand, Quota: "gpus", Per: 1},
			{Cloud: Name, InstanceType: h100, Market: catalog.OnDemand, Quota: "gpus", Per: 8},
		},
	}
}

func testConfig() *schema.Lambda {
	cfg := &schema.Lambda{Enabled: true, Regions: []string{testRegion, otherRegion}}
	cfg.Launch.SSHKeyName = testSSHKey
	cfg.Launch.Image = "lambda-stack-22-04"
	return cfg
}

// backend is a provider over the Lambda front on loopback, whose retries
// wait a millisecond.
type backend struct {
	provider *Provider
	world    *sim.World
	url      string
}

// newBackend starts a world with room for the paging case's 1,001
// instances, its front, and a provider of testConfig. wrap, when set,
// wraps the front, to look at requests.
func newBackend(t *testing.T, cfg sim.Config, wrap func(http.Handler) http.Handler) backend {
	t.Helper()
	return newBackendWith(t, testConfig(), cfg, lambdasim.Options{}, wrap)
}

func newBackendWith(t *testing.T, lc *schema.Lambda, cfg sim.Config, fo lambdasim.Options, wrap func(http.Handler) http.Handler) backend {
	t.Helper()
	cfg.Capacity = max(cfg.Capacity, 2000)
	if cfg.Catalog == nil {
		cfg.Catalog = testCatalog()
	}
	w, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	fo.SSHKeys = append(fo.SSHKeys, lambdasim.SSHKey{Name: testSSHKey, PublicKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIgpufleet ops@example"})
	var front http.Handler = lambdasim.New(w, fo)
	if wrap != nil {
		front = wrap(front)
	}
	ts := httptest.NewServer(front)
	t.Cleanup(ts.Close)
	return backend{provider: newProvider(t, lc, w.Catalog(), ts.URL, testKey), world: w, url: ts.URL}
}

func newProvider(t *testing.T, lc *schema.Lambda, cat *catalog.Catalog, url, key string) *Provider {
	t.Helper()
	p, err := New(context.Background(), lc, cat, Options{
		Endpoint: url, APIKey: key, RetryMax: 3, RetryWaitMin: time.Millisecond, RetryWaitMax: 2 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func request(fleet string, slot int) providers.CreateRequest {
	return providers.CreateRequest{
		Token: planner.Token(fleet, "w", testOffer, "rev", slot), Offer: testOffer, Fleet: fleet, Workload: "w",
	}
}

func (b backend) lambdaInstances() []*sim.Instance {
	return b.world.List(Name, nil)
}

func TestRepeatedCreate(t *testing.T) {
	b := newBackend(t, sim.Config{}, nil)
	ctx := context.Background()
	req := request("f", 0)
	first, err := b.provider.Create(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if first.State != planner.StatePending || first.Token != req.Token || first.OfferKey != testOffer {
		t.Errorf("Create returned %+v", first)
	}
	again, err := b.provider.Create(ctx, req)
	if err != nil || again.ID != first.ID {
		t.Fatalf("a repeated Create returned %+v, %v; want %s", again, err, first.ID)
	}
	// A process started after a crash finds it too.
	restarted := newProvider(t, testConfig(), b.world.Catalog(), b.url, testKey)
	third, err := restarted.Create(ctx, req)
	if err != nil || third.ID != first.ID {
		t.Fatalf("a Create after a restart returned %+v, %v; want %s", third, err, first.ID)
	}
	if n := len(b.lambdaInstances()); n != 1 {
		t.Fatalf("the world holds %d instances for one token", n)
	}
	if got := b.world.Calls()["lambda "+lambdasim.OpLaunch]; got != 1 {
		t.Errorf("three creates of one token launched %d times", got)
	}
	// Another slot is another node.
	other, err := b.provider.Create(ctx, request("f", 1))
	if err != nil || other.ID == first.ID {
		t.Fatalf("another slot's Create returned %+v, %v", other, err)
	}

	// Once the first is terminating, its token launches anew.
	if err := b.provider.Delete(ctx, first); err != nil {
		t.Fatal(err)
	}
	fresh, err := b.provider.Create(ctx, req)
	if err != nil || fresh.ID == first.ID {
		t.Fatalf("a Create after its node was deleted returned %+v, %v; want a new instance", fresh, err)
	}
}

// TestCreateListFails: the list is what makes a create idempotent; without
// it nothing is launched.
func TestCreateListFails(t *testing.T) {
	b := newBackend(t, sim.Config{}, nil)
	if err := b.world.AddFaults(&sim.Fault{Cloud: Name, Op: lambdasim.OpList, Kind: sim.FaultServerError, Rate: 1}); err != nil {
		t.Fatal(err)
	}
	_, err := b.provider.Create(context.Background(), request("f", 0))
	if providers.KindOf(err) != providers.KindUnavailable {
		t.Fatalf("Create with the list failing: %v, want an unavailable error", err)
	}
	if calls := b.world.Calls()["lambda "+lambdasim.OpLaunch]; calls != 0 || len(b.lambdaInstances()) != 0 {
		t.Fatalf("Create launched %d times without a list", calls)
	}
}

// TestLaunchNotRetried: a launch that failed after it may have been
// served is not sent again; throttled, it is.
func TestLaunchNotRetried(t *testing.T) {
	b := newBackend(t, sim.Config{}, nil)
	if err := b.world.AddFaults(&sim.Fault{Cloud: Name, Op: lambdasim.OpLaunch, Kind: sim.FaultServerError, Times: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.provider.Create(context.Background(), request("f", 0)); providers.KindOf(err) != providers.KindUnavailable {
		t.Fatalf("Create with the launch failing: %v, want unavailable", err)
	}
	if calls := b.world.Calls()["lambda "+lambdasim.OpLaunch]; calls != 1 {
		t.Fatalf("a launch answered 500 was sent %d times", calls)
	}
	b.world.ClearFaults()
	if err := b.world.AddFaults(&sim.Fault{Cloud: Name, Op: lambdasim.OpLaunch, Kind: sim.FaultThrottle, Times: 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.provider.Create(context.Background(), request("f", 0)); err != nil {
		t.Fatalf("Create with two launches throttled: %v", err)
	}
	if calls := b.world.Calls()["lambda "+lambdasim.OpLaunch]; calls != 4 {
		t.Fatalf("the launches were sent %d times in all, want 1 + 3", calls)
	}
}

// A launch whose answer is lost made its instance: the create fails, and
// the next create of the same token finds the instance by its name instead
// of launching a second one.
func TestALaunchWhoseAnswerIsLostIsFoundByName(t *testing.T) {
	b := newBackend(t, sim.Config{}, nil)
	if err := b.world.AddFaults(&sim.Fault{Cloud: Name, Op: lambdasim.OpLaunch, Kind: sim.FaultFailLater, Times: 1}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	req := request("f", 0)
	if _, err := b.provider.Create(ctx, req); providers.KindOf(err) != providers.KindUnavailable {
		t.Fatalf("Create with the launch's answer lost: %v, want unavailable", err)
	}
	made := b.lambdaInstances()
	if len(made) != 1 {
		t.Fatalf("the lost launch left %d instances, want the one it made", len(made))
	}
	again, err := b.provider.Create(ctx, req)
	if err != nil || again.ID != made[0].ID {
		t.Fatalf("the create after it returned %+v, %v; want %s", again, err, made[0].ID)
	}
	if n := len(b.lambdaInstances()); n != 1 {
		t.Fatalf("the world holds %d instances for one token", n)
	}
	if calls := b.world.Calls()["lambda "+lambdasim.OpLaunch]; calls != 1 {
		t.Fatalf("%d launches for one token", calls)
	}
}

func TestErrorKinds(t *testing.T) {
	for _, c := range []struct {
		name  string
		fault sim.Fault
		want  providers.Kind
		code  string
	}{
		{"stock-out", sim.Fault{Kind: sim.FaultCapacity}, providers.KindCapacity, lambdasim.CodeInsufficientCapacity},
		{"quota", sim.Fault{Kind: sim.FaultQuota}, providers.KindQuota, lambdasim.CodeQuotaExceeded},
		{"throttled after retries", sim.Fault{Kind: sim.FaultThrottle}, providers.KindThrottled, lambdasim.CodeTooManyRequests},
		{"the API's failure", sim.Fault{Kind: sim.FaultServerError}, providers.KindUnavailable, lambdasim.CodeUnknown},
		{"an inactive account", sim.Fault{Kind: sim.FaultServerError, Code: lambdasim.CodeAccountInactive}, providers.KindAuth, lambdasim.CodeAccountInactive},
		{"invalid parameters", sim.Fault{Kind: sim.FaultServerError, Code: lambdasim.CodeInvalidParameters}, providers.KindInvalid, lambdasim.CodeInvalidParameters},
		{"a status without a known code", sim.Fault{Kind: sim.FaultServerError, Code: "503"}, providers.KindUnavailable, lambdasim.CodeUnknown},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := newBackend(t, sim.Config{}, nil)
			fault := c.fault
			fault.Cloud, fault.Op, fault.Rate = Name, lambdasim.OpLaunch, 1
			if err := b.world.AddFaults(&fault); err != nil {
				t.Fatal(err)
			}
			req := request("f", 0)
			_, err := b.provider.Create(context.Background(), req)
			var pe *providers.Error
			if !errors.As(err, &pe) || pe.Kind != c.want || pe.Code != c.code || pe.Offer != testOffer || pe.Cloud != Name {
				t.Fatalf("Create: %#v, want kind %s code %s on %s", err, c.want, c.code, testOffer)
			}
			if c.want == providers.KindAuth && !strings.Contains(err.Error(), APIKeyEnv) {
				t.Errorf("an auth error does not name %s: %v", APIKeyEnv, err)
			}
		})
	}
	t.Run("not found", func(t *testing.T) {
		b := newBackend(t, sim.Config{}, nil)
		_, err := b.provider.instance(context.Background(), "get", "0123456789abcdef0123456789abcdef")
		if providers.KindOf(err) != providers.KindNotFound {
			t.Fatalf("reading an unknown instance: %v, want not found", err)
		}
	})
	t.Run("the world's stock-out and quota", func(t *testing.T) {
		b := newBackend(t, sim.Config{}, nil)
		b.world.SetCapacity(Name, testRegion, a10, catalog.OnDemand, 0)
		if _, err := b.provider.Create(context.Background(), request("f", 0)); !errors.Is(err, providers.ErrCapacity) {
			t.Errorf("Create with no room: %v, want a capacity error", err)
		}
		b.world.SetCapacity(Name, testRegion, a10, catalog.OnDemand, 10)
		b.world.SetQuota(Name, "", "gpus", 0)
		if _, err := b.provider.Create(context.Background(), request("f", 0)); !errors.Is(err, providers.ErrQuota) {
			t.Errorf("Create over the quota: %v, want a quota error", err)
		}
	})
}

func TestAPIKey(t *testing.T) {
	t.Run("missing", func(t *testing.T) {
		t.Setenv(APIKeyEnv, "")
		_, err := New(context.Background(), testConfig(), testCatalog(), Options{})
		if err == nil || !strings.Contains(err.Error(), APIKeyEnv) {
			t.Fatalf("New without a key: %v, want an error naming %s", err, APIKeyEnv)
		}
	})
	t.Run("from the environment", func(t *testing.T) {
		t.Setenv(APIKeyEnv, testKey)
		b := newBackendWith(t, testConfig(), sim.Config{}, lambdasim.Options{APIKeys: []string{testKey}}, nil)
		p, err := New(context.Background(), testConfig(), testCatalog(), Options{Endpoint: b.url})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.List(context.Background(), providers.Selector{}); err != nil {
			t.Fatalf("List with the key from %s: %v", APIKeyEnv, err)
		}
	})
	t.Run("refused", func(t *testing.T) {
		const wrong = "wrong-key-4b1d8e2f"
		b := newBackendWith(t, testConfig(), sim.Config{}, lambdasim.Options{APIKeys: []string{testKey}}, nil)
		p := newProvider(t, testConfig(), b.world.Catalog(), b.url, wrong)
		ctx := context.Background()
		_, listErr := p.List(ctx, providers.Selector{})
		_, createErr := p.Create(ctx, request("f", 0))
		deleteErr := p.Delete(ctx, providers.Instance{ID: "0123456789abcdef0123456789abcdef"})
		_, offersErr := p.Offers(ctx)
		preflightErr := p.Preflight(ctx, testOffer)
		for name, err := range map[string]error{"List": listErr, "Create": createErr, "Delete": deleteErr, "Offers": offersErr, "Preflight": preflightErr} {
			if !errors.Is(err, providers.ErrAuth) || !strings.Contains(err.Error(), APIKeyEnv) {
				t.Errorf("%s with a refused key: %v, want an auth error naming %s", name, err, APIKeyEnv)
			}
			if err != nil && strings.Contains(err.Error(), wrong) {
				t.Errorf("%s's error shows the key: %v", name, err)
			}
		}
		capacity, err := p.Capacity(ctx)
		if err != nil || len(capacity.Warnings) != 1 || !strings.Contains(capacity.Warnings[0], APIKeyEnv) || strings.Contains(capacity.Warnings[0], wrong) {
			t.Errorf("Capacity with a refused key: %+v, %v; want one warning naming %s and not the key", capacity, err, APIKeyEnv)
		}
	})
	t.Run("never in an error", func(t *testing.T) {
		// An answer that quotes the key does not carry it into an error.
		quoting := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"error":{"code":"global/invalid-parameters","message":"bad request from `+strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")+`"}}`)
		})
		ts := httptest.NewServer(quoting)
		defer ts.Close()
		p := newProvider(t, testConfig(), testCatalog(), ts.URL, testKey)
		_, err := p.List(context.Background(), providers.Selector{})
		if err == nil || strings.Contains(err.Error(), testKey) {
			t.Fatalf("List: %v, which must not show the key", err)
		}
	})
}

func TestEndpoint(t *testing.T) {
	for _, c := range []struct {
		endpoint string
		ok       bool
		base     string
	}{
		{"", true, DefaultEndpoint},
		{"https://lambda.example.com", true, "https://lambda.example.com/api/v1"},
		{"https://proxy.example.com/lambda/api/v1/", true, "https://proxy.example.com/lambda/api/v1"},
		{"http://127.0.0.1:8080", true, "http://127.0.0.1:8080/api/v1"},
		{"http://lambda.example.com", false, ""},
		{"ftp://lambda.example.com", false, ""},
	} {
		p, err := New(context.Background(), testConfig(), testCatalog(), Options{Endpoint: c.endpoint, APIKey: testKey})
		if (err == nil) != c.ok {
			t.Errorf("endpoint %q: %v", c.endpoint, err)
			continue
		}
		if c.ok && p.base.String() != c.base {
			t.Errorf("endpoint %q calls %s, want %s", c.endpoint, p.base, c.base)
		}
	}
}

func TestList(t *testing.T) {
	clock := sim.NewManualClock(time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC))
	b := newBackend(t, sim.Config{Clock: clock, PendingFor: time.Minute, OperationTime: 30 * time.Second}, nil)
	ctx := context.Background()
	inst, err := b.provider.Create(ctx, request("f", 0))
	if err != nil {
		t.Fatal(err)
	}
	state := func() (planner.State, bool) {
		t.Helper()
		all, err := b.provider.List(ctx, providers.Selector{Fleet: "f"})
		if err != nil {
			t.Fatal(err)
		}
		for _, got := range all {
			if got.ID == inst.ID {
				if got.Token != inst.Token || got.Fleet != "f" || got.Workload != "w" || got.OfferKey != testOffer {
					t.Errorf("List shows %+v, want %+v", got, inst)
				}
				return got.State, true
			}
		}
		return "", false
	}
	if s, _ := state(); s != planner.StatePending {
		t.Fatalf("a booting instance is listed %s", s)
	}
	clock.Advance(time.Minute)
	if s, _ := state(); s != planner.StateRunning {
		t.Fatalf("an active instance is listed %s", s)
	}
	// Its type retired, the instance is still listed.
	for _, zone := range []string{testRegion, otherRegion, "europe-central-1"} {
		b.world.SetOffered(Name, zone, a10, false)
	}
	if s, ok := state(); !ok || s != planner.StateRunning {
		t.Fatalf("an instance of a type Lambda no longer lists is listed %q (%v)", s, ok)
	}
	if err := b.provider.Delete(ctx, inst); err != nil {
		t.Fatal(err)
	}
	if s, _ := state(); s != planner.StateTerminated {
		t.Fatalf("a terminating instance is listed %s", s)
	}
	clock.Advance(30 * time.Second)
	if s, ok := state(); ok {
		t.Fatalf("a terminated instance is listed %s", s)
	}

	// Other fleets, foreign names and regions not configured are left out.
	if all, err := b.provider.List(ctx, providers.Selector{Fleet: "other"}); err != nil || len(all) != 0 {
		t.Errorf("List of another fleet: %v, %v", all, err)
	}
}

func TestStateOf(t *testing.T) {
	for _, c := range []struct {
		status string
		want   planner.State
		listed bool
	}{
		{"booting", planner.StatePending, true},
		{"active", planner.StateRunning, true},
		{"unhealthy", planner.StatePending, true},
		{"terminating", planner.StateTerminated, true},
		{"terminated", "", false},
		{"some-new-status", planner.StatePending, true},
	} {
		if got, listed := stateOf(c.status); got != c.want || listed != c.listed {
			t.Errorf("status %s is %q (listed %v), want %q (%v)", c.status, got, listed, c.want, c.listed)
		}
	}
}

func TestDelete(t *testing.T) {
	b := newBackend(t, sim.Config{}, nil)
	ctx := context.Background()
	id, err := b.foreign(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.provider.Delete(ctx, providers.Instance{ID: id}); !errors.Is(err, providers.ErrInvalid) {
		t.Fatalf("deleting a foreign instance: %v, want an invalid error", err)
	}
	inst, err := b.provider.Create(ctx, request("f", 0))
	if err != nil {
		t.Fatal(err)
	}
	other := inst
	other.Token = request("f", 1).Token
	if err := b.provider.Delete(ctx, other); !errors.Is(err, providers.ErrInvalid) {
		t.Fatalf("deleting an instance by another token: %v, want an invalid error", err)
	}
	if err := b.provider.Delete(ctx, inst); err != nil {
		t.Fatal(err)
	}
	if err := b.provider.Delete(ctx, inst); err != nil {
		t.Fatalf("deleting it again: %v", err)
	}
	if got := b.world.Calls()["lambda "+lambdasim.OpTerminate]; got != 1 {
		t.Errorf("terminated %d times", got)
	}
}

func TestCreateRefuses(t *testing.T) {
	b := newBackend(t, sim.Config{}, nil)
	long := request(strings.Repeat("f", 20), 0)
	long.Workload = strings.Repeat("w", 20)
	spot := request("f", 0)
	spot.Offer.Market = catalog.Spot
	zone := request("f", 0)
	zone.Offer.Zone = testRegion + "a"
	region := request("f", 0)
	region.Offer.Region, region.Offer.Zone = "europe-central-1", "europe-central-1"
	for name, req := range map[string]providers.CreateRequest{
		"a spot offer":                      spot,
		"a zone other than the region's":    zone,
		"a region not configured":           region,
		"names too long for Lambda's 64":    long,
		"a placement group":                 {Token: request("f", 0).Token, Offer: testOffer, Fleet: "f", Workload: "w", PlacementGroup: "g"},
		"a bootstrap that is not UTF-8":     {Token: request("f", 0).Token, Offer: testOffer, Fleet: "f", Workload: "w", Bootstrap: &providers.Bootstrap{Data: []byte{0xff}}},
		"no token":                          {Offer: testOffer, Fleet: "f", Workload: "w"},
		"a token not of gpufleet's form":    {Token: "abc", Offer: testOffer, Fleet: "f", Workload: "w"},
		"a fleet whose name holds a period": {Token: request("f", 0).Token, Offer: testOffer, Fleet: "f.g", Workload: "w"},
	} {
		if _, err := b.provider.Create(context.Background(), req); !errors.Is(err, providers.ErrInvalid) {
			t.Errorf("%s: %v, want an invalid error", name, err)
		}
	}
	if n := len(b.lambdaInstances()); n != 0 {
		t.Errorf("refused creates launched %d instances", n)
	}
}

func TestSSHKey(t *testing.T) {
	for name, key := range map[string]string{"unset": "", "one the account lacks": "nobody"} {
		t.Run(name, func(t *testing.T) {
			cfg := testConfig()
			cfg.Launch.SSHKeyName = key
			b := newBackendWith(t, cfg, sim.Config{}, lambdasim.Options{}, nil)
			_, err := b.provider.Create(context.Background(), request("f", 0))
			if !errors.Is(err, providers.ErrInvalid) || !strings.Contains(err.Error(), sshKeySetting) {
				t.Fatalf("Create: %v, want an invalid error naming %s", err, sshKeySetting)
			}
			if err := b.provider.Preflight(context.Background(), testOffer); !errors.Is(err, providers.ErrInvalid) {
				t.Errorf("Preflight: %v, want an invalid error", err)
			}
			if n := b.world.Calls()["lambda "+lambdasim.OpLaunch]; n != 0 {
				t.Errorf("launched %d times without a key", n)
			}
		})
	}
	t.Run("added from its public half", func(t *testing.T) {
		cfg := testConfig()
		cfg.Launch.SSHKeyName = "team"
		cfg.Launch.SSHPublicKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIteam team@example"
		b := newBackendWith(t, cfg, sim.Config{}, lambdasim.Options{}, nil)
		// A preflight changes nothing in the account, and passes: the
		// create will add the key.
		if err := b.provider.Preflight(context.Background(), testOffer); err != nil {
			t.Fatalf("Preflight: %v", err)
		}
		if n := b.world.Calls()["lambda "+lambdasim.OpAddSSHKey]; n != 0 {
			t.Fatalf("a preflight added %d keys", n)
		}
		var wg sync.WaitGroup
		errs := make([]error, 4)
		for slot := range errs {
			wg.Go(func() { _, errs[slot] = b.provider.Create(context.Background(), request("f", slot)) })
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		if n := b.world.Calls()["lambda "+lambdasim.OpAddSSHKey]; n != 1 {
			t.Errorf("four creates at once added the key %d times, want once", n)
		}
		// A provider started anew finds the key, and adds none.
		again := newProvider(t, cfg, b.world.Catalog(), b.url, testKey)
		if _, err := again.Create(context.Background(), request("f", 9)); err != nil {
			t.Fatal(err)
		}
		if n := b.world.Calls()["lambda "+lambdasim.OpAddSSHKey]; n != 1 {
			t.Errorf("the key was added %d times in all, want once", n)
		}
	})
	t.Run("checked once", func(t *testing.T) {
		b := newBackend(t, sim.Config{}, nil)
		for slot := range 3 {
			if _, err := b.provider.Create(context.Background(), request("f", slot)); err != nil {
				t.Fatal(err)
			}
		}
		if n := b.world.Calls()["lambda "+lambdasim.OpSSHKeys]; n != 1 {
			t.Errorf("three creates read the SSH keys %d times, want once", n)
		}
		if err := b.provider.Preflight(context.Background(), testOffer); err != nil {
			t.Errorf("Preflight: %v", err)
		}
	})
}

// TestBootstrap: the bootstrap goes as user_data, with the image and key
// configured, and into no error.
func TestBootstrap(t *testing.T) {
	const secret = "#cloud-config\nwrite_files: [{path: /etc/token, content: s3cr3t-value}]\n"
	var mu sync.Mutex
	var launches []map[string]any
	capture := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "/instance-operations/launch") {
				body, _ := io.ReadAll(r.Body)
				var m map[string]any
				_ = json.Unmarshal(body, &m)
				mu.Lock()
				launches = append(launches, m)
				mu.Unlock()
				r.Body = io.NopCloser(bytes.NewReader(body))
			}
			next.ServeHTTP(w, r)
		})
	}
	b := newBackend(t, sim.Config{}, capture)
	req := request("f", 0)
	req.Bootstrap = &providers.Bootstrap{Format: schema.BootstrapCloudInit, Data: []byte(secret), Digest: "0123456789ab"}
	if _, err := b.provider.Create(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if len(launches) != 1 {
		t.Fatalf("%d launches", len(launches))
	}
	got := launches[0]
	name, _ := NodeName("f", "w", req.Token)
	if got["user_data"] != secret || got["name"] != name || got["quantity"] != 1.0 || got["region_name"] != testRegion || got["instance_type_name"] != a10 {
		t.Errorf("launched %v", got)
	}
	if keys, _ := got["ssh_key_names"].([]any); len(keys) != 1 || keys[0] != testSSHKey {
		t.Errorf("launched with SSH keys %v", got["ssh_key_names"])
	}
	if image, _ := got["image"].(map[string]any); image["family"] != "lambda-stack-22-04" {
		t.Errorf("launched image %v", got["image"])
	}
	if err := b.world.AddFaults(&sim.Fault{Cloud: Name, Op: lambdasim.OpLaunch, Kind: sim.FaultCapacity, Rate: 1}); err != nil {
		t.Fatal(err)
	}
	req = request("f", 1)
	req.Bootstrap = &providers.Bootstrap{Format: schema.BootstrapCloudInit, Data: []byte(secret)}
	if _, err := b.provider.Create(context.Background(), req); err == nil || strings.Contains(err.Error(), "s3cr3t") {
		t.Fatalf("a failed launch: %v, which must not show the bootstrap", err)
	}
}

func TestOffers(t *testing.T) {
	cat := testCatalog()
	// A spot row the catalog should not have is never offered.
	cat.Offers = append(cat.Offers, catalog.Offer{Cloud: Name, Region: testRegion, InstanceType: a10, Market: catalog.Spot, GPUModel: "A10", GPUs: 1, PriceMicros: 300000})
	b := newBackend(t, sim.Config{Catalog: cat}, nil)
	b.world.SetCapacity(Name, otherRegion, a10, catalog.OnDemand, 0)
	offers, err := b.provider.Offers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, o := range offers {
		if o.Market != catalog.OnDemand || o.Zone != o.Region {
			t.Errorf("offered %s", o.OfferKey)
		}
		got[o.Region+" "+o.InstanceType] = o.Available
	}
	want := map[string]int{testRegion + " " + a10: planner.Unlimited, testRegion + " " + h100: planner.Unlimited, otherRegion + " " + a10: 0}
	if len(got) != len(want) {
		t.Fatalf("offers %v, want %v", got, want)
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("%s has %d available, want %d", k, got[k], n)
		}
	}
	// A type Lambda no longer lists has no capacity anywhere.
	b.world.SetOffered(Name, testRegion, h100, false)
	offers, err = b.provider.Offers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range offers {
		if o.InstanceType == h100 && o.Available != 0 {
			t.Errorf("a type Lambda does not list has %d available", o.Available)
		}
	}
	if err := b.world.AddFaults(&sim.Fault{Cloud: Name, Op: lambdasim.OpInstanceTypes, Kind: sim.FaultServerError, Rate: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.provider.Offers(context.Background()); !errors.Is(err, providers.ErrUnavailable) {
		t.Errorf("Offers with the API failing: %v, want unavailable, for the reconciler to fall back on the catalog", err)
	}
}

func TestCapacity(t *testing.T) {
	cfg := testConfig()
	cfg.Regions = append(cfg.Regions, "mars-1")
	b := newBackendWith(t, cfg, sim.Config{}, lambdasim.Options{}, nil)
	b.world.SetOffered(Name, testRegion, h100, false)
	got, err := b.provider.Capacity(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []providers.ZoneOffering{{Zone: testRegion, Types: []string{a10}}, {Zone: otherRegion, Types: []string{a10}}}
	if len(got.Quotas) != 0 || len(got.Offerings) != 2 || !equal(got.Offerings[0], want[0]) || !equal(got.Offerings[1], want[1]) {
		t.Errorf("Capacity is %+v, want no quotas and offerings %v", got, want)
	}
	if len(got.Warnings) != 1 || !strings.Contains(got.Warnings[0], "mars-1") {
		t.Errorf("warnings %v, want one for the region the catalog lacks", got.Warnings)
	}

	if err := b.world.AddFaults(&sim.Fault{Cloud: Name, Kind: sim.FaultServerError, Rate: 1}); err != nil {
		t.Fatal(err)
	}
	got, err = b.provider.Capacity(context.Background())
	if err != nil || len(got.Offerings) != 0 || len(got.Warnings) != 1 {
		t.Errorf("Capacity with the API failing: %+v, %v; want a warning and no offerings", got, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := b.provider.Capacity(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Capacity with a cancelled context: %v", err)
	}
}

func equal(a, b providers.ZoneOffering) bool {
	return a.Zone == b.Zone && strings.Join(a.Types, ",") == strings.Join(b.Types, ",")
}
