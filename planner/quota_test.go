// SPDX-License-Identifier: Apache-2.0

package planner

import (
	"testing"

	"github.com/gpufleet/gpufleet/schema"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// quotaFleet asks for H100 nodes (p5.48xlarge, 192 vCPUs) and A100 nodes
// (p4d.24xlarge, 96 vCPUs) on demand in us-east-1, where both count against
// "Running On-Demand P instances" (L-417A185B).
func quotaFleet(h100, a100 int) Input {
	cat := catalog.Default()
	in := Input{
		Offers:   Expand(cat, map[string][]string{catalog.AWS: {"us-east-1"}}),
		Defaults: schema.Defaults{},
	}
	hw := workloadSpec("train", "H100", 8, h100)
	aw := workloadSpec("eval", "A100-40GB", 8, a100)
	for _, w := range []*schema.Workload{&hw, &aw} {
		w.Capacity = schema.CapacityOnDemand
		w.Placement.Clouds = []string{catalog.AWS}
	}
	aw.Priority = 10
	in.Fleets = []schema.Fleet{{Name: "ml", Owner: "team", Workloads: []schema.Workload{hw, aw}}}
	return in
}

func pQuota(limit, used int64) Quota {
	return Quota{Cloud: catalog.AWS, Region: "us-east-1", Name: "L-417A185B", Unit: catalog.VCPUs, Limit: limit, Used: used}
}

func vcpusOf(t *testing.T, plan *Plan) int64 {
	t.Helper()
	var n int64
	for _, f := range plan.Fleets {
		for _, w := range f.Workloads {
			for _, pl := range w.Placements {
				switch pl.Offer.InstanceType {
				case "p5.48xlarge":
					n += 192 * int64(pl.Count)
				case "p4d.24xlarge":
					n += 96 * int64(pl.Count)
				default:
					t.Fatalf("unexpected type %s", pl.Offer.InstanceType)
				}
			}
		}
	}
	return n
}

// 480 vCPUs hold two H100 nodes and one A100 node, or one H100 node and
// three A100 nodes: the higher priority's two nodes come first, whatever
// the flow's per-class caps alone would allow (2 and 5).
func TestAQuotaOfMixedSizesHoldsExactly(t *testing.T) {
	in := quotaFleet(3, 4)
	in.Quotas = []Quota{pQuota(480, UsedUnknown)}
	plan := solve(t, in)
	if got := vcpusOf(t, plan); got > 480 {
		t.Fatalf("plan uses %d vCPUs of 480", got)
	}
	train, eval := plan.Workload("ml", "train"), plan.Workload("ml", "eval")
	if train.Placed != 2 || eval.Placed != 1 || !plan.Optimal {
		t.Errorf("placed %d H100 and %d A100 nodes (optimal %v), want 2 and 1, proven", train.Placed, eval.Placed, plan.Optimal)
	}
}

// Others' use leaves less room; a quota the input does not name limits
// nothing; gpufleet's own running nodes are part of the use the cloud
// reports, not more of it.
func TestAQuotaLeavesWhatOthersUse(t *testing.T) {
	for _, tt := range []struct {
		name       string
		quotas     []Quota
		running    int
		wantH100   int
		wantAtMost int64
	}{
		{"others use half", []Quota{pQuota(768, 384)}, 0, 2, 384},
		{"no use reported", []Quota{pQuota(768, UsedUnknown)}, 0, 3, 768},
		{"our own nodes are in the use", []Quota{pQuota(768, 384)}, 2, 3, 768},
		{"another quota", []Quota{{Cloud: catalog.AWS, Region: "us-east-1", Name: "L-DB2E81BA", Limit: 0}}, 0, 3, 1 << 40},
		{"another region", []Quota{{Cloud: catalog.AWS, Region: "us-west-2", Name: "L-417A185B", Limit: 0}}, 0, 3, 1 << 40},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := quotaFleet(3, 0)
			in.Quotas = tt.quotas
			for i := range tt.running {
				in.Observed = append(in.Observed, Instance{ID: "i-" + string(rune('a'+i)), Fleet: "ml", Workload: "train", State: StateRunning,
					OfferKey: OfferKey{catalog.AWS, "us-east-1", "us-east-1a", "p5.48xlarge", catalog.OnDemand}})
			}
			plan := solve(t, in)
			if got := plan.Workload("ml", "train").Placed; got != tt.wantH100 {
				t.Errorf("placed %d H100 nodes, want %d", got, tt.wantH100)
			}
			if got := vcpusOf(t, plan); got > tt.wantAtMost {
				t.Errorf("uses %d vCPUs, want at most %d", got, tt.wantAtMost)
			}
		})
	}
}

// A quota cut below what runs deletes nothing: the cloud keeps running
// what it already runs, and so does the plan; it only adds nothing.
func TestAQuotaCutDeletesNoRunningNode(t *testing.T) {
	in := quotaFleet(4, 0)
	for i := range 3 {
		in.Observed = append(in.Observed, Instance{ID: "i-" + string(rune('a'+i)), Fleet: "ml", Workload: "train", State: StateRunning,
			OfferKey: OfferKey{catalog.AWS, "us-east-1", "us-east-1a", "p5.48xlarge", catalog.OnDemand}})
	}
	in.Quotas = []Quota{pQuota(192, 3*192)}
	plan := solve(t, in)
	changes := Diff(plan, in.Observed, DiffOptions{})
	for _, a := range changes.Actions {
		t.Errorf("action %+v: a quota cut should change nothing", a)
	}
	if got := plan.Workload("ml", "train").Placed; got != 3 {
		t.Errorf("placed %d, want the 3 that run", got)
	}
}

// A full quota that holds workloads back is named in their shortfalls, and
// the plan says what raising it would buy: a request ready to file.
func TestAFullQuotaSaysWhatARaiseWouldBuy(t *testing.T) {
	in := quotaFleet(3, 4)
	in.Quotas = []Quota{pQuota(576, 96)} // 96 vCPUs used by others: 480 left
	in.Quotas[0].Description = "Running On-Demand P instances"
	plan := solve(t, in)
	train := plan.Workload("ml", "train")
	if train.Shortfall == nil || train.Shortfall.Cause != CauseQuota ||
		train.Shortfall.Message != "held back by L-417A185B (Running On-Demand P instances) in us-east-1: limit 576 vCPUs, 96 in use by others" {
		t.Errorf("train's shortfall: %+v", train.Shortfall)
	}
	if len(plan.Quotas) != 1 {
		t.Fatalf("quota reports %+v, want the one quota", plan.Quotas)
	}
	r := plan.Quotas[0]
	if !r.Full || r.Planned != 480 || r.Raise == nil {
		t.Fatalf("report %+v, want it full at 480 with a raise", r)
	}
	// Without the quota: 3 H100 nodes and 4 A100 ones, 960 vCPUs, and the
	// 96 others use.
	if r.Raise.To != 1056 || r.Raise.ExtraNodes != 4 || len(r.Raise.Workloads) != 2 {
		t.Errorf("raise %+v, want to 1056 for 4 more nodes of both workloads", r.Raise)
	}
	if r.Raise.SavingMicros >= 0 {
		t.Errorf("raise saves %d, but 4 more nodes cost more", r.Raise.SavingMicros)
	}
}
