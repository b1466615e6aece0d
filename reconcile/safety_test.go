// SPDX-License-Identifier: Apache-2.0

package reconcile

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// userDir makes a directory with files someone keeps there.
func userDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "X")
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("keep\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func checkUserDir(t *testing.T, dir string) {
	t.Helper()
	if data, err := os.ReadFile(filepath.Join(dir, "a.txt")); err != nil || string(data) != "keep\n" {
		t.Errorf("the user's file is gone or changed: %q, %v", data, err)
	}
	if info, err := os.Stat(filepath.Join(dir, "sub")); err != nil || !info.IsDir() {
		t.Errorf("the user's directory is gone: %v", err)
	}
}

// A clone that fails removes nothing it did not make, and a directory that
// is not gpufleet's own clone is refused, never cloned into or reset.
func TestTheWorkDirIsNeverSomeoneElses(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Config{Seed: 21})
	ctx := context.Background()

	t.Run("a failed clone leaves the directory as it was", func(t *testing.T) {
		dir := userDir(t)
		_, err := Open(ctx, SourceOptions{URL: "file:///nonexistent.git", WorkDir: dir})
		if err == nil {
			t.Fatal("opening a foreign directory succeeded")
		}
		checkUserDir(t, dir)
	})
	t.Run("a failed clone into a new directory leaves nothing behind", func(t *testing.T) {
		parent := t.TempDir()
		if _, err := Open(ctx, SourceOptions{URL: "file:///nonexistent.git", WorkDir: filepath.Join(parent, "new")}); err == nil {
			t.Fatal("cloning a missing repository succeeded")
		}
		if entries, _ := os.ReadDir(parent); len(entries) != 0 {
			t.Errorf("the failed clone left %v", entries)
		}
	})
	t.Run("a foreign non-empty directory is refused", func(t *testing.T) {
		dir := userDir(t)
		_, err := Open(ctx, SourceOptions{URL: e.URL, WorkDir: dir})
		if !errors.Is(err, ErrForeignWorkDir) || !strings.Contains(err.Error(), dir) {
			t.Fatalf("error %v, want one naming the directory as not gpufleet's", err)
		}
		checkUserDir(t, dir)
		if _, err := os.Stat(filepath.Join(dir, ".git")); err == nil {
			t.Error("a clone was made inside the user's directory")
		}
	})
	t.Run("someone's own clone of the same repository is refused", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "mine")
		if _, err := git.PlainClone(dir, false, &git.CloneOptions{URL: e.URL}); err != nil {
			t.Fatal(err)
		}
		edit := filepath.Join(dir, "fleets", "training.cue")
		if err := os.WriteFile(edit, []byte("// work in progress\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(ctx, SourceOptions{URL: e.URL, WorkDir: dir}); !errors.Is(err, ErrForeignWorkDir) {
			t.Fatalf("error %v, want the clone refused as not gpufleet's", err)
		}
		if data, _ := os.ReadFile(edit); string(data) != "// work in progress\n" {
			t.Error("the user's uncommitted edit was reset")
		}
	})
	t.Run("an empty directory takes a clone, which is reused", func(t *testing.T) {
		dir := t.TempDir()
		first, err := Open(ctx, SourceOptions{URL: e.URL, WorkDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(dir, ".git", cloneMarker)); err != nil {
			t.Errorf("the clone is not marked: %v", err)
		}
		again, err := Open(ctx, SourceOptions{URL: e.URL, WorkDir: dir})
		if err != nil {
			t.Fatalf("reusing gpufleet's own clone: %v", err)
		}
		if h1, _ := first.Head(); func() bool { h2, _ := again.Head(); return h1 != h2 }() {
			t.Error("the reused clone is at another commit")
		}
		other := newEnv(t, sim.Config{Seed: 22})
		if _, err := Open(ctx, SourceOptions{URL: other.URL, WorkDir: dir}); !errors.Is(err, ErrForeignWorkDir) {
			t.Errorf("a clone of another repository was reused: %v", err)
		}
	})
	t.Run("its own clone, broken by a kill, is cloned afresh", func(t *testing.T) {
		// go-git rewrites these in place; a kill mid-write leaves them
		// empty.
		for _, broken := range []string{"HEAD", "index", "refs/remotes/origin/main", "config"} {
			dir := t.TempDir()
			if _, err := Open(ctx, SourceOptions{URL: e.URL, WorkDir: dir}); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, ".git", broken), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			c, err := Open(ctx, SourceOptions{URL: e.URL, WorkDir: dir})
			if err != nil {
				t.Errorf("with an empty .git/%s: %v", broken, err)
				continue
			}
			if _, err := c.Head(); err != nil {
				t.Errorf("with an empty .git/%s, the new clone has no head: %v", broken, err)
			}
			if _, err := os.Stat(filepath.Join(dir, "gpufleet.cue")); err != nil {
				t.Errorf("with an empty .git/%s, the new clone has no work tree: %v", broken, err)
			}
		}
	})
	t.Run("scratch left by an interrupted clone is cleared", func(t *testing.T) {
		parent := t.TempDir()
		stale := filepath.Join(parent, scratchPrefix+"w-123")
		if err := os.MkdirAll(filepath.Join(stale, ".git"), 0o755); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(ctx, SourceOptions{URL: e.URL, WorkDir: filepath.Join(parent, "w")}); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the stale scratch directory is still there: %v", err)
		}
	})
}

// brokenCatalog is the default catalog with every price put through f.
func brokenCatalog(f func(catalog.Offer) (int64, bool)) *catalog.Catalog {
	cat := catalog.Default()
	kept := cat.Offers[:0]
	for _, o := range cat.Offers {
		if price, keep := f(o); keep {
			o.PriceMicros = price
			kept = append(kept, o)
		}
	}
	cat.Offers = kept
	cat.Source = "broken test catalog"
	return cat
}

// A broken price catalog never tears a running fleet down: one with no
// valid price for an enabled cloud is refused; one that lost the offers
// nodes run on keeps those nodes, and says so.
func TestABrokenCatalogDeletesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Config{Seed: 23})
	e.mustRun(nil)
	running := e.Live()
	// The catalog lists some offers per region, for every zone of it.
	usedOffers := map[planner.OfferKey]bool{}
	for _, inst := range e.World.Instances() {
		k := offerOf(inst)
		k.Zone = ""
		usedOffers[k] = true
	}
	tests := []struct {
		name    string
		cat     *catalog.Catalog
		refused bool
	}{
		{"every price zero", brokenCatalog(func(catalog.Offer) (int64, bool) { return 0, true }), true},
		{"every price negative", brokenCatalog(func(o catalog.Offer) (int64, bool) { return -o.PriceMicros, true }), true},
		{"every price absurd", brokenCatalog(func(o catalog.Offer) (int64, bool) { return o.PriceMicros * 100_000, true }), true},
		{"no offers", brokenCatalog(func(catalog.Offer) (int64, bool) { return 0, false }), true},
		{"no Azure offers", brokenCatalog(func(o catalog.Offer) (int64, bool) { return o.PriceMicros, o.Cloud != catalog.Azure }), true},
		{"the offers in use vanished", brokenCatalog(func(o catalog.Offer) (int64, bool) {
			k := planner.OfferKey{Cloud: o.Cloud, Region: o.Region, InstanceType: o.InstanceType, Market: o.Market}
			return o.PriceMicros, !usedOffers[k]
		}), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := e.World.Calls()
			c := e.checkout()
			res, err := Run(context.Background(), c, e.optionsWith(c, tt.cat))
			calls := e.World.Calls()
			for _, op := range []string{"aws TerminateInstances", "azure delete", "gcp instances.delete"} {
				if calls[op] != before[op] {
					t.Errorf("%d %s calls", calls[op]-before[op], op)
				}
			}
			switch {
			case tt.refused && (err == nil || !strings.Contains(err.Error(), "no valid offer")):
				t.Errorf("run error %v, want the catalog refused", err)
			case !tt.refused && err != nil:
				t.Errorf("run failed: %v", err)
			case !tt.refused:
				if got := strings.Join(res.Report.Plan.Warnings, "\n"); !strings.Contains(got, "no valid price") {
					t.Errorf("no warning names the kept nodes: %s", got)
				}
			}
			for k, n := range running {
				if e.Live()[k] != n {
					t.Errorf("%s: %d live, %d before", k, e.Live()[k], n)
				}
			}
		})
	}
}

// A committed symlink in place of the status directory is refused: no
// status is written through it, inside the checkout or out.
func TestAStatusDirectoryThatIsASymlinkIsRefused(t *testing.T) {
	e := newEnv(t, sim.Config{Seed: 24})
	outside := t.TempDir()
	victim := filepath.Join(outside, "STATUS.md")
	if err := os.WriteFile(victim, []byte("someone else's file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(e.Dir, "symlinker")
	repo, err := git.PlainClone(dir, false, &git.CloneOptions{URL: e.URL})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "status")); err != nil {
		t.Fatal(err)
	}
	wt, _ := repo.Worktree()
	if _, err := wt.Add("status"); err != nil {
		t.Fatal(err)
	}
	sig := &object.Signature{Name: "someone", Email: "someone@example.com", When: time.Now()}
	if _, err := wt.Commit("Status elsewhere", &git.CommitOptions{Author: sig, Committer: sig}); err != nil {
		t.Fatal(err)
	}
	if err := repo.Push(&git.PushOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = e.run(nil)
	if err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Fatalf("run error %v, want the symlinked status directory refused", err)
	}
	if data, _ := os.ReadFile(victim); string(data) != "someone else's file\n" {
		t.Errorf("a file outside the checkout was overwritten: %q", data)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 1 {
		t.Errorf("files were written outside the checkout: %v", entries)
	}
	if e.Mutations() != 0 {
		t.Errorf("a refused run changed a cloud")
	}
}

// An Azure VM whose creation failed, and whose clean-up failed too, is
// still there and holds quota: later runs count it and delete it.
func TestFailedVMsAreCollected(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("waits out the Azure SDK's retries of failing deletes; providers/azure's state tests and apply_test.go cover failed VMs under -short")
	}
	e := newEnv(t, sim.Config{Seed: 25})
	if err := e.World.AddFaults(
		&sim.Fault{Cloud: catalog.Azure, Op: "put", Kind: sim.FaultFailLater, Times: 2},
		&sim.Fault{Cloud: catalog.Azure, Op: "delete", Kind: sim.FaultServerError, Times: 40},
	); err != nil {
		t.Fatal(err)
	}
	first, err := e.run(nil)
	if err != nil {
		t.Fatalf("first run: %v", err)
	}
	failed := func() int {
		n := 0
		for _, inst := range e.World.Instances() {
			if inst.State == sim.StateFailed {
				n++
			}
		}
		return n
	}
	if failed() != 2 {
		t.Fatalf("%d failed VMs after the faults, want 2 for the test to mean something", failed())
	}
	if OutcomeOf(first, nil) == Converged {
		t.Error("a run that left failed VMs behind says it converged")
	}
	counted := 0
	for _, fleet := range []string{"batch", "inference", "training"} {
		for _, w := range e.StatusAtHead(fleet).Workloads {
			counted += w.Failed
		}
	}
	if counted != 2 {
		t.Errorf("the status counts %d failed instances, want 2", counted)
	}
	e.World.ClearFaults()
	for run := 1; failed() > 0 && run <= 2; run++ {
		if _, err := e.run(nil); err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
	}
	if n := failed(); n != 0 {
		t.Errorf("%d failed VMs survive two more runs", n)
	}
	checkConverged(t, e)
	if res := e.mustRun(nil); OutcomeOf(res, nil) != Converged {
		t.Errorf("not converged at the end: %v", res.NotConverged)
	}
}

// A local checkout with uncommitted changes to its specs is refused: the
// run would apply one thing and record another commit.
func TestADirtyLocalCheckoutIsRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Config{Seed: 26})
	dir := filepath.Join(e.Dir, "local")
	if _, err := git.PlainClone(dir, false, &git.CloneOptions{URL: e.URL}); err != nil {
		t.Fatal(err)
	}
	spec := filepath.Join(dir, "fleets", "inference.cue")
	data, _ := os.ReadFile(spec)
	if err := os.WriteFile(spec, []byte(strings.Replace(string(data), "nodes: 6", "nodes: 5", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Open(context.Background(), SourceOptions{URL: dir})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Run(context.Background(), c, e.options(c))
	if err == nil || !strings.Contains(err.Error(), "uncommitted changes (fleets/inference.cue (modified))") {
		t.Fatalf("run error %v, want the uncommitted change named", err)
	}
	if e.Mutations() != 0 {
		t.Error("a refused run changed a cloud")
	}
	// Untracked files outside what gpufleet reads do not count.
	if err := os.WriteFile(spec, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), c, e.options(c)); err != nil {
		t.Errorf("a clean checkout with an unrelated untracked file: %v", err)
	}
}

// Two reconcilers that call themselves the same (two containers, both PID
// 1 on hosts of one name) do not both hold the lock; a lock left by a dead
// holder says when it expires and can be freed.
func TestTheLockTellsSameNamedHoldersApart(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Config{Seed: 27})
	ctx := context.Background()
	a, b := e.checkout(), e.checkout()
	opts := LockOptions{Holder: "gpufleet-0:1", TTL: time.Minute}
	lock, err := a.Lock(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.Lock(ctx, opts)
	var held *HeldError
	if !errors.As(err, &held) {
		t.Fatalf("a second holder of the same name took the lock: %v", err)
	}
	if _, err := b.Unlock(ctx, false, time.Now()); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Errorf("unlocking a live lock without --force: %v", err)
	}
	// Its holder dies; once the lock expires it is freed without force.
	info, err := b.Unlock(ctx, false, time.Now().Add(2*time.Minute))
	if err != nil || info.Holder != "gpufleet-0:1" {
		t.Fatalf("unlocking an expired lock: %v, %+v", err, info)
	}
	if _, err := b.Lock(ctx, opts); err != nil {
		t.Errorf("taking the freed lock: %v", err)
	}
	if _, err := b.Unlock(ctx, true, time.Now()); err != nil {
		t.Errorf("forcing a live lock: %v", err)
	}
	if _, err := b.Unlock(ctx, true, time.Now()); !errors.Is(err, ErrLockFree) {
		t.Errorf("unlocking a free lock: %v", err)
	}
	// The first holder's release leaves the lock someone else took alone.
	if err := lock.Release(ctx); err != nil {
		t.Errorf("releasing a lock taken over: %v", err)
	}
}

func TestTheGitTokenIsNotSentInClear(t *testing.T) {
	t.Setenv("GPUFLEET_GIT_TOKEN", "canary-token-1234")
	_, err := authFor(SourceOptions{URL: "http://git.example.com/acme/fleets.git"})
	if err == nil || !strings.Contains(err.Error(), "clear text") || strings.Contains(err.Error(), "canary") {
		t.Errorf("error %v, want the http:// remote refused without the token in the message", err)
	}
	t.Setenv("GPUFLEET_GIT_ALLOW_HTTP", "true")
	if auth, err := authFor(SourceOptions{URL: "http://git.example.com/acme/fleets.git"}); err != nil || auth == nil {
		t.Errorf("with GPUFLEET_GIT_ALLOW_HTTP: %v, %v", auth, err)
	}
}

// A run that could place nothing it was asked to is not a success.
func TestARunWhoseCreatesAllFailIsNotConverged(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Config{Seed: 28})
	if err := e.World.AddFaults(
		&sim.Fault{Op: "RunInstances", Kind: sim.FaultQuota, Rate: 1},
		&sim.Fault{Op: "put", Kind: sim.FaultQuota, Rate: 1},
		&sim.Fault{Op: "instances.insert", Kind: sim.FaultQuota, Rate: 1},
		&sim.Fault{Op: "instances.bulkInsert", Kind: sim.FaultQuota, Rate: 1},
		&sim.Fault{Op: "launch", Kind: sim.FaultQuota, Rate: 1},
	); err != nil {
		t.Fatal(err)
	}
	res, err := e.run(nil)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if OutcomeOf(res, err) != NotConverged || len(res.NotConverged) == 0 {
		t.Errorf("outcome %s (%v), want not converged with reasons", OutcomeOf(res, err), res.NotConverged)
	}
	if got := e.Live(); len(got) != 0 {
		t.Errorf("instances run: %v", got)
	}
}
