// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// fakeChecks is the part of GitHub's API check runs and statuses use,
// keeping what it was sent.
type fakeChecks struct {
	mu       sync.Mutex
	runs     []map[string]any // check runs, by id-1
	statuses []map[string]any
	calls    []string
}

func (f *fakeChecks) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, r.Method+" "+r.URL.Path)
	body, _ := io.ReadAll(r.Body)
	var in map[string]any
	json.Unmarshal(body, &in)
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/check-runs"):
		var runs []map[string]any
		for i, run := range f.runs {
			if run["head_sha"] == strings.Split(r.URL.Path, "/")[5] && run["name"] == r.URL.Query().Get("check_name") {
				runs = append(runs, map[string]any{"id": i + 1, "name": run["name"]})
			}
		}
		json.NewEncoder(w).Encode(map[string]any{"total_count": len(runs), "check_runs": runs})
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/check-runs"):
		f.runs = append(f.runs, in)
		json.NewEncoder(w).Encode(map[string]any{"id": len(f.runs), "name": in["name"]})
	case r.Method == http.MethodPatch && strings.Contains(r.URL.Path, "/check-runs/"):
		var id int
		json.Unmarshal([]byte(r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]), &id)
		sha := f.runs[id-1]["head_sha"]
		f.runs[id-1] = in
		f.runs[id-1]["head_sha"] = sha
		json.NewEncoder(w).Encode(map[string]any{"id": id})
	case r.Method == http.MethodPost && strings.Contains(r.URL.Path, "/statuses/"):
		f.statuses = append(f.statuses, in)
		json.NewEncoder(w).Encode(in)
	default:
		http.NotFound(w, r)
	}
}

// A pull request's plan becomes one check run on its head commit, a
// success for a clean plan and a failure for one whose deletions are
// refused or whose specs do not load; reporting again updates the run.
func TestPlansAsCheckRuns(t *testing.T) {
	dir := t.TempDir()
	repo, git := exampleCheckout(t, dir)
	cli := func(args ...string) (string, int) {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), args, &stdout, &stderr)
		return stdout.String() + stderr.String(), code
	}
	if out, code := cli("reconcile", "--repo", repo, "--sim", "--sim-state", filepath.Join(dir, "clouds.json")); code != 0 {
		t.Fatalf("reconcile: %d %s", code, out)
	}
	review := func(name string) string {
		t.Helper()
		var stdout bytes.Buffer
		run(context.Background(), []string{"plan", "--repo", repo, "--base", "HEAD~1", "-o", "json"}, &stdout, &bytes.Buffer{})
		path := filepath.Join(dir, name+".json")
		os.WriteFile(path, stdout.Bytes(), 0o644)
		return path
	}
	edit := func(file, old, new, msg string) {
		t.Helper()
		path := filepath.Join(repo, file)
		data, _ := os.ReadFile(path)
		if !bytes.Contains(data, []byte(old)) {
			t.Fatalf("%s lacks %q", file, old)
		}
		os.WriteFile(path, bytes.Replace(data, []byte(old), []byte(new), 1), 0o644)
		git("commit", "-q", "-am", msg)
	}
	edit("fleets/inference.cue", "nodes: 6", "nodes: 7", "one more chat node")
	clean := review("clean")
	edit("gpufleet.cue", "disruption: budget: 8", "disruption: {budget: 8, refuseOver: 1}", "a circuit breaker")
	edit("fleets/batch.cue", "nodes: 8", "nodes: 2", "a smaller batch")
	refused := review("refused")
	os.WriteFile(filepath.Join(repo, "fleets", "broken.cue"), []byte("package gpufleet\n\nfleets: x: workloads: w: nodes: -1\n"), 0o644)
	git("add", ".")
	git("commit", "-q", "-m", "broken")
	broken := review("broken")

	gh := &fakeChecks{}
	srv := httptest.NewServer(gh)
	defer srv.Close()
	t.Setenv("GITHUB_TOKEN", "ghs_test")
	check := func(file, sha string, extra ...string) string {
		t.Helper()
		out, code := cli(append([]string{"check", "github", "--repo-slug", "acme/fleets", "--sha", sha, "--review", file, "--github-url", srv.URL}, extra...)...)
		if code != 0 {
			t.Fatalf("check github: exit %d: %s", code, out)
		}
		return out
	}
	for _, tt := range []struct {
		file, sha, want string
	}{{clean, "aaa", "success"}, {refused, "bbb", "failure"}, {broken, "ccc", "failure"}} {
		check(tt.file, tt.sha)
		gh.mu.Lock()
		run := gh.runs[len(gh.runs)-1]
		gh.mu.Unlock()
		if run["conclusion"] != tt.want || run["status"] != "completed" || run["name"] != "gpufleet plan" || run["head_sha"] != tt.sha {
			t.Errorf("%s: check run %v, want conclusion %s", filepath.Base(tt.file), run, tt.want)
		}
		output, _ := run["output"].(map[string]any)
		if summary, _ := output["summary"].(string); !strings.Contains(summary, "gpufleet-plan") {
			t.Errorf("%s: the check's summary is not the plan: %.200q", filepath.Base(tt.file), summary)
		}
	}
	if title := gh.runs[1]["output"].(map[string]any)["title"].(string); !strings.Contains(title, "deletions refused") {
		t.Errorf("the refused plan's title: %q", title)
	}
	if out := check(clean, "aaa"); !strings.Contains(out, "updated") || len(gh.runs) != 3 {
		t.Errorf("a second report on a commit made another run: %s (%d runs)", out, len(gh.runs))
	}
	check(refused, "bbb", "--commit-status")
	if len(gh.statuses) != 1 || gh.statuses[0]["state"] != "failure" || gh.statuses[0]["context"] != "gpufleet plan" {
		t.Errorf("commit status %v", gh.statuses)
	}
	if out, code := cli("check", "github", "--repo-slug", "acme/fleets", "--sha", "aaa", "--review", filepath.Join(dir, "clouds.json"), "--github-url", srv.URL); code == 0 || !strings.Contains(out, "is not a pull request's plan") {
		t.Errorf("a file that is not a review: exit %d, %s", code, out)
	}
}
