// SPDX-License-Identifier: Apache-2.0

package sim

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/schema/catalog"
)

var epoch = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

func newWorld(t *testing.T, cfg Config) (*World, *ManualClock) {
	t.Helper()
	clock := NewManualClock(epoch)
	cfg.Clock = clock
	w, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return w, clock
}

func spec(token string) LaunchSpec {
	return LaunchSpec{
		Cloud: "aws", Zone: "us-east-1a", InstanceType: "p5.48xlarge", Market: catalog.OnDemand,
		Tags: map[string]string{"gpufleet-fleet": "f"}, Token: token, Params: "p5",
	}
}

func kindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return ""
}

func TestLaunchTokens(t *testing.T) {
	w, clock := newWorld(t, Config{})
	first, err := w.Launch(spec("t1"))
	if err != nil || !first.Created {
		t.Fatalf("first launch: %+v, %v", first, err)
	}
	again, err := w.Launch(spec("t1"))
	if err != nil || again.Created || again.Instance.ID != first.Instance.ID {
		t.Fatalf("repeat launch: %+v, %v; want the first instance back", again, err)
	}
	changed := spec("t1")
	changed.Params = "p5 with another image"
	if _, err := w.Launch(changed); kindOf(err) != KindIdempotencyMismatch {
		t.Fatalf("changed parameters: %v, want an idempotency mismatch", err)
	}
	// The token outlives its instance: terminated, gone from lists after an
	// hour, and still answered for a day.
	if _, err := w.Terminate(first.Instance.ID); err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Hour)
	if _, ok := w.Get(first.Instance.ID); ok {
		t.Error("a terminated EC2 instance is still listed after two hours")
	}
	if res, err := w.Launch(spec("t1")); err != nil || res.Created || res.Instance.ID != first.Instance.ID || res.Instance.State != StateTerminated {
		t.Errorf("the token, reused after its instance left the lists, gave %+v, %v; want the terminated instance", res.Instance, err)
	}
	clock.Advance(23 * time.Hour)
	if res, err := w.Launch(spec("t1")); err != nil || !res.Created {
		t.Errorf("a day later the token launches afresh: %+v, %v", res, err)
	}
}

func TestLaunchRefusals(t *testing.T) {
	w, _ := newWorld(t, Config{Capacity: 1})
	if _, err := w.Launch(spec("a")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		edit func(*LaunchSpec)
		want Kind
	}{
		{"capacity", func(s *LaunchSpec) {}, KindCapacity},
		{"quota", func(s *LaunchSpec) { s.Zone = "us-east-1b" }, KindQuota},
		{"unknown zone", func(s *LaunchSpec) { s.Zone = "us-east-1z" }, KindUnknownZone},
		{"unknown type", func(s *LaunchSpec) { s.InstanceType = "p9.96xlarge" }, KindUnknownType},
		{"not offered there", func(s *LaunchSpec) { s.Zone = "eu-west-1a" }, KindUnsupported},
	}
	w.SetQuota("aws", "us-east-1", "L-417A185B", 192) // one p5.48xlarge
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := spec("b-" + tt.name)
			tt.edit(&s)
			if _, err := w.Launch(s); kindOf(err) != tt.want {
				t.Errorf("got %v, want %s", err, tt.want)
			}
		})
	}
}

func TestOperationsSettle(t *testing.T) {
	w, clock := newWorld(t, Config{OperationTime: time.Minute})
	s := LaunchSpec{Cloud: "gcp", Zone: "us-central1-a", InstanceType: "a3-highgpu-8g", Market: catalog.Spot,
		Name: "vm", Scope: "proj", Operation: OperationInsert, AsyncCapacity: true, AsyncQuota: true}
	w.SetCapacity("gcp", "us-central1-a", "a3-highgpu-8g", catalog.Spot, 0)
	res, err := w.Launch(s)
	if err != nil {
		t.Fatalf("a GCE stock-out is reported on the operation, not the request: %v", err)
	}
	if op, _ := w.Operation(res.Operation.ID); op.Done {
		t.Fatal("operation done before its time")
	}
	clock.Advance(time.Minute)
	op, _ := w.Operation(res.Operation.ID)
	if !op.Done || op.Err == nil || op.Err.Kind != KindCapacity {
		t.Fatalf("operation = %+v, want done with a capacity error", op)
	}
	if _, ok := w.Get(res.Instance.ID); ok {
		t.Error("an instance whose insert failed is still there")
	}
}

func TestPreemptionIsVisibleForAWhile(t *testing.T) {
	w, clock := newWorld(t, Config{PreemptedVisibleFor: 5 * time.Minute})
	res, err := w.Launch(LaunchSpec{Cloud: "gcp", Zone: "us-central1-a", InstanceType: "a3-highgpu-8g", Market: catalog.Spot, Name: "vm", Scope: "p"})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Preempt(res.Instance.ID); err != nil {
		t.Fatal(err)
	}
	got, ok := w.Get(res.Instance.ID)
	if !ok || !got.Preempted || got.State != StateTerminated {
		t.Fatalf("after preemption: %+v, %v", got, ok)
	}
	clock.Advance(6 * time.Minute)
	if _, ok := w.Get(res.Instance.ID); ok {
		t.Error("a preempted GCE instance outlived its window")
	}
	od, _ := w.Launch(spec("od"))
	if err := w.Preempt(od.Instance.ID); kindOf(err) != KindInvalid {
		t.Errorf("preempting on-demand: %v", err)
	}
}

func TestFaults(t *testing.T) {
	w, _ := newWorld(t, Config{Seed: 42})
	if err := w.AddFaults(
		&Fault{Cloud: "aws", Op: "RunInstances", Zone: "us-east-1a", Kind: FaultCapacity, Code: "InsufficientInstanceCapacity", Times: 3},
		&Fault{Cloud: "gcp", Kind: FaultThrottle, Rate: 0.5},
	); err != nil {
		t.Fatal(err)
	}
	call := Call{Cloud: "aws", Op: "RunInstances", Zone: "us-east-1a"}
	for i := range 3 {
		out := w.Intercept(call)
		if out.Err == nil || out.Err.Code != "InsufficientInstanceCapacity" {
			t.Fatalf("call %d: %+v, want the scripted stock-out", i, out)
		}
	}
	if out := w.Intercept(call); out.Err != nil {
		t.Errorf("a fourth call failed too: %+v", out.Err)
	}
	if out := w.Intercept(Call{Cloud: "aws", Op: "RunInstances", Zone: "us-east-1b"}); out.Err != nil {
		t.Errorf("another zone failed: %+v", out.Err)
	}
	throttled := 0
	for range 1000 {
		if w.Intercept(Call{Cloud: "gcp", Op: "insert"}).Err != nil {
			throttled++
		}
	}
	if throttled < 430 || throttled > 570 {
		t.Errorf("%d of 1000 throttled at rate 0.5", throttled)
	}
	if got := w.Calls()["gcp insert"]; got != 1000 {
		t.Errorf("counted %d gcp inserts, want 1000", got)
	}
	for _, bad := range []string{
		`{"faults":[{"kind":"meteor","times":1}]}`,
		`{"faults":[{"kind":"throttle"}]}`,
		`{"faults":[{"kind":"latency","times":1}]}`,
		`{"faults":[{"kind":"throttle","rate":2}]}`,
		`{"faults":[{"kind":"throttle","times":1,"colour":"red"}]}`,
		`{"faults":`,
	} {
		if _, err := ReadFaults(strings.NewReader(bad)); err == nil {
			t.Errorf("ReadFaults accepted %s", bad)
		}
	}
	faults, err := ReadFaults(strings.NewReader(`{"faults":[{"cloud":"aws","op":"RunInstances","zone":"us-east-1a","kind":"capacity","times":3},{"kind":"latency","latency":"250ms","rate":0.1}]}`))
	if err != nil || len(faults) != 2 || time.Duration(faults[1].Latency) != 250*time.Millisecond {
		t.Errorf("ReadFaults = %+v, %v", faults, err)
	}
}

func TestStateSurvivesARestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "world.json")
	w, _ := newWorld(t, Config{StatePath: path, Seed: 7})
	res, err := w.Launch(spec("persist"))
	if err != nil {
		t.Fatal(err)
	}
	w.SetCapacity("aws", "us-east-1b", "p5.48xlarge", catalog.OnDemand, 0)
	if err := w.AddFaults(&Fault{Cloud: "aws", Kind: FaultThrottle, Times: 2}); err != nil {
		t.Fatal(err)
	}
	w.Intercept(Call{Cloud: "aws", Op: "DescribeInstances"})
	if err := w.Save(); err != nil {
		t.Fatal(err)
	}
	// A fresh world on the same file sees the same clouds, and continues
	// the same random sequence.
	again, _ := newWorld(t, Config{StatePath: path, Seed: 7})
	got, ok := again.Get(res.Instance.ID)
	if !ok || got.Tags["gpufleet-fleet"] != "f" {
		t.Fatalf("instance after restart: %+v, %v", got, ok)
	}
	if r, err := again.Launch(spec("persist")); err != nil || r.Created {
		t.Errorf("the token is forgotten after a restart: %+v, %v", r, err)
	}
	if _, err := again.Launch(LaunchSpec{Cloud: "aws", Zone: "us-east-1b", InstanceType: "p5.48xlarge", Market: catalog.OnDemand}); kindOf(err) != KindCapacity {
		t.Errorf("capacity override lost: %v", err)
	}
	if f := again.Faults(); len(f) != 1 || f[0].Fired != 1 {
		t.Errorf("faults after restart = %+v", f)
	}
	if a, b := w.Rand(1<<30), again.Rand(1<<30); a != b {
		t.Errorf("random sequence differs after restart: %d vs %d", a, b)
	}
	// A corrupt file is refused, not half-read.
	if err := os.WriteFile(path, []byte(`{"version":1,"instances":[`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{StatePath: path}); err == nil {
		t.Error("a truncated state file was accepted")
	}
}

func TestSaveLeavesNoTemporaryFiles(t *testing.T) {
	dir := t.TempDir()
	w, _ := newWorld(t, Config{StatePath: filepath.Join(dir, "state.json")})
	for i := range 20 {
		if _, err := w.Launch(spec(strings.Repeat("x", i+1))); err != nil {
			t.Fatal(err)
		}
		if err := w.Save(); err != nil {
			t.Fatal(err)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != "state.json" {
		t.Errorf("directory holds %v, want only state.json", entries)
	}
}

// Quotas count each live instance's vCPUs or GPUs, as the catalog says: a
// global quota across regions, usage rising with launches and falling
// when instances end, and a create that would pass a limit refused with
// the quota's name, limit and use.
func TestQuotasCountWhatRuns(t *testing.T) {
	w, _ := newWorld(t, Config{})
	w.SetQuota("gcp", "", "GPUS_ALL_REGIONS", 12)
	launch := func(zone, typ, token string) error {
		_, err := w.Launch(LaunchSpec{Cloud: "gcp", Zone: zone, InstanceType: typ, Market: catalog.OnDemand, Name: token, Scope: "p", Token: token})
		return err
	}
	if err := launch("us-central1-a", "a3-highgpu-8g", "a"); err != nil {
		t.Fatal(err)
	}
	usage := func(region, name string) QuotaUsage {
		t.Helper()
		for _, q := range w.Quotas("gcp", region) {
			if q.Name == name {
				return q
			}
		}
		t.Fatalf("no quota %s in %s", name, region)
		return QuotaUsage{}
	}
	if q := usage("us-central1", "NVIDIA_H100_GPUS"); q.Used != 8 || q.Region != "us-central1" {
		t.Errorf("NVIDIA_H100_GPUS in us-central1: %+v, want 8 used", q)
	}
	if q := usage("europe-west4", "GPUS_ALL_REGIONS"); q.Used != 8 || q.Limit != 12 || q.Region != "" {
		t.Errorf("GPUS_ALL_REGIONS seen from europe-west4: %+v, want 8 of 12, global", q)
	}
	// Another region, the same global quota: 8 more GPUs do not fit.
	other := zoneSelling(t, w, "gcp", "us-central1", catalog.OnDemand, "a3-highgpu-8g", "g2-standard-48")
	err := launch(other, "a3-highgpu-8g", "b")
	var e *Error
	if !errors.As(err, &e) || e.Kind != KindQuota || e.Quota != "GPUS_ALL_REGIONS" || e.Region != "" || e.Limit != 12 || e.Used != 8 || e.Requested != 8 {
		t.Fatalf("second H100 node: %v (%+v), want GPUS_ALL_REGIONS 8 of 12 used, 8 asked", err, e)
	}
	// Four L4 GPUs still fit.
	if err := launch(other, "g2-standard-48", "c"); err != nil {
		t.Fatalf("4 L4 GPUs with 4 left: %v", err)
	}
	inst, _ := w.ByName("gcp", "p", "a")
	if _, err := w.Terminate(inst.ID); err != nil {
		t.Fatal(err)
	}
	w.Remove(inst.ID)
	if q := usage("us-central1", "GPUS_ALL_REGIONS"); q.Used != 4 {
		t.Errorf("after the H100 node ends: %+v, want 4 used", q)
	}
}

// zoneSelling is the first zone, outside region notIn, whose catalog
// sells every one of types on market.
func zoneSelling(t *testing.T, w *World, cloud, notIn string, market catalog.Market, types ...string) string {
	t.Helper()
	for _, r := range w.cat.RegionsOf(cloud) {
		if r.Name == notIn {
			continue
		}
		for _, z := range r.Zones {
			if !slices.ContainsFunc(types, func(typ string) bool { _, ok := w.Type(cloud, z, typ, market); return !ok }) {
				return z
			}
		}
	}
	t.Fatalf("no %s zone outside %s sells %v %s", cloud, notIn, types, market)
	return ""
}

func TestAZoneThatDoesNotOfferATypeRefusesIt(t *testing.T) {
	w, _ := newWorld(t, Config{})
	w.SetOffered("aws", "us-east-1b", "p5.48xlarge", false)
	s := spec("x")
	s.Zone = "us-east-1b"
	if _, err := w.Launch(s); kindOf(err) != KindUnsupported {
		t.Fatalf("launch in a zone without the type: %v, want %s", err, KindUnsupported)
	}
	for _, typ := range w.Offered("aws", "us-east-1b", catalog.OnDemand) {
		if typ.Name == "p5.48xlarge" {
			t.Error("Offered lists a type the zone does not offer")
		}
	}
	if !slices.ContainsFunc(w.Offered("aws", "us-east-1a", catalog.OnDemand), func(t InstanceType) bool { return t.Name == "p5.48xlarge" }) {
		t.Error("us-east-1a should still offer p5.48xlarge")
	}
	w.SetOffered("aws", "us-east-1b", "p5.48xlarge", true)
	if _, err := w.Launch(s); err != nil {
		t.Fatalf("offered again: %v", err)
	}
}
