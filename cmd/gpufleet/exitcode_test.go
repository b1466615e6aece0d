// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/reconcile"
	"github.com/gpufleet/gpufleet/reconcile/testenv"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// The exit statuses scripts and CI rely on; testscript tells only zero from
// non-zero.
func TestExitCodes(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want int
	}{
		{"plan with changes", []string{"plan", "--repo", "../../examples/fleet-repo", "--detailed-exitcode"}, 2},
		{"plan with changes, Terraform's one-dash flag", []string{"plan", "--repo", "../../examples/fleet-repo", "-detailed-exitcode"}, 2},
		{"plan with changes, no flag", []string{"plan", "--repo", "../../examples/fleet-repo"}, 0},
		{"plan with nothing to do", []string{"plan", "--repo", "../../examples/fleet-repo", "--observed", "../../testdata/observed/fleet-repo-converged.json", "--detailed-exitcode"}, 0},
		{"plan of a broken repository", []string{"plan", "--repo", "../../testdata", "--detailed-exitcode"}, 1},
		{"valid repository", []string{"validate", "--repo", "../../examples/fleet-repo"}, 0},
		{"not a repository", []string{"validate", "--repo", "../../testdata"}, 1},
		{"unknown command", []string{"frobnicate"}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if got := Main(tt.args, &stdout, &stderr); got != tt.want {
				t.Errorf("exit status %d, want %d\nstderr: %s", got, tt.want, stderr.String())
			}
		})
	}
}

// runFixture is a scratch fleet repository and the state file of emulated
// clouds for reconcile, apply and demo to run against.
type runFixture struct {
	dir, origin, state string
}

func newRunFixture(t *testing.T, faults ...*sim.Fault) *runFixture {
	t.Helper()
	env := testenv.NewOrigin(t, testenv.Example(t))
	f := &runFixture{dir: env.Dir, origin: env.Origin, state: filepath.Join(env.Dir, "clouds.json")}
	world, err := sim.New(sim.Config{Seed: 1, StatePath: f.state})
	if err != nil {
		t.Fatal(err)
	}
	if err := world.AddFaults(faults...); err != nil {
		t.Fatal(err)
	}
	if err := world.Save(); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *runFixture) reconcile(t *testing.T, extra ...string) (int, string, string) {
	t.Helper()
	args := append([]string{"reconcile", "--repo", "file://" + f.origin, "--workdir", filepath.Join(f.dir, "work"),
		"--sim", "--sim-state", f.state}, extra...)
	var stdout, stderr bytes.Buffer
	code := Main(args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// reconcile's exit status says how the run ended: 0 converged, 1 error, 2
// finished short of the specs, 3 another reconciler holds the lock.
func TestRunExitCodes(t *testing.T) {
	everyCreateFails := []*sim.Fault{
		{Op: "RunInstances", Kind: sim.FaultQuota, Rate: 1},
		{Op: "put", Kind: sim.FaultQuota, Rate: 1},
		{Op: "instances.insert", Kind: sim.FaultQuota, Rate: 1},
		{Op: "instances.bulkInsert", Kind: sim.FaultQuota, Rate: 1},
	}
	t.Run("converged, then nothing to do", func(t *testing.T) {
		f := newRunFixture(t)
		for run := range 2 {
			if code, stdout, stderr := f.reconcile(t); code != exitConverged {
				t.Fatalf("run %d: exit %d\n%s\n%s", run, code, stdout, stderr)
			}
		}
	})
	t.Run("every create fails", func(t *testing.T) {
		f := newRunFixture(t, everyCreateFails...)
		code, stdout, _ := f.reconcile(t)
		if code != exitNotConverged {
			t.Errorf("exit %d, want %d", code, exitNotConverged)
		}
		if strings.Contains(stdout, "the clouds match the specs") || !strings.Contains(stdout, "Not converged") {
			t.Errorf("the output does not say the run fell short:\n%s", stdout)
		}
		// A dry run only plans: it finished, so it succeeds.
		if code, _, _ := f.reconcile(t, "--dry-run"); code != exitConverged {
			t.Errorf("dry run: exit %d", code)
		}
	})
	t.Run("a cloud that cannot be listed", func(t *testing.T) {
		f := newRunFixture(t, &sim.Fault{Cloud: "gcp", Op: "instances.aggregatedList", Kind: sim.FaultServerError, Rate: 1})
		if code, stdout, stderr := f.reconcile(t); code != exitError || strings.Contains(stdout, "the clouds match the specs") {
			t.Errorf("exit %d, want %d\n%s\n%s", code, exitError, stdout, stderr)
		}
	})
	t.Run("the lock is held", func(t *testing.T) {
		f := newRunFixture(t)
		c, err := reconcile.Open(context.Background(), reconcile.SourceOptions{URL: "file://" + f.origin, WorkDir: filepath.Join(f.dir, "holder")})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Lock(context.Background(), reconcile.LockOptions{Holder: "elsewhere:1", TTL: time.Hour}); err != nil {
			t.Fatal(err)
		}
		code, _, stderr := f.reconcile(t)
		if code != exitLocked || !strings.Contains(stderr, "elsewhere:1") {
			t.Errorf("exit %d, want %d\n%s", code, exitLocked, stderr)
		}
		var stdout, errOut bytes.Buffer
		if code := Main([]string{"unlock", "--repo", "file://" + f.origin, "--workdir", filepath.Join(f.dir, "work")}, &stdout, &errOut); code != exitError || !strings.Contains(errOut.String(), "--force") {
			t.Errorf("unlock of a live lock: exit %d\n%s", code, errOut.String())
		}
		if code := Main([]string{"unlock", "--force", "--repo", "file://" + f.origin, "--workdir", filepath.Join(f.dir, "work")}, &stdout, &errOut); code != 0 {
			t.Errorf("unlock --force: exit %d\n%s", code, errOut.String())
		}
		if code, stdout, stderr := f.reconcile(t); code != exitConverged {
			t.Errorf("after unlock: exit %d\n%s\n%s", code, stdout, stderr)
		}
	})
}

// A catalog whose prices are all zero, or that has none for an enabled
// cloud, is refused rather than planned with: the plan would read every
// running node as misplaced.
func TestPlanRefusesACatalogWithoutValidPrices(t *testing.T) {
	for _, tt := range []struct {
		name string
		edit func(*catalog.Catalog)
	}{
		{"prices all zero", func(c *catalog.Catalog) {
			for i := range c.Offers {
				c.Offers[i].PriceMicros = 0
			}
		}},
		{"no GCP offers", func(c *catalog.Catalog) {
			c.Offers = slices.DeleteFunc(c.Offers, func(o catalog.Offer) bool { return o.Cloud == catalog.GCP })
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cat := catalog.Default()
			tt.edit(cat)
			var b bytes.Buffer
			if err := cat.Write(&b); err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(t.TempDir(), "catalog.json")
			if err := os.WriteFile(file, b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			code := Main([]string{"plan", "--repo", "../../examples/fleet-repo", "--catalog", file}, &stdout, &stderr)
			if code != 1 || !strings.Contains(stderr.String(), "no valid offer") {
				t.Errorf("exit %d, want 1 with the catalog refused\nstdout: %s\nstderr: %s", code, stdout.String(), stderr.String())
			}
		})
	}
}
