// SPDX-License-Identifier: Apache-2.0

package render

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/reconcile/status"
)

// A fleet of 10,000 nodes, launched in one run with a tenth of the
// launches failing, each with its own error, still has a STATUS.md a
// person can read and Git can keep: under 50 KB, each list cut with a
// count of what is left out.
func TestStatusOfTenThousandNodesStaysSmall(t *testing.T) {
	st := &status.FleetStatus{Fleet: "huge", CostMicros: 1, Conditions: []status.Condition{{Type: status.Ready, Status: true, Reason: "Converged"}}}
	node := 0
	for w := range 40 {
		ws := status.WorkloadStatus{Name: fmt.Sprintf("w%02d", w), Desired: 250}
		for i := range 250 {
			offer := fmt.Sprintf("aws/us-east-1/us-east-1a/type%02d/spot", (w+i)%30)
			ws.Instances = append(ws.Instances, status.InstanceStatus{ID: fmt.Sprintf("i-%017x", node), Offer: offer, State: planner.StateRunning})
			ws.Running++
			action := status.ActionResult{Kind: planner.Create, Workload: ws.Name, Offer: offer, Instance: fmt.Sprintf("i-%017x", node)}
			if node%10 == 0 {
				action.Error = fmt.Sprintf("InsufficientInstanceCapacity: request %d could not be fulfilled", node)
			}
			st.LastActions = append(st.LastActions, action)
			node++
		}
		st.Workloads = append(st.Workloads, ws)
	}
	for i := range 300 {
		st.Errors = append(st.Errors, fmt.Sprintf("listing instances in region %d, throttled", i))
		st.Blocklist = append(st.Blocklist, status.BlockedOffer{Offer: fmt.Sprintf("gcp/r%d/z/t/spot", i), Reason: "ran out", Until: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)})
	}

	md := string(StatusMarkdown(map[string]*status.FleetStatus{"huge": st}, nil, Specs{Commit: strings.Repeat("a", 40), Digest: "d"}))
	if len(md) >= 50<<10 {
		t.Errorf("STATUS.md of 10,000 nodes is %d bytes, want under 50 KB", len(md))
	}
	for _, want := range []string{
		"| huge | yes | 10000 / 10000 |",
		"for the specs of commit `aaaaaaaaaaaa` (spec digest `d`)",
		"- … and 290 more in `huge.json`", // errors and blocklist
		"- … and 990 more in `huge.json`", // failures
		"more on 26 other offers",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("STATUS.md lacks %q", want)
		}
	}
	t.Logf("STATUS.md of 10,000 nodes: %d bytes", len(md))
}

// A small fleet's STATUS.md leaves nothing out.
func TestStatusOfASmallFleetListsEverything(t *testing.T) {
	st := &status.FleetStatus{Fleet: "small"}
	ws := status.WorkloadStatus{Name: "w", Desired: 3}
	for i := range 3 {
		offer := fmt.Sprintf("aws/us-east-1/us-east-1a/type%d/spot", i)
		ws.Instances = append(ws.Instances, status.InstanceStatus{ID: fmt.Sprint(i), Offer: offer, State: planner.StateRunning})
		st.LastActions = append(st.LastActions, status.ActionResult{Kind: planner.Create, Workload: "w", Offer: offer, Error: fmt.Sprintf("failure %d", i)})
	}
	st.Workloads = []status.WorkloadStatus{ws}
	md := string(StatusMarkdown(map[string]*status.FleetStatus{"small": st}, nil, Specs{}))
	if strings.Contains(md, "more") {
		t.Errorf("a small fleet's STATUS.md leaves something out:\n%s", md)
	}
	for i := range 3 {
		if !strings.Contains(md, fmt.Sprintf("failure %d", i)) || !strings.Contains(md, fmt.Sprintf("1 × `aws/us-east-1/us-east-1a/type%d/spot`", i)) {
			t.Errorf("STATUS.md lacks node or failure %d:\n%s", i, md)
		}
	}
}
