// SPDX-License-Identifier: Apache-2.0

package reconcile

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/examples"
	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/reconcile/status"
	"github.com/gpufleet/gpufleet/reconcile/testenv"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// env is the shared end-to-end environment and the runs made on it.
type env struct {
	*testenv.Env
	t    testing.TB
	runs int
}

func newEnv(t testing.TB, cfg sim.Config) *env {
	t.Helper()
	return &env{Env: testenv.New(t, cfg), t: t}
}

// newEnvFrom is newEnv for any fleet repository.
func newEnvFrom(t testing.TB, cfg sim.Config, src fs.FS) *env {
	t.Helper()
	return &env{Env: testenv.NewFrom(t, cfg, src), t: t}
}

// options builds run options for a checkout, with providers on the
// emulator built from the checkout's gpufleet.cue, as the CLI does.
func (e *env) options(c *Checkout) Options {
	return e.optionsWith(c, catalog.Default())
}

// optionsWith is options with the providers and the run on another price
// catalog.
func (e *env) optionsWith(c *Checkout, cat *catalog.Catalog) Options {
	e.t.Helper()
	return Options{
		Connect: ConnectTo(cat, e.Endpoints()),
		Commit:  true, Catalog: cat,
		Lock: LockOptions{Holder: fmt.Sprintf("test-%d", e.runs), Poll: 20 * time.Millisecond},
	}
}

// checkout clones the origin into a fresh work directory.
func (e *env) checkout() *Checkout {
	e.t.Helper()
	e.runs++
	c, err := Open(context.Background(), SourceOptions{URL: e.URL, WorkDir: filepath.Join(e.Dir, fmt.Sprintf("work-%d", e.runs))})
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

// run reconciles once from a fresh clone.
func (e *env) run(edit func(*Options)) (*Result, error) {
	e.t.Helper()
	return e.runHooked(nil, edit)
}

// runHooked is run with test hooks: crashes where a process could die, a
// rival push before the status's.
func (e *env) runHooked(h *hooks, edit func(*Options)) (*Result, error) {
	e.t.Helper()
	c := e.checkout()
	opts := e.options(c)
	if edit != nil {
		edit(&opts)
	}
	return runWith(context.Background(), c, opts, h)
}

func (e *env) mustRun(edit func(*Options)) *Result {
	e.t.Helper()
	res, err := e.run(edit)
	if err != nil {
		e.t.Fatalf("run %d: %v", e.runs, err)
	}
	return res
}

func exampleFile(t *testing.T, name string) string {
	t.Helper()
	data, err := fs.ReadFile(examples.FleetRepo, "fleet-repo/"+name)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

var want = map[string]int{"batch/eval": 8, "inference/chat": 6, "inference/embed": 2, "training/pretrain": 4}

func checkConverged(t *testing.T, e *env) {
	t.Helper()
	got := e.Live()
	for k, n := range want {
		if got[k] != n {
			t.Errorf("%s: %d live instances, want %d (all: %v)", k, got[k], n, got)
		}
	}
}

func TestConvergeFromNothingThenNothingToDo(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Config{Seed: 1})
	first := e.mustRun(nil)
	checkConverged(t, e)
	if first.Commit.IsZero() {
		t.Fatal("the first run committed no status")
	}
	head := e.Head()
	if head.Hash != first.Commit || !strings.HasPrefix(head.Message, "gpufleet: 22 created, 0 deleted, 0 failed nodes in batch, inference, training; now $123.08/h") {
		t.Errorf("head %s: %q", head.Hash, head.Message)
	}
	st := e.StatusAtHead("training")
	if st.SchemaVersion != status.StatusVersion || len(st.Workloads) != 2 || st.Workloads[1].Name != "pretrain" || st.Workloads[1].Running != 4 || len(st.Workloads[1].Instances) != 4 {
		t.Errorf("training status: %+v", st)
	}
	// The fine-tuning job runs on Lambda Cloud, named as gpufleet's there.
	if w := st.Workloads[0]; w.Name != "finetune" || w.Running != 2 || len(w.Instances) != 2 || w.Placed[0].Offer.Cloud != "lambda" {
		t.Errorf("finetune status: %+v", w)
	}
	if c := st.Conditions[0]; c.Type != status.Ready || !c.Status {
		t.Errorf("training not ready: %+v", st.Conditions)
	}
	if _, err := head.File("status/STATUS.md"); err != nil {
		t.Error("no STATUS.md at head")
	}

	mutations := e.Mutations()
	second := e.mustRun(nil)
	if got := e.Mutations(); got != mutations {
		t.Errorf("the second run made %d cloud mutations", got-mutations)
	}
	if !second.Commit.IsZero() || e.Head().Hash != head.Hash {
		t.Errorf("the second run committed %s", second.Commit)
	}
	if len(second.Applied) != 0 {
		t.Errorf("the second run applied %v", second.Applied)
	}
	// The second run planned from the placements the first committed.
	if first.Report.Plan.Stats.Warm != 0 || second.Report.Plan.Stats.Warm == 0 {
		t.Errorf("solves started from the last placements: first run %d, second %d, want none and some",
			first.Report.Plan.Stats.Warm, second.Report.Plan.Stats.Warm)
	}
}

func TestSpecChangeMakesTheMinimalActions(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Config{Seed: 2})
	e.mustRun(nil)
	spec := exampleFile(t, "fleets/inference.cue")
	specCommit := e.Head().Hash
	if st := e.StatusAtHead("inference"); st.SpecCommit != e.Head().ParentHashes[0].String() {
		t.Errorf("the status names spec commit %s, want the seed commit %s, parent of the status commit", st.SpecCommit, e.Head().ParentHashes[0])
	}
	changed := e.Push("fleets/inference.cue", strings.Replace(spec, "nodes: 6", "nodes: 7", 1), "One more chat node")
	if changed == specCommit {
		t.Fatal("the push made no commit")
	}
	before := e.Mutations()
	res := e.mustRun(nil)
	if len(res.Applied) != 1 || res.Applied[0].Kind != planner.Create || res.Applied[0].Workload != "chat" {
		t.Fatalf("applied %+v, want one chat create", res.Applied)
	}
	if got := e.Mutations() - before; got != 1 {
		t.Errorf("%d cloud mutations, want 1", got)
	}
	if got := e.Live()["inference/chat"]; got != 7 {
		t.Errorf("%d chat nodes, want 7", got)
	}
	if st := e.StatusAtHead("inference"); st.Workloads[0].Desired != 7 || st.Workloads[0].Running != 7 {
		t.Errorf("inference status after the change: %+v", st.Workloads[0])
	}
	// The status names the commit that changed the specs, and a run
	// after the status commit, which changes no spec, keeps naming it.
	if st := e.StatusAtHead("inference"); st.SpecCommit != changed.String() {
		t.Errorf("the status names spec commit %s, want %s", st.SpecCommit, changed)
	}
	md, err := e.Head().File("status/STATUS.md")
	if err != nil {
		t.Fatal(err)
	}
	if text, _ := md.Contents(); !strings.Contains(text, "for the specs of commit `"+changed.String()[:12]+"`") {
		t.Errorf("STATUS.md does not name commit %s:\n%s", changed.String()[:12], text)
	}
	if again := e.mustRun(nil); !again.Commit.IsZero() {
		t.Errorf("a run after the status commit committed %s", again.Commit)
	}
}

// capacityReasons are the errors each cloud's emulator answers a launch
// into an empty pool with.
var capacityReasons = map[string]string{catalog.AWS: "InsufficientInstanceCapacity", catalog.GCP: "ZONE_RESOURCE_POOL_EXHAUSTED"}

func TestStockOutFailsOverToTheNextCheapest(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Config{Seed: 3})
	// The offer the plan would launch the training gang on first runs dry
	// in every zone of its region.
	dry := e.mustRun(func(o *Options) { o.DryRun = true })
	pretrain := dry.Report.Plan.Workload("training", "pretrain")
	if pretrain == nil || len(pretrain.Placements) == 0 {
		t.Fatalf("the dry run places no training node: %+v", pretrain)
	}
	first := slices.MinFunc(pretrain.Placements, func(a, b planner.Placement) int { return cmp.Compare(a.PriceMicros, b.PriceMicros) }).Offer
	reason, ok := capacityReasons[first.Cloud]
	if !ok {
		t.Fatalf("the plan puts the training gang on %s, a cloud this test knows no capacity error of", first)
	}
	region, _ := e.World.Region(first.Cloud, first.Region)
	for _, zone := range region.Zones {
		e.World.SetCapacity(first.Cloud, zone, first.InstanceType, first.Market, 0)
	}
	dried := func(offer string) bool {
		k, err := planner.ParseOfferKey(offer)
		return err == nil && k.Cloud == first.Cloud && k.Region == first.Region && k.InstanceType == first.InstanceType && k.Market == first.Market
	}
	res := e.mustRun(nil)
	checkConverged(t, e)
	if res.Rounds < 2 {
		t.Errorf("converged in %d rounds; a failover needs a second", res.Rounds)
	}
	st := e.StatusAtHead("training")
	t.Logf("%s ran dry; the gang runs on %s after %d rounds", first, st.Workloads[0].Instances[0].Offer, res.Rounds)
	for _, inst := range st.Workloads[0].Instances {
		if dried(inst.Offer) {
			t.Errorf("a training node runs on the dry offer: %s", inst.Offer)
		}
	}
	if len(st.Blocklist) == 0 || !dried(st.Blocklist[0].Offer) || !strings.Contains(st.Blocklist[0].Reason, reason) {
		t.Errorf("the status does not say %s/%s/%s/%s ran dry: %+v", first.Cloud, first.Region, first.InstanceType, first.Market, st.Blocklist)
	}
	failed := 0
	for _, a := range st.LastActions {
		if a.Error != "" {
			failed++
		}
	}
	if failed == 0 {
		t.Errorf("the status shows no failed create: %+v", st.LastActions)
	}
	// The blocklist outlives the run: the next run does not try again.
	before := e.Creates()
	e.mustRun(nil)
	if after := e.Creates(); after != before {
		t.Errorf("the next run tried the blocklisted offer again (%d creates)", after-before)
	}
}

func TestPreemptedSpotNodeIsReplaced(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Config{Seed: 4})
	// Batch on AWS, whose terminated instances stay listed for an hour.
	batch := exampleFile(t, "fleets/batch.cue")
	batch = strings.Replace(batch, "capacity: \"spot\"", "capacity: \"spot\"\n\t\tplacement: clouds: [\"aws\"]", 1)
	batch = strings.Replace(batch, `allow: ["eu-*", "europe-*", "*europe", "swedencentral"]`, `allow: ["eu-*"]`, 1)
	e.Push("fleets/batch.cue", batch, "Batch on AWS")
	e.mustRun(nil)
	var victim *sim.Instance
	for _, inst := range e.World.Instances() {
		if inst.Tags["gpufleet-fleet"] == "batch" {
			victim = inst
			break
		}
	}
	if err := e.World.Preempt(victim.ID); err != nil {
		t.Fatal(err)
	}
	res := e.mustRun(nil)
	if got := e.Live()["batch/eval"]; got != 8 {
		t.Errorf("%d batch nodes after the preemption, want 8", got)
	}
	var created, cleaned bool
	for _, a := range res.Applied {
		if a.Kind == planner.Create && a.Workload == "eval" {
			created = true
			if strings.Contains(a.Offer, "/"+victim.Zone+"/") {
				t.Errorf("the replacement went back to the preempted offer %s", a.Offer)
			}
		}
		if a.Kind == planner.Delete && a.Instance == cmpID(victim) {
			cleaned = true
		}
	}
	if !created || !cleaned {
		t.Errorf("applied %+v: want a replacement and the preempted node cleaned up", res.Applied)
	}
	if st := e.StatusAtHead("batch"); !strings.Contains(fmt.Sprint(st.Blocklist), "preempted") {
		t.Errorf("the status does not blocklist the preempted offer: %+v", st.Blocklist)
	}
	// The cloud still lists the preempted node for a while; it was dealt
	// with, so the next run has nothing to do (a regression: it used to
	// clean it up again on every run, and never converged).
	if _, ok := e.World.Get(victim.ID); !ok {
		t.Fatal("the emulator no longer shows the preempted node; the check below would prove nothing")
	}
	again := e.mustRun(nil)
	if len(again.Applied) != 0 || len(again.Report.Changes.Actions) != 0 || !again.Commit.IsZero() {
		t.Errorf("the run after the replacement applied %v, left %v, committed %s", again.Applied, again.Report.Changes.Actions, again.Commit)
	}
}

func TestAStatusPushRacingAnotherCommitStillLands(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Config{Seed: 5})
	pushed := false
	res, err := e.runHooked(&hooks{beforePush: func() {
		if !pushed {
			pushed = true
			e.Push("README.md", "Fleets of the ML platform team.\n", "Describe the repository")
		}
	}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	head := e.Head()
	if head.Hash != res.Commit {
		t.Fatalf("head is %s, want the status commit %s", head.Hash, res.Commit)
	}
	parent, err := head.Parent(0)
	if err != nil || parent.Message != "Describe the repository" {
		t.Fatalf("the status commit does not sit on the rival commit: parent %v, %v", parent, err)
	}
	if _, err := head.File("README.md"); err != nil {
		t.Error("the rival commit's file is lost")
	}
	if _, err := head.File("status/training.json"); err != nil {
		t.Error("the status is lost")
	}
}

func TestTwoReconcilersAtOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Config{Seed: 6})
	c1, c2 := e.checkout(), e.checkout()
	o1, o2 := e.options(c1), e.options(c2)
	o1.Lock.Holder, o2.Lock.Holder = "first", "second"
	o1.Lock.Wait, o2.Lock.Wait = time.Minute, time.Minute
	var wg sync.WaitGroup
	errs := make([]error, 2)
	results := make([]*Result, 2)
	for i, pair := range []struct {
		c *Checkout
		o Options
	}{{c1, o1}, {c2, o2}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = Run(context.Background(), pair.c, pair.o)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("reconciler %d: %v", i, err)
		}
	}
	checkConverged(t, e)
	if n := len(e.World.Instances()); n != 22 {
		t.Errorf("%d instances in the clouds, want 22: a duplicate", n)
	}
	commits := 0
	for _, r := range results {
		if !r.Commit.IsZero() {
			commits++
		}
	}
	if commits != 1 {
		t.Errorf("%d status commits, want 1", commits)
	}
}

func TestARunKilledAfterCreatingIsAdopted(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Config{Seed: 7})
	_, err := e.runHooked(&hooks{crashAfter: StepApply}, func(o *Options) { o.Lock.TTL = time.Second })
	if !errors.Is(err, errCrashed) {
		t.Fatalf("the crashing run returned %v", err)
	}
	checkConverged(t, e)
	if msg := e.Head().Message; msg != "Example fleets" {
		t.Fatalf("the crashed run committed: %q", msg)
	}
	creates := e.Creates()
	// The crashed run still holds the lock; it expires, and the next run
	// takes it and adopts what was launched.
	res := e.mustRun(func(o *Options) { o.Lock.Wait = 10 * time.Second })
	if after := e.Creates(); after != creates {
		t.Errorf("the next run launched %d more instances", after-creates)
	}
	if len(e.World.Instances()) != 22 {
		t.Errorf("%d instances, want 22", len(e.World.Instances()))
	}
	if res.Commit.IsZero() {
		t.Error("the adopting run committed no status")
	}
	checkConverged(t, e)
}

func TestInvalidSpecsAreRecordedAndChangeNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Config{Seed: 8})
	e.mustRun(nil)
	spec := exampleFile(t, "fleets/training.cue")
	e.Push("fleets/training.cue", strings.Replace(spec, "nodes: 4", "nodes: -4", 1), "Oops")
	before := e.Mutations()
	res, err := e.run(nil)
	if err == nil || !strings.Contains(err.Error(), "fleets/training.cue:12:10") {
		t.Fatalf("run error %v, want the spec error with its position", err)
	}
	if e.Mutations() != before {
		t.Error("a run with invalid specs changed a cloud")
	}
	if res.Commit.IsZero() {
		t.Fatal("the failure was not recorded in the repository")
	}
	st := e.StatusAtHead("training")
	stalled := st.Conditions[3]
	if stalled.Type != status.Stalled || !stalled.Status || stalled.Reason != "SpecInvalid" || !strings.Contains(strings.Join(st.Errors, "\n"), "fleets/training.cue:12:10") {
		t.Errorf("status after a spec error: %+v %v", st.Conditions, st.Errors)
	}
	if len(st.Workloads) != 2 || st.Workloads[0].Running != 2 || st.Workloads[1].Running != 4 {
		t.Errorf("the status forgot what runs: %+v", st.Workloads)
	}
}

// TestOverGitDaemon runs against a real `git daemon` on loopback, the git://
// protocol a self-hosted server speaks.
func TestOverGitDaemon(t *testing.T) {
	t.Parallel()
	gitBin, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed: skipping the git daemon test")
	}
	e := newEnv(t, sim.Config{Seed: 9})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	testenv.GitDaemon(t, gitBin, e.Dir, port)
	e.URL = fmt.Sprintf("git://127.0.0.1:%d/origin.git", port)
	res := e.mustRun(nil)
	checkConverged(t, e)
	if e.Head().Hash != res.Commit {
		t.Errorf("the status commit did not reach the daemon's repository")
	}
	if second := e.mustRun(nil); !second.Commit.IsZero() {
		t.Error("the second run over git:// committed again")
	}
}
