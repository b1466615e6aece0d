// SPDX-License-Identifier: Apache-2.0

package render

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/schema"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

var updateGolden = os.Getenv("GPUFLEET_UPDATE_GOLDEN") != ""

// examplePlan plans the example repository from nothing, as the planner's
// golden JSON does.
func examplePlan(t testing.TB) *planner.Report {
	t.Helper()
	repo, err := schema.Load(filepath.Join("..", "..", "examples", "fleet-repo"))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := planner.Solve(planner.NewInput(repo, catalog.Default()))
	if err != nil {
		t.Fatal(err)
	}
	return planner.NewReport(plan, planner.Diff(plan, nil, planner.DiffOptions{Revision: planner.SpecRevisions(repo.Fleets)}))
}

func TestGoldenTextAndMarkdown(t *testing.T) {
	report := examplePlan(t)
	var text, md bytes.Buffer
	if err := PlanText(&text, report); err != nil {
		t.Fatal(err)
	}
	if err := PlanMarkdown(&md, report); err != nil {
		t.Fatal(err)
	}
	for name, got := range map[string][]byte{"fleet-repo.txt": text.Bytes(), "fleet-repo.md": md.Bytes()} {
		golden := filepath.Join("..", "..", "testdata", "plans", name)
		if updateGolden {
			if err := os.WriteFile(golden, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from the golden file; if the change is intended, rerun with GPUFLEET_UPDATE_GOLDEN=1\ngot:\n%s", name, got)
		}
	}
}

// A full quota is said in the text and the Markdown with the raise to ask
// for; one with room is not.
func TestAFullQuotaIsRenderedWithItsRaise(t *testing.T) {
	report := examplePlan(t)
	report.Plan.Quotas = []planner.QuotaReport{
		{Quota: planner.Quota{Cloud: "aws", Region: "us-east-1", Name: "L-417A185B", Description: "Running On-Demand P instances", Unit: catalog.VCPUs, Limit: 384, Used: planner.UsedUnknown},
			Planned: 384, Full: true, Raise: &planner.QuotaRaise{To: 768, ExtraNodes: 2, SavingMicros: 12_500_000, Workloads: []string{"ml/train"}}},
		{Quota: planner.Quota{Cloud: "gcp", Name: "GPUS_ALL_REGIONS", Unit: catalog.GPUs, Limit: 64, Used: 8}, Planned: 8},
	}
	want := "L-417A185B (Running On-Demand P instances) in us-east-1 is full: the plan uses 384 of its 384 vCPUs. Raising it to 768 vCPUs would place 2 more nodes and save $12.50/h (ml/train)."
	for name, write := range map[string]func(*bytes.Buffer) error{
		"text":     func(b *bytes.Buffer) error { return PlanText(b, report) },
		"markdown": func(b *bytes.Buffer) error { return PlanMarkdown(b, report) },
	} {
		var b bytes.Buffer
		if err := write(&b); err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(b.Bytes(), []byte(want)) {
			t.Errorf("%s lacks %q:\n%s", name, want, b.String())
		}
		if bytes.Contains(b.Bytes(), []byte("GPUS_ALL_REGIONS")) {
			t.Errorf("%s names a quota with room", name)
		}
	}
}
