// SPDX-License-Identifier: Apache-2.0

package reconcile_test

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/providers/fake"
	"github.com/gpufleet/gpufleet/reconcile"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// fakeConfig enables two clouds: aws sells T4 and L4 nodes in one region,
// gcp L4 nodes more cheaply in two.
const fakeConfig = `package gpufleet

gpufleet: clouds: {
	aws: regions: ["us-east-1"]
	gcp: {project: "gpufleet-test", regions: ["us-central1", "europe-west4"]}
}
`

// mlFleet has an L4 workload, cheapest on gcp, and a T4 one only aws can
// run.
const mlFleet = `package gpufleet

fleets: ml: {
	owner: "ml-team"
	workloads: {
		infer: {gpu: {model: "L4", perNode: 1}, nodes: 1, labels: team: "ml"}
		train: {gpu: {model: "T4", perNode: 1}, nodes: 2}
	}
}
`

// Offers of the catalog the tests place on, cheapest first for an
// on-demand one-GPU L4 node: gcp us-central1's zones that sell
// g2-standard-4, then europe-west4's, then aws.
var (
	gcpCentralA = offer("gcp", "us-central1", "us-central1-a", "g2-standard-4", catalog.OnDemand)
	gcpCentralB = offer("gcp", "us-central1", "us-central1-b", "g2-standard-4", catalog.OnDemand)
	gcpCentralC = offer("gcp", "us-central1", "us-central1-c", "g2-standard-4", catalog.OnDemand)
	gcpEuropeA  = offer("gcp", "europe-west4", "europe-west4-a", "g2-standard-4", catalog.OnDemand)
	gcpEuropeB  = offer("gcp", "europe-west4", "europe-west4-b", "g2-standard-4", catalog.OnDemand)
	awsL4       = offer("aws", "us-east-1", "us-east-1a", "g6.2xlarge", catalog.OnDemand)
	awsL4Spot   = offer("aws", "us-east-1", "us-east-1a", "g6.2xlarge", catalog.Spot)
	awsT4       = offer("aws", "us-east-1", "us-east-1a", "g4dn.xlarge", catalog.OnDemand)
)

func offer(cloud, region, zone, instanceType string, market catalog.Market) planner.OfferKey {
	return planner.OfferKey{Cloud: cloud, Region: region, Zone: zone, InstanceType: instanceType, Market: market}
}

// fakeNow is the clock of every run, so blocklist expiries are exact.
var fakeNow = time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)

// fakeEnv is a fleet repository committed in a local checkout, reconciled
// in place on a fake provider per cloud. Runs write no status unless a test
// asks them to.
type fakeEnv struct {
	t        *testing.T
	dir      string
	aws, gcp *fake.Provider
}

func newFakeEnv(t *testing.T, fleet string) *fakeEnv {
	t.Helper()
	e := &fakeEnv{t: t, dir: t.TempDir(), aws: fake.New("aws", "us-east-1"), gcp: fake.New("gcp", "us-central1", "europe-west4")}
	files := map[string]string{"gpufleet.cue": fakeConfig, "fleets/ml.cue": fleet}
	for name, content := range files {
		path := filepath.Join(e.dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A local checkout is reconciled only as committed.
	repo, err := git.PlainInitWithOptions(e.dir, &git.PlainInitOptions{InitOptions: git.InitOptions{DefaultBranch: plumbing.Main}})
	if err != nil {
		t.Fatal(err)
	}
	wt, err := repo.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	if err := wt.AddWithOptions(&git.AddOptions{All: true}); err != nil {
		t.Fatal(err)
	}
	sig := &object.Signature{Name: "test", Email: "test@example.com", When: fakeNow}
	if _, err := wt.Commit("fleets", &git.CommitOptions{Author: sig, Committer: sig}); err != nil {
		t.Fatal(err)
	}
	return e
}

// run reconciles the checkout once. Calls go one at a time, so the order
// the fakes record is the order apply chose.
func (e *fakeEnv) run(ctx context.Context, edit func(*reconcile.Options)) (*reconcile.Result, error) {
	c, err := reconcile.Open(ctx, reconcile.SourceOptions{URL: e.dir})
	if err != nil {
		return nil, err
	}
	opts := reconcile.Options{
		Providers:   map[string]providers.Provider{"aws": e.aws, "gcp": e.gcp},
		Now:         func() time.Time { return fakeNow },
		Parallelism: 1,
		Rounds:      4,
		Lock:        reconcile.LockOptions{Holder: "apply-test"},
	}
	if edit != nil {
		edit(&opts)
	}
	return reconcile.Run(ctx, c, opts)
}

// mutations are the creates and deletes both fakes received, in order, one
// line each: "create <offer> <fleet>/<workload>" or "delete <instance>",
// with ": <kind>" when the call failed.
func (e *fakeEnv) mutations() []string {
	var calls []fake.Call
	for _, p := range []*fake.Provider{e.aws, e.gcp} {
		calls = append(calls, p.CallsTo(fake.MethodCreate)...)
		calls = append(calls, p.CallsTo(fake.MethodDelete)...)
	}
	slices.SortFunc(calls, func(a, b fake.Call) int { return cmp.Compare(a.Seq, b.Seq) })
	var out []string
	for _, c := range calls {
		line := fmt.Sprintf("create %s %s/%s", c.Offer, c.Fleet, c.Workload)
		if c.Method == fake.MethodDelete {
			line = "delete " + c.Instance
		}
		if c.Err != nil {
			line += ": " + string(cmp.Or(providers.KindOf(c.Err), providers.Kind(c.Err.Error())))
		}
		out = append(out, line)
	}
	return out
}

// blocked lists the offers of a result's blocklist.
func blocked(res *reconcile.Result) []string {
	var out []string
	for _, b := range res.Blocklist {
		out = append(out, b.Offer)
	}
	return out
}

func contains(list []string, sub string) bool {
	return slices.ContainsFunc(list, func(s string) bool { return strings.Contains(s, sub) })
}
