// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gpufleet/gpufleet/reconcile/status"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// A running fleet costs one amount now, wherever it is shown: STATUS.md,
// the status files, plan (text and JSON) and a pull request's plan against
// the commit that runs.
func TestOneNowCostEverywhere(t *testing.T) {
	f := newRunFixture(t)
	if code, stdout, stderr := f.reconcile(t); code != exitConverged {
		t.Fatalf("reconcile: exit %d\n%s\n%s", code, stdout, stderr)
	}
	work := filepath.Join(f.dir, "work")
	run := func(args ...string) string {
		t.Helper()
		var stdout, stderr bytes.Buffer
		if code := Main(args, &stdout, &stderr); code != 0 {
			t.Fatalf("gpufleet %s: exit %d\n%s", strings.Join(args, " "), code, stderr.String())
		}
		return stdout.String()
	}

	var fromFiles int64
	entries, err := os.ReadDir(filepath.Join(work, "status"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".json") || e.Name() == status.StateFile {
			continue
		}
		data, err := os.ReadFile(filepath.Join(work, "status", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		var st status.FleetStatus
		if err := json.Unmarshal(data, &st); err != nil {
			t.Fatal(err)
		}
		fromFiles += st.CostMicros
	}
	now := catalog.Money(fromFiles)
	summary, err := os.ReadFile(filepath.Join(work, "status", status.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(summary), "**"+now+"/h** for 3 fleets") {
		t.Errorf("STATUS.md does not say %s/h:\n%s", now, firstLines(string(summary), 4))
	}

	// A change to the specs, not committed: the plan shows what runs now
	// and what it would cost after.
	spec := filepath.Join(work, "fleets", "inference.cue")
	data, _ := os.ReadFile(spec)
	if err := os.WriteFile(spec, bytes.Replace(data, []byte("nodes: 6"), []byte("nodes: 5"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	text := run("plan", "--repo", work)
	if m := regexp.MustCompile(`— (\$[0-9.]+)/h → `).FindStringSubmatch(text); m == nil || m[1] != now {
		t.Errorf("plan says now is %v, the status files %s:\n%s", m, now, firstLines(text, 2))
	}
	var report struct{ CurrentMicros int64 }
	if err := json.Unmarshal([]byte(run("plan", "--repo", work, "-o", "json")), &report); err != nil {
		t.Fatal(err)
	}
	if report.CurrentMicros != fromFiles {
		t.Errorf("plan -o json says now is %d µ$, the status files %d", report.CurrentMicros, fromFiles)
	}
	var review struct{ BeforeMicros int64 }
	if err := json.Unmarshal([]byte(run("plan", "--repo", work, "--base", "HEAD", "-o", "json")), &review); err != nil {
		t.Fatal(err)
	}
	if review.BeforeMicros != fromFiles {
		t.Errorf("plan --base HEAD says before is %d µ$, the status files %d", review.BeforeMicros, fromFiles)
	}
	md := run("plan", "--repo", work, "--base", "HEAD")
	if !strings.Contains(md, "— "+now+"/h → ") {
		t.Errorf("the pull-request plan does not start from %s/h:\n%s", now, firstLines(md, 3))
	}
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], "\n")
}
