// SPDX-License-Identifier: Apache-2.0

package render

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/reconcile/status"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

var (
	at1405 = time.Date(2026, 11, 29, 14, 5, 0, 0, time.UTC)
	at1630 = time.Date(2026, 11, 29, 16, 30, 0, 0, time.UTC)
	nextAM = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
)

// short is a workload that lacks nodes, and why.
func short(name string, desired, placed int, cause planner.ShortfallCause, message string) planner.WorkloadPlan {
	wl := planner.WorkloadPlan{Name: name, Desired: desired, Placed: placed}
	if placed > 0 {
		wl.Placements = []planner.Placement{{Offer: offer(0), Count: placed, Kept: placed, PriceMicros: 1_000_000}}
		wl.CostMicros = int64(placed) * 1_000_000
	}
	if placed < desired {
		wl.Shortfall = &planner.Shortfall{Nodes: desired - placed, Cause: cause, Message: message}
	}
	return wl
}

func fleet(name string, workloads ...planner.WorkloadPlan) planner.FleetPlan {
	f := planner.FleetPlan{Name: name, Owner: "team", Workloads: workloads}
	for i := range f.Workloads {
		f.Workloads[i].Fleet = name
		f.CostMicros += f.Workloads[i].CostMicros
	}
	return f
}

func offer(i int) planner.OfferKey {
	return planner.OfferKey{Cloud: "aws", Region: "us-east-1", Zone: "us-east-1a", InstanceType: fmt.Sprintf("g6.%dxlarge", i+1), Market: catalog.Spot}
}

// blocked is n offers blocklisted, the first until first and the rest
// until last.
func blocked(n int, first, last time.Time) []planner.BlockedOffer {
	var out []planner.BlockedOffer
	for i := range n {
		until := last
		if i == 0 {
			until = first
		}
		out = append(out, planner.BlockedOffer{Offer: offer(i), Until: until})
	}
	return out
}

func report(fleets ...planner.FleetPlan) *planner.Report {
	p := &planner.Plan{Version: planner.PlanVersion, Prices: planner.PriceInfo{Source: "snapshot", AsOf: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)}, Optimal: true, Fleets: fleets}
	for _, f := range fleets {
		p.CostMicros += f.CostMicros
	}
	p.NowMicros = p.CostMicros
	return planner.NewReport(p, planner.Changes{})
}

func withCreates(r *planner.Report, n int) *planner.Report {
	for i := range n {
		r.Changes.Actions = append(r.Changes.Actions, planner.Action{Kind: planner.Create, Fleet: r.Plan.Fleets[0].Name, Workload: r.Plan.Fleets[0].Workloads[0].Name, Offer: offer(i), PriceMicros: 1_000_000})
	}
	r.Plan.CostMicros += int64(n) * 1_000_000
	return r
}

func withBlocklist(r *planner.Report, fleet string, b []planner.BlockedOffer) *planner.Report {
	if r.Blocklist == nil {
		r.Blocklist = map[string][]planner.BlockedOffer{}
	}
	r.Blocklist[fleet] = b
	return r
}

// infer is the 5,000-node spot fleet whose every pool is blocklisted: it
// holds the 512 nodes it runs and gets no more.
func infer() planner.FleetPlan {
	wl := short("serve", 5000, 512, planner.CauseCapacity, "the eligible offers have room for 512 of 5000 nodes (40 offers blocklisted)")
	wl.Rejected = map[planner.Reason]int{planner.RejectBlocklisted: 38, planner.RejectWrongGPU: 500}
	return fleet("infer", wl)
}

func TestThePlanHeadline(t *testing.T) {
	quota := "held back by L-417A185B (Running On-Demand P instances) in us-east-1: limit 384 vCPUs"
	tests := []struct {
		name   string
		report *planner.Report
		want   []string
	}{
		{
			name:   "a plan that places every node and changes nothing says so",
			report: report(fleet("chat", short("w", 4, 4, "", ""))),
			want:   []string{"No changes — $4.00/h"},
		},
		{
			name:   "a shortfall the planner gives no cause for is still said",
			report: report(fleet("chat", short("w", 4, 2, "", ""))),
			want:   []string{"Short 2 of 4 nodes — chat 2 (unexplained)", "No changes possible — $2.00/h"},
		},
		{
			name:   "a plan with changes that places every node keeps its one line",
			report: withCreates(report(fleet("chat", short("w", 4, 4, "", ""))), 2),
			want:   []string{"Plan: 2 to create, 0 to delete — $4.00/h → $6.00/h (+$2.00/h)"},
		},
		{
			name:   "a shortfall with no actions headlines the shortfall, and no change is possible",
			report: withBlocklist(report(infer()), "infer", blocked(40, at1405, at1405)),
			want: []string{
				"Short 4488 of 5000 nodes — infer 4488 (capacity: 40 offers blocklisted until 2026-11-29 14:05 UTC)",
				"No changes possible — $512.00/h",
			},
		},
		{
			name:   "a shortfall with actions comes before the plan line",
			report: withCreates(report(fleet("ml", short("train", 8, 6, planner.CauseQuota, quota))), 2),
			want: []string{
				"Short 2 of 8 nodes — ml 2 (quota: " + quota + ")",
				"Plan: 2 to create, 0 to delete — $6.00/h → $8.00/h (+$2.00/h)",
			},
		},
		{
			name:   "blocklisted offers say when the first and the last come back",
			report: withBlocklist(report(infer()), "infer", blocked(3, at1630, at1405)),
			want:   []string{"Short 4488 of 5000 nodes — infer 4488 (capacity: 3 offers blocklisted until 2026-11-29 14:05–16:30 UTC)", "No changes possible — $512.00/h"},
		},
		{
			name:   "blocklisted offers that come back on different days give both dates",
			report: withBlocklist(report(infer()), "infer", blocked(2, at1405, nextAM)),
			want:   []string{"Short 4488 of 5000 nodes — infer 4488 (capacity: 2 offers blocklisted until 2026-11-29 14:05 UTC – 2026-11-30 09:00 UTC)", "No changes possible — $512.00/h"},
		},
		{
			name: "a shortfall of no offer at all says the planner's reasons when the expiries are not known",
			report: report(fleet("batch", func() planner.WorkloadPlan {
				wl := short("eval", 3, 0, planner.CauseNoOffer, "no offer can serve it (12 blocklisted, 500 wrong GPU model)")
				wl.Rejected = map[planner.Reason]int{planner.RejectBlocklisted: 12, planner.RejectWrongGPU: 500}
				return wl
			}())),
			want: []string{"Short 3 of 3 nodes — batch 3 (no-offer: no offer can serve it (12 blocklisted, 500 wrong GPU model))", "No changes possible — $0.00/h"},
		},
		{
			name: "several fleets are named by shortfall, then name, and past three counted",
			report: report(
				fleet("a", short("w", 10, 9, planner.CausePriority, "the capacity it could use went to workloads of higher priority")),
				fleet("b", short("w", 10, 5, planner.CausePriority, "the capacity it could use went to workloads of higher priority")),
				fleet("c", short("w", 10, 9, planner.CausePriority, "the capacity it could use went to workloads of higher priority")),
				fleet("d", short("w", 10, 0, planner.CausePriority, "the capacity it could use went to workloads of higher priority")),
				fleet("e", short("w", 10, 9, planner.CausePriority, "the capacity it could use went to workloads of higher priority")),
				fleet("f", short("w", 10, 10, "", "")),
			),
			want: []string{
				"Short 18 of 60 nodes — d 10, b 5, a 1, and 2 more fleets (priority: the capacity it could use went to workloads of higher priority)",
				"No changes possible — $42.00/h",
			},
		},
		{
			name: "several causes are grouped, the most nodes first, each with its nodes",
			report: withBlocklist(report(
				infer(),
				fleet("ml",
					short("train", 8, 6, planner.CauseQuota, quota),
					short("tune", 4, 2, planner.CauseBudget, "fleet ml would cost $90.00/h, over its budget of $80.00/h; nodes are shed from the lowest priority first"),
					short("eval", 4, 3, planner.CauseBudget, "fleet ml would cost $90.00/h, over its budget of $80.00/h; nodes are shed from the lowest priority first"),
				),
				fleet("chat", short("a", 4, 1, planner.CauseCapacity, "the eligible offers have room for 1 of 4 nodes"), short("b", 4, 2, planner.CauseCapacity, "the eligible offers have room for 2 of 4 nodes")),
			), "infer", blocked(2, at1405, at1630)),
			want: []string{
				"Short 4498 of 5024 nodes — infer 4488, chat 5, ml 5 (capacity 4493: 2 offers blocklisted until 2026-11-29 14:05–16:30 UTC; budget 3: fleet ml would cost $90.00/h, over its budget of $80.00/h; nodes are shed from the lowest priority first; quota 2: " + quota + ")",
				"No changes possible — $526.00/h",
			},
		},
		{
			name: "workloads of one cause with different messages give the cause alone",
			report: report(fleet("chat",
				short("a", 4, 1, planner.CauseCapacity, "the eligible offers have room for 1 of 4 nodes"),
				short("b", 4, 2, planner.CauseCapacity, "the eligible offers have room for 2 of 4 nodes"),
			)),
			want: []string{"Short 5 of 8 nodes — chat 5 (capacity)", "No changes possible — $3.00/h"},
		},
		{
			name: "a suspended fleet's shortfall is not news",
			report: func() *planner.Report {
				r := report(infer(), fleet("chat", short("w", 4, 4, "", "")))
				r.Suspended = []string{"infer"}
				return r
			}(),
			want: []string{"No changes — $516.00/h"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := planHeadline(tt.report); !slices.Equal(got, tt.want) {
				t.Errorf("headline:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			if got := PlanSummary(tt.report); got != tt.want[0] {
				t.Errorf("PlanSummary() = %q, want %q", got, tt.want[0])
			}
		})
	}
}

// A report without a shortfall renders as it did before shortfalls were
// headlined: the example's golden files hold the rest of it.
func TestAReportWithoutAShortfallKeepsItsHeadline(t *testing.T) {
	r := examplePlan(t)
	var text, md bytes.Buffer
	if err := PlanText(&text, r); err != nil {
		t.Fatal(err)
	}
	if err := PlanMarkdown(&md, r); err != nil {
		t.Fatal(err)
	}
	want := "Plan: 22 to create, 0 to delete — $0.00/h → $123.08/h (+$123.08/h)"
	if got := firstLine(text.String()); got != want {
		t.Errorf("text starts %q, want %q", got, want)
	}
	if got := firstLine(md.String()); got != "**"+want+"**" {
		t.Errorf("markdown starts %q, want %q", got, "**"+want+"**")
	}
	review := planner.NewReview(r, r.Plan, nil, nil)
	var rv bytes.Buffer
	if err := ReviewMarkdown(&rv, review); err != nil {
		t.Fatal(err)
	}
	if got, want := rv.String(), Marker+"\n### Plan: 22 to create, 0 to delete — $123.08/h → $123.08/h ($0.00/h)\n\nPrices:"; !strings.HasPrefix(got, want) {
		t.Errorf("review starts:\n%s\nwant:\n%s", firstLines(got, 3), want)
	}
	if got := string(StatusMarkdown(statusesOf(r, nil), nil, Specs{Commit: "0123456789abcdef0123456789abcdef01234567", Digest: "abc"})); !strings.HasPrefix(got, "# gpufleet status\n\nWritten by gpufleet") {
		t.Errorf("STATUS.md starts:\n%s", firstLines(got, 3))
	}
}

// statusesOf is the statuses a run reconciled to the report leaves, with
// the blocklist entries given by fleet.
func statusesOf(r *planner.Report, blocks map[string][]planner.BlockedOffer) map[string]*status.FleetStatus {
	out := map[string]*status.FleetStatus{}
	for _, f := range r.Plan.Fleets {
		st := &status.FleetStatus{SchemaVersion: status.StatusVersion, Fleet: f.Name, CostMicros: f.NowMicros}
		for _, wl := range f.Workloads {
			running := 0
			for _, pl := range wl.Placements {
				running += pl.Kept
			}
			st.Workloads = append(st.Workloads, status.WorkloadStatus{Name: wl.Name, Desired: wl.Desired, Running: running, Placed: wl.Placements, Shortfall: wl.Shortfall})
		}
		for _, b := range blocks[f.Name] {
			st.Blocklist = append(st.Blocklist, status.BlockedOffer{Offer: b.Offer.String(), Reason: "capacity", Until: b.Until})
		}
		if slices.Contains(r.Suspended, f.Name) {
			st.Conditions = append(st.Conditions, status.Condition{Type: status.Suspended, Status: true, Reason: status.Suspended})
		}
		out[f.Name] = st
	}
	return out
}

// Every place a shortfall is read opens with it: the plan as text and as
// a comment, a run's summary, STATUS.md and a pull request's review, the
// Markdown ones right after the marker the commenter finds its comment by.
func TestEveryRendererOpensWithTheShortfall(t *testing.T) {
	blocks := map[string][]planner.BlockedOffer{"infer": blocked(40, at1405, at1630)}
	plan := func() *planner.Report {
		r := report(infer(), fleet("chat", short("w", 4, 4, "", "")))
		r.Blocklist = blocks
		return r
	}
	want := "Short 4488 of 5004 nodes — infer 4488 (capacity: 40 offers blocklisted until 2026-11-29 14:05–16:30 UTC)"
	tests := []struct {
		name  string
		write func(*bytes.Buffer) error
		want  string
	}{
		{"the plan as text", func(b *bytes.Buffer) error { return PlanText(b, plan()) }, want},
		{"the plan as a comment", func(b *bytes.Buffer) error { return PlanMarkdown(b, plan()) }, "**" + want + "**"},
		{"a run's summary", func(b *bytes.Buffer) error {
			// The run's report comes from the planner alone: the statuses
			// know the blocklist.
			r := plan()
			r.Blocklist = nil
			return RunText(b, Run{Dir: "repo", Revision: "0123456789abcdef", Report: r, Statuses: statusesOf(plan(), blocks), Commits: true})
		}, want},
		{"STATUS.md", func(b *bytes.Buffer) error {
			_, err := b.Write(StatusMarkdown(statusesOf(plan(), blocks), nil, Specs{Commit: "0123456789abcdef0123456789abcdef01234567", Digest: "abc"}))
			return err
		}, "# gpufleet status: s" + want[1:]},
		{"a pull request's review", func(b *bytes.Buffer) error {
			return ReviewMarkdown(b, planner.NewReview(plan(), plan().Plan, nil, nil))
		}, "### " + want},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := tt.write(&b); err != nil {
				t.Fatal(err)
			}
			got := strings.TrimPrefix(b.String(), Marker+"\n")
			if firstLine(got) != tt.want {
				t.Errorf("opens with %q, want %q:\n%s", firstLine(got), tt.want, firstLines(got, 5))
			}
			if n := strings.Count(b.String(), "hort 4488 of"); n != 1 {
				t.Errorf("says the shortfall %d times, want once:\n%s", n, b.String())
			}
			var again bytes.Buffer
			if err := tt.write(&again); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(b.Bytes(), again.Bytes()) {
				t.Error("the same inputs render differently")
			}
		})
	}
}

// A run that re-planned around capacity errors ends short where its first
// plan was not: its summary opens with how it ended, and the plan it
// printed keeps its own headline.
func TestARunSaysTheShortfallItEndedWith(t *testing.T) {
	first := withCreates(report(fleet("infer", short("serve", 8, 8, "", ""))), 8)
	ended := report(fleet("infer", short("serve", 8, 5, planner.CauseCapacity, "the eligible offers have room for 5 of 8 nodes")))
	blocks := map[string][]planner.BlockedOffer{"infer": blocked(1, at1405, at1405)}
	var b bytes.Buffer
	if err := RunText(&b, Run{Dir: "repo", Revision: "0123456789abcdef", Report: first, Statuses: statusesOf(ended, blocks), Rounds: 2}); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"Short 3 of 8 nodes — infer 3 (capacity: 1 offer blocklisted until 2026-11-29 14:05 UTC)",
		"Reconciling repo at 0123456789ab",
		"",
		"Plan: 8 to create, 0 to delete — $8.00/h → $16.00/h (+$8.00/h)",
	}
	if got := strings.Split(b.String(), "\n")[:4]; !slices.Equal(got, want) {
		t.Errorf("the run opens:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A suspended fleet's status says it is short in its section, not in the
// title: nothing is applied to it.
func TestASuspendedFleetIsNotInTheStatusTitle(t *testing.T) {
	r := report(infer())
	r.Suspended = []string{"infer"}
	got := string(StatusMarkdown(statusesOf(r, nil), nil, Specs{Commit: "0123456789abcdef0123456789abcdef01234567", Digest: "abc"}))
	if !strings.HasPrefix(got, "# gpufleet status\n") {
		t.Errorf("STATUS.md starts:\n%s", firstLines(got, 3))
	}
	if !strings.Contains(got, "serve is 4488 nodes short (capacity)") {
		t.Errorf("STATUS.md does not say the fleet is short:\n%s", got)
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], "\n")
}
