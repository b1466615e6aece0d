// SPDX-License-Identifier: Apache-2.0

package reconcile_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/providers/fake"
	"github.com/gpufleet/gpufleet/reconcile"
	"github.com/gpufleet/gpufleet/reconcile/status"
	"github.com/gpufleet/gpufleet/schema"
)

// node is an instance of fleet ml, workload train, on awsT4.
func node(id string, state planner.State) planner.Instance {
	return planner.Instance{ID: id, OfferKey: awsT4, Fleet: "ml", Workload: "train", Token: "tok-" + id, State: state}
}

// recordedStatus is fleet ml's status listing these instances.
func recordedStatus(insts ...planner.Instance) map[string]*status.FleetStatus {
	st := &status.FleetStatus{Fleet: "ml", Observed: fakeNow}
	byWorkload := map[string]int{}
	for _, inst := range insts {
		i, ok := byWorkload[inst.Workload]
		if !ok {
			st.Workloads = append(st.Workloads, status.WorkloadStatus{Name: inst.Workload})
			i = len(st.Workloads) - 1
			byWorkload[inst.Workload] = i
		}
		st.Workloads[i].Instances = append(st.Workloads[i].Instances, status.InstanceStatus{ID: inst.ID, Offer: inst.OfferKey.String(), State: inst.State, Token: inst.Token, Bootstrap: inst.Bootstrap})
	}
	return map[string]*status.FleetStatus{"ml": st}
}

// driftLines are a drift's instances, one line each: "kind cloud/id
// fleet/workload", and for a changed one its fields.
func driftLines(d *status.Drift) []string {
	var out []string
	for _, i := range d.Instances {
		line := fmt.Sprintf("%s %s/%s %s/%s", i.Kind, i.Cloud, i.ID, i.Fleet, i.Workload)
		for _, c := range i.Changes {
			line += fmt.Sprintf(" %s:%s->%s", c.Field, c.Recorded, c.Observed)
		}
		out = append(out, line)
	}
	return out
}

func TestCompareDrift(t *testing.T) {
	moved := node("i-2", planner.StateRunning)
	moved.InstanceType, moved.Zone = "g4dn.2xlarge", "us-east-1b"
	retagged := node("i-3", planner.StateRunning)
	retagged.Workload = "infer"
	tests := []struct {
		name     string
		recorded []planner.Instance
		observed []planner.Instance
		foreign  []providers.Unowned
		// deleted are the instances the last run deleted itself.
		deleted []string
		want    []string
		counts  status.FleetDrift
	}{
		{
			name:     "none",
			recorded: []planner.Instance{node("i-1", planner.StateRunning), node("i-2", planner.StatePending)},
			observed: []planner.Instance{node("i-1", planner.StateRunning), node("i-2", planner.StateRunning)},
		},
		{
			name:     "missing: terminated outside gpufleet, and no longer listed",
			recorded: []planner.Instance{node("i-1", planner.StateRunning), node("i-2", planner.StateRunning), node("i-3", planner.StateRunning)},
			observed: []planner.Instance{node("i-1", planner.StateTerminated), node("i-3", planner.StateRunning)},
			want:     []string{"missing aws/i-1 ml/train", "missing aws/i-2 ml/train"},
			counts:   status.FleetDrift{Missing: 2},
		},
		{
			name:     "gone as recorded, or deleted by gpufleet: no drift",
			recorded: []planner.Instance{node("i-1", planner.StateTerminated), node("i-2", planner.StateRunning)},
			observed: []planner.Instance{node("i-2", planner.StateTerminated)},
			deleted:  []string{"i-2"},
		},
		{
			name:     "extra: owned in the cloud, not in the status",
			recorded: []planner.Instance{node("i-1", planner.StateRunning)},
			observed: []planner.Instance{node("i-1", planner.StateRunning), node("i-9", planner.StateRunning), node("i-8", planner.StateTerminated)},
			want:     []string{"extra aws/i-9 ml/train"},
			counts:   status.FleetDrift{Extra: 1},
		},
		{
			name:     "changed: state, type and zone, tags",
			recorded: []planner.Instance{node("i-1", planner.StateRunning), node("i-2", planner.StateRunning), node("i-3", planner.StateRunning)},
			observed: []planner.Instance{node("i-1", planner.StateStopping), moved, retagged},
			want: []string{
				"changed aws/i-1 ml/train state:running->stopping",
				"changed aws/i-2 ml/train zone:us-east-1a->us-east-1b instanceType:g4dn.xlarge->g4dn.2xlarge",
				"changed aws/i-3 ml/train tag gpufleet-workload:train->infer",
			},
			counts: status.FleetDrift{Changed: 3},
		},
		{
			name:     "foreign: in gpufleet's name space, not owned",
			recorded: []planner.Instance{node("i-1", planner.StateRunning)},
			observed: []planner.Instance{node("i-1", planner.StateRunning)},
			foreign: []providers.Unowned{
				{ID: "i-f1", Offer: awsT4, State: planner.StateRunning, Tags: map[string]string{providers.TagFleet: "ml"}},
				{ID: "gf-ml-train-0", Offer: gcpCentralA, State: planner.StateRunning},
				{ID: "i-f2", Offer: awsT4, State: planner.StateTerminated, Tags: map[string]string{providers.TagFleet: "ml"}},
			},
			want:   []string{"foreign gcp/gf-ml-train-0 /", "foreign aws/i-f1 ml/"},
			counts: status.FleetDrift{Foreign: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			recorded := recordedStatus(tt.recorded...)
			for _, id := range tt.deleted {
				recorded["ml"].LastActions = append(recorded["ml"].LastActions, status.ActionResult{Kind: planner.Delete, Workload: "train", Offer: awsT4.String(), Instance: id})
			}
			d := reconcile.CompareDrift(reconcile.DriftInput{Recorded: recorded, Observed: tt.observed, Foreign: tt.foreign, Fleets: []string{"ml"}, At: fakeNow})
			if got := driftLines(d); !slices.Equal(got, tt.want) {
				t.Errorf("drift:\n got %q\nwant %q", got, tt.want)
			}
			got := d.Fleet("ml")
			if got.Missing != tt.counts.Missing || got.Extra != tt.counts.Extra || got.Changed != tt.counts.Changed || got.Foreign != tt.counts.Foreign {
				t.Errorf("ml's counts = %+v, want %+v", got, tt.counts)
			}
			if !got.StatusObservedAt.Equal(fakeNow) {
				t.Errorf("ml's status observed at %v, want %v", got.StatusObservedAt, fakeNow)
			}
		})
	}
}

// adopting is a fake cloud that also lists instances it holds but gpufleet
// does not own, as a provider with providers.Adopter does.
type adopting struct {
	*fake.Provider
	unowned []providers.Unowned
	asked   []providers.UnownedSelector
}

func (p *adopting) Unowned(_ context.Context, sel providers.UnownedSelector) ([]providers.Unowned, error) {
	p.asked = append(p.asked, sel)
	return p.unowned, nil
}

func (p *adopting) Adopt(context.Context, providers.Unowned, providers.CreateRequest) (providers.Instance, error) {
	return providers.Instance{}, fake.Err(providers.KindInvalid)
}

var _ providers.Adopter = (*adopting)(nil)

// drift observes the clouds of a converged run, three of whose nodes were
// then terminated outside gpufleet, and reports them missing; a foreign
// instance where the provider can list them, and which clouds could not
// be looked at for those.
func TestObserveDrift(t *testing.T) {
	ctx := context.Background()
	e := newFakeEnv(t, strings.Replace(mlFleet, "nodes: 2", "nodes: 4", 1))
	if _, err := e.run(ctx, func(o *reconcile.Options) { o.Commit = true }); err != nil {
		t.Fatal(err)
	}
	repo, err := schema.Load(e.dir)
	if err != nil {
		t.Fatal(err)
	}
	observe := func(aws providers.Provider) *status.Drift {
		t.Helper()
		d, err := reconcile.ObserveDrift(ctx, reconcile.DriftOptions{Dir: e.dir, Repo: repo, Providers: map[string]providers.Provider{"aws": aws, "gcp": e.gcp}})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if d := observe(e.aws); d.Count() != 0 || !slices.Equal(d.ForeignUnchecked, []string{"aws", "gcp"}) {
		t.Fatalf("right after a converged run: %q, foreign unchecked in %v; want no drift, both clouds unchecked", driftLines(d), d.ForeignUnchecked)
	}

	var train []string
	for _, inst := range e.aws.Instances() {
		if inst.Workload == "train" {
			train = append(train, inst.ID)
		}
	}
	if len(train) != 4 {
		t.Fatalf("aws runs %d train nodes, want 4", len(train))
	}
	slices.Sort(train)
	e.aws.SetState(train[0], planner.StateTerminated)
	e.aws.Remove(train[1])
	e.aws.Remove(train[2])
	aws := &adopting{Provider: e.aws, unowned: []providers.Unowned{{ID: "i-0handmade", Offer: awsT4, State: planner.StateRunning, Tags: map[string]string{"gpufleet-fleet": "ml"}}}}
	d := observe(aws)
	want := []string{"missing aws/" + train[0] + " ml/train", "missing aws/" + train[1] + " ml/train", "missing aws/" + train[2] + " ml/train", "foreign aws/i-0handmade ml/"}
	if got := driftLines(d); !slices.Equal(got, want) {
		t.Errorf("drift:\n got %q\nwant %q", got, want)
	}
	if !slices.Equal(d.ForeignUnchecked, []string{"gcp"}) {
		t.Errorf("foreign unchecked in %v, want gcp alone", d.ForeignUnchecked)
	}
	if len(aws.asked) != 1 || !aws.asked[0].Namespace || aws.asked[0].Limit <= 0 {
		t.Errorf("Unowned asked with %+v, want once, for the name space, bounded", aws.asked)
	}
	if f := d.Fleet("ml"); f.Missing != 3 || f.Foreign != 1 || f.Total() != 4 {
		t.Errorf("ml's counts = %+v, want 3 missing and 1 foreign", f)
	}
	// Nothing was written: drift changes no file.
	if out, err := os.ReadDir(filepath.Join(e.dir, "status")); err != nil || len(out) == 0 {
		t.Fatalf("status directory: %v", err)
	}
}
