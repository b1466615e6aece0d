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
func examplePlan(t *testing.T) *planner.Report {
	t.Helper()
	repo, err := schema.Load(filepath.Join("..", "..", "examples", "fleet-repo"))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := planner.Solve(planner.NewInput(repo, catalog.Default()))
	if err != nil {
		t.Fatal(err)
	}
	return planner.NewReport(plan, planner.Diff(plan, nil, planner.DiffOptions{Revision: planner.SpecRevisions(repo.Fleets), MaxDeletions: 8}))
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
