// SPDX-License-Identifier: Apache-2.0

package render

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/reconcile/status"
)

// fleetScaleChanges are the changes of a fleet of thousands of nodes:
// 200 creates on one offer, 58 deletions of nodes moved from another, and
// 518 more a disruption budget holds for later runs, with their reason.
func fleetScaleChanges() planner.Changes {
	chat := planner.OfferKey{Cloud: "aws", Region: "us-east-1", Zone: "us-east-1a", InstanceType: "g6.2xlarge", Market: "on-demand"}
	a100 := planner.OfferKey{Cloud: "gcp", Region: "us-east4", Zone: "us-east4-a", InstanceType: "a2-highgpu-1g", Market: "on-demand"}
	moved := "moved to aws/us-east-1/us-east-1a/g6.2xlarge/on-demand, 12% cheaper"
	var c planner.Changes
	for i := range 200 {
		c.Actions = append(c.Actions, planner.Action{Kind: planner.Create, Fleet: "inference", Workload: "chat", Offer: chat,
			Token: fmt.Sprintf("gf2-0123456789abcdef01234567-%d", i), PriceMicros: 976_000, Cause: planner.CausePlaced, Reason: "the plan places a node here"})
	}
	for i := range 58 {
		c.Actions = append(c.Actions, planner.Action{Kind: planner.Delete, Fleet: "inference", Workload: "chat", Offer: a100,
			Instance: fmt.Sprintf("gf-chat-%04d", i), PriceMicros: 1_110_000, Cause: planner.CauseMoved, Reason: moved})
	}
	for i := range 518 {
		c.Deferred = append(c.Deferred, planner.Action{Kind: planner.Delete, Fleet: "inference", Workload: "chat", Offer: a100,
			Instance: fmt.Sprintf("gf-chat-%04d", 58+i), PriceMicros: 1_110_000, Cause: planner.CauseMoved, Reason: moved})
	}
	c.Deferral = "the disruption budget of fleet inference allows 58 deletions of running nodes per run"
	return c
}

// A plan of hundreds of actions reads in a few lines, the reason of a
// group said once; the deferred deletions are counted in the headline and
// listed, grouped, under their own heading; --detail lists every node.
func TestChangesAreGroupedWithTheirReasonOnce(t *testing.T) {
	report := examplePlan(t)
	report.Changes = fleetScaleChanges()
	var text bytes.Buffer
	if err := PlanText(&text, report); err != nil {
		t.Fatal(err)
	}
	out := text.String()
	for _, want := range []string{
		"Plan: 200 to create, 58 to delete, 518 deferred to later runs — ",
		"\nActions: 200 to create, 58 to delete\n" +
			"  + 200 × inference/chat on aws/us-east-1/us-east-1a/g6.2xlarge/on-demand at $0.976/h\n" +
			"  - 58 × inference/chat on gcp/us-east4/us-east4-a/a2-highgpu-1g/on-demand at $1.11/h: moved to aws/us-east-1/us-east-1a/g6.2xlarge/on-demand, 12% cheaper\n" +
			"Deferred to later runs: the disruption budget of fleet inference allows 58 deletions of running nodes per run\n" +
			"  ~ 518 × delete inference/chat on gcp/us-east4/us-east4-a/a2-highgpu-1g/on-demand at $1.11/h: moved to aws/us-east-1/us-east-1a/g6.2xlarge/on-demand, 12% cheaper\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the plan lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "12% cheaper"); n != 2 {
		t.Errorf("the reason is said %d times, want once per group (2)", n)
	}
	if strings.Contains(out, "gf-chat-0001") {
		t.Error("the grouped plan lists a node")
	}

	var detail bytes.Buffer
	if err := (View{Detail: true}).PlanText(&detail, report); err != nil {
		t.Fatal(err)
	}
	for _, node := range []string{"      gf2-0123456789abcdef01234567-199\n", "      gf-chat-0057\n", "      gf-chat-0575\n"} {
		if !strings.Contains(detail.String(), node) {
			t.Errorf("--detail does not list %q", strings.TrimSpace(node))
		}
	}

	// Markdown, read in a pull request, lists a bounded number of nodes
	// even with detail.
	var md bytes.Buffer
	if err := (View{Detail: true}).PlanMarkdown(&md, report); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "**Plan: 200 to create, 58 to delete, 518 deferred to later runs") ||
		!strings.Contains(md.String(), "    … and 498 more (-o json lists every one)\n") ||
		strings.Contains(md.String(), "gf-chat-0575") {
		t.Errorf("the Markdown plan is not grouped and bounded:\n%s", md.String())
	}
}

// A pull request's comment lists each group once, not the groups and then
// every node again.
func TestTheReviewCommentListsGroupsOnly(t *testing.T) {
	head := examplePlan(t)
	head.Changes = fleetScaleChanges()
	review := planner.NewReview(head, head.Plan, nil, nil)
	var md bytes.Buffer
	if err := ReviewMarkdown(&md, review); err != nil {
		t.Fatal(err)
	}
	out := md.String()
	if lines := strings.Count(out, "\n"); lines > 80 {
		t.Errorf("the comment has %d lines for 776 actions:\n%s", lines, out)
	}
	for _, want := range []string{
		"### Plan: 200 to create, 58 to delete, 518 deferred to later runs — ",
		"> Deferred to later runs: the disruption budget of fleet inference allows 58 deletions of running nodes per run\n",
		"\n+ 200 × inference/chat on aws/us-east-1/us-east-1a/g6.2xlarge/on-demand at $0.976/h\n",
		"\n~ 518 × delete inference/chat on gcp/",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the comment lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "gf-chat-") || strings.Contains(out, "+ create ") {
		t.Errorf("the comment lists nodes one by one:\n%s", out)
	}
}

// A run over many pools says what it did a line per workload and offer,
// folded beyond the first few, and its failed tries in one line when no
// node failed: they were planned again. --detail lists every node and try.
func TestARunIsSummedUpInAFewLines(t *testing.T) {
	var applied []status.ActionResult
	for pool := range 20 {
		offer := fmt.Sprintf("aws/us-east-1/us-east-1a/g4dn.%dxlarge/spot", pool)
		for n := range 64 {
			applied = append(applied, status.ActionResult{Fleet: "infer", Kind: planner.Create, Workload: "serve", Offer: offer, Instance: fmt.Sprintf("i-%02d%02d", pool, n)})
		}
		applied = append(applied, status.ActionResult{Fleet: "infer", Kind: planner.Create, Workload: "serve", Offer: offer, Error: "create " + offer + ": capacity: launched 64 of 65"})
	}
	counts := status.RunCounts{Created: 1280, Replaced: 1216, FailedCalls: 20}
	var b strings.Builder
	if err := RunText(&b, Run{Applied: applied, Rounds: 20, Counts: counts, Converged: true}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"\nApplied in 20 rounds: 1280 created, 0 deleted, 0 failed nodes (1216 re-placed after a pool ran out, 20 failed cloud calls)\n",
		"\n  + 64 × infer/serve on aws/us-east-1/us-east-1a/g4dn.0xlarge/spot created\n",
		"\n  + 832 × infer/serve on 13 more offers created (--detail lists them)\n",
		"\n20 tries on 20 offers failed; the run planned their nodes again (--detail lists them)\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the run's text lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "\n  + "); n != maxGroupsPerCause {
		t.Errorf("%d lines of creates, want %d:\n%s", n, maxGroupsPerCause, out)
	}

	var detail strings.Builder
	if err := RunText(&detail, Run{Applied: applied, Rounds: 20, Counts: counts, Converged: true, Detail: true}); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(detail.String(), "\n      i-"); n != 1280 {
		t.Errorf("--detail lists %d instances, want 1280", n)
	}
	if n := strings.Count(detail.String(), "\n  ! 1 × create infer/serve on "); n != 20 {
		t.Errorf("--detail lists %d failed tries, want 20", n)
	}
}

// BenchmarkPlanTextAtFleetScale renders a plan of 776 actions, grouped.
func BenchmarkPlanTextAtFleetScale(b *testing.B) {
	report := examplePlan(b)
	report.Changes = fleetScaleChanges()
	var out bytes.Buffer
	for b.Loop() {
		out.Reset()
		if err := PlanText(&out, report); err != nil {
			b.Fatal(err)
		}
	}
}
