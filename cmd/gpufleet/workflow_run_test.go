// SPDX-License-Identifier: Apache-2.0

package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/gpufleet/gpufleet/schema"
)

// The example workflows run as GitHub Actions would run them, their own
// commands in order: the plan workflow, with the composite action
// installing the released gpufleet v0.1.0 with install.sh, on a pull
// request that changes only a comment in a fleet whose base has the status
// of a reconcile against the emulator; then, once it is merged, the apply
// workflow, which finds the plan run with gh, downloads its saved plan,
// applies it — nothing, as the pull request changed nothing — and pushes
// the status to the origin. The action given a release that does not
// exist fails, naming it.
func TestExampleWorkflowsPlanAndApplyAPullRequest(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary and runs two workflows against real processes; run without -short")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash to run the workflows' steps with")
	}
	for _, tool := range []string{"curl", "tar", "sha256sum", "git"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s, which install.sh or the workflows need", tool)
		}
	}
	dir := t.TempDir()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	const release = "v0.1.0"
	bin := compileGpufleet(t, "-buildvcs=false", "-ldflags", "-X main.version="+release)
	releases := publishRelease(t, filepath.Join(dir, "releases"), release, bin)

	fleet := newPullRequestFleet(t, dir, bin)
	api := startFakeGitHub(t)

	r := newActionsRunner(t, filepath.Join(dir, "actions"))
	r.origin, r.slug, r.apiURL, r.token = fleet.origin, "acme/fleets", api.url, "ghs_0123456789WorkflowToken"
	api.comments.token = r.token
	r.localActions["gpufleet/gpufleet/examples/github-action"] = filepath.Join(root, "examples", "github-action")
	r.secrets = map[string]string{}
	for _, name := range []string{"K8S_JOIN_TOKEN", "RAY_PASSWORD"} {
		r.secrets[name] = os.Getenv(schema.SecretEnvPrefix + name)
	}
	r.runnerEnv = []string{"GPUFLEET_RELEASES=file://" + releases}
	writeFakeGh(t, r)

	planFile := filepath.Join(root, "examples", "workflows", "gpufleet-plan.yml")
	applyFile := filepath.Join(root, "examples", "workflows", "gpufleet-apply.yml")
	opened := pullRequestEvent{action: "synchronize", number: 7, baseRef: "main", baseSHA: fleet.baseSHA,
		headRef: "tidy-comment", headSHA: fleet.headSHA, changed: []string{"fleets/inference.cue"}}

	plan := r.run(loadWorkflow(t, planFile), planFile, opened)
	if plan.conclusion != "success" || slices.ContainsFunc(plan.steps, notSuccess) {
		t.Fatalf("the plan workflow: %s, steps %q\n%s", plan.conclusion, plan.steps, plan.log)
	}
	if !strings.Contains(plan.log, "gpufleet "+release+" (") {
		t.Errorf("install.sh did not install the release %s:\n%s", release, plan.log)
	}
	comment := api.comment(t, "acme/fleets#7")
	if !strings.Contains(comment, "<!-- gpufleet-plan -->") || !strings.Contains(comment, "### Plan: 0 to create, 0 to delete") {
		t.Errorf("the plan comment on acme/fleets#7 is not a plan of no changes:\n%s", comment)
	}
	if run := api.checkRun(t, fleet.headSHA); run["name"] != "gpufleet plan" || run["conclusion"] != "success" || run["status"] != "completed" {
		t.Errorf("the check run on %s: %v", fleet.headSHA, run)
	}
	saved := filepath.Join(r.dir, "artifacts", fmt.Sprint(plan.runID), "gpufleet-plan", "gpufleet-plan.json")
	if _, err := os.Stat(saved); err != nil {
		t.Fatalf("the plan workflow saved no plan for apply: %v", err)
	}

	// The pull request is merged: the apply workflow runs on main, against
	// the emulated clouds the base's status describes.
	fleet.merge(t)
	sim := startSimProcess(t, bin, "--state", fleet.state)
	r.runnerEnv = append(r.runnerEnv, sim.env...)
	closed := opened
	closed.action, closed.merged = "closed", true
	apply := r.run(loadWorkflow(t, applyFile), applyFile, closed)
	if apply.conclusion != "success" || slices.ContainsFunc(apply.steps, notSuccess) {
		t.Fatalf("the apply workflow: %s, steps %q\n%s", apply.conclusion, apply.steps, apply.log)
	}
	t.Logf("the plan workflow's steps: %q", plan.steps)
	t.Logf("the apply workflow's steps: %q", apply.steps)
	if got := apply.outputs["find"]["run-id"]; got != fmt.Sprint(plan.runID) {
		t.Errorf("the apply workflow found the plan run %q, want %d", got, plan.runID)
	}
	if !strings.Contains(apply.log, "Actions: 0 to create, 0 to delete") || !strings.Contains(apply.log, "Nothing to apply") {
		t.Errorf("the apply of a pull request that changes nothing did something:\n%s", apply.log)
	}
	if pushed, local := gitOutput(t, fleet.origin, "rev-parse", "main"), gitOutput(t, apply.workspace, "rev-parse", "HEAD"); pushed != local {
		t.Errorf("the origin's main is %s after the push, the checkout's HEAD %s\n%s", pushed, local, apply.log)
	}

	t.Run("a version that is not released", func(t *testing.T) {
		defer func(outer *testing.T) { r.t = outer }(r.t)
		r.t = t
		wf := loadWorkflow(t, planFile)
		for _, jb := range wf.Jobs {
			for i, s := range jb.Steps {
				if strings.HasPrefix(s.Uses, "gpufleet/gpufleet/examples/github-action@") {
					jb.Steps[i].With = map[string]string{"version": "v9.9.9"}
				}
			}
		}
		res := r.run(wf, planFile, opened)
		if res.conclusion != "failure" || !slices.Contains(res.steps, "Install gpufleet: failure") {
			t.Fatalf("the plan workflow with version v9.9.9: %s, steps %q\n%s", res.conclusion, res.steps, res.log)
		}
		if !strings.Contains(res.log, "gpufleet v9.9.9 does not exist") {
			t.Errorf("the failure does not name v9.9.9:\n%s", res.log)
		}
	})
}

func notSuccess(step string) bool { return !strings.HasSuffix(step, ": success") }

// publishRelease lays out release version of bin as GoReleaser publishes
// it, the archive for this machine, checksums.txt and install.sh, under dir/VERSION,
// and returns dir.
func publishRelease(t *testing.T, dir, version, bin string) string {
	t.Helper()
	exe, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	var archive bytes.Buffer
	zw := gzip.NewWriter(&archive)
	tw := tar.NewWriter(zw)
	for _, f := range []struct {
		name string
		mode int64
		data []byte
	}{{"gpufleet", 0o755, exe}, {"LICENSE", 0o644, []byte("Apache-2.0\n")}} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.data)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(f.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("gpufleet_%s_%s_%s.tar.gz", strings.TrimPrefix(version, "v"), runtime.GOOS, runtime.GOARCH)
	// The installer goes with the release, as .goreleaser.yaml publishes it.
	installer, err := os.ReadFile("../../examples/github-action/install.sh")
	if err != nil {
		t.Fatal(err)
	}
	sums := fmt.Sprintf("%x  %s\n%x  gpufleet_%s_windows_arm64.zip\n%x  install.sh\n", sha256.Sum256(archive.Bytes()), name, sha256.Sum256([]byte("other")), strings.TrimPrefix(version, "v"), sha256.Sum256(installer))
	at := filepath.Join(dir, version)
	if err := os.MkdirAll(at, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(at, "install.sh"), installer, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(at, name), archive.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(at, "checksums.txt"), []byte(sums), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// writeFakeGh puts a gh on the runner that answers the one question the
// apply workflow asks: the id of a workflow's last successful run of a
// commit, from the runs the harness finished.
func writeFakeGh(t *testing.T, r *actionsRunner) {
	t.Helper()
	script := `#!/usr/bin/env bash
# gh run list, as far as the apply workflow uses it.
set -euo pipefail
[ -n "${GH_TOKEN:-}" ] || { echo "gh: GH_TOKEN is not set" >&2; exit 4; }
if [ $# -ne 14 ] || [ "$1 $2 $3" != "run list --workflow" ] || [ "$5" != --commit ] ||
	[ "${*:7}" != "--status success --limit 1 --json databaseId --jq .[0].databaseId" ]; then
	echo "gh: the harness's gh does not know: gh $*" >&2
	exit 1
fi
awk -v w="$4" -v sha="$6" '$1 == w && $2 == sha && $3 == "success" { id = $4 } END { if (id != "") print id }' "` + r.runs + `"
`
	if err := os.WriteFile(filepath.Join(r.fakeBin, "gh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
}

// pullRequestFleet is the example fleet repository at its origin, a bare
// repository: main has the status of a reconcile against the emulator,
// and the pull request #7 (tidy-comment) edits only a comment.
type pullRequestFleet struct {
	repo, origin, state string
	baseSHA, headSHA    string
	git                 func(args ...string)
}

func newPullRequestFleet(t *testing.T, dir, bin string) *pullRequestFleet {
	t.Helper()
	repo, git := exampleCheckout(t, dir)
	f := &pullRequestFleet{repo: repo, git: git, origin: filepath.Join(dir, "origin.git"), state: filepath.Join(dir, "clouds.json")}
	cwd := filepath.Join(dir, "cwd")
	if err := os.Mkdir(cwd, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "reconcile", "--repo", repo, "--sim", "--sim-state", f.state)
	cmd.Dir = cwd
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, schema.SecretEnvPrefix) {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the base's reconcile: %v\n%s", err, out)
	}
	f.baseSHA = gitOutput(t, repo, "rev-parse", "HEAD")
	if gitOutput(t, repo, "rev-list", "--count", "HEAD") == "1" {
		t.Fatalf("the reconcile committed no status")
	}
	git("init", "-q", "--bare", f.origin)
	git("remote", "add", "origin", f.origin)
	git("push", "-q", "origin", "main")

	git("checkout", "-q", "-b", "tidy-comment")
	path := filepath.Join(repo, "fleets", "inference.cue")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const old = "// Each node joins the serving cluster at first boot."
	if !bytes.Contains(data, []byte(old)) {
		t.Fatalf("fleets/inference.cue lacks %q", old)
	}
	if err := os.WriteFile(path, bytes.Replace(data, []byte(old), []byte("// Each node joins the serving cluster when it first boots."), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	git("commit", "-q", "-am", "Reword a comment")
	f.headSHA = gitOutput(t, repo, "rev-parse", "HEAD")
	git("push", "-q", "origin", "tidy-comment")
	// GitHub's test merge of the pull request, which actions/checkout
	// checks out.
	git("checkout", "-q", "--detach", "main")
	git("merge", "-q", "--no-ff", "-m", "Merge "+f.headSHA+" into main", "tidy-comment")
	git("push", "-q", "origin", "HEAD:refs/pull/7/merge")
	git("checkout", "-q", "main")
	return f
}

// merge merges the pull request on main at the origin.
func (f *pullRequestFleet) merge(t *testing.T) {
	t.Helper()
	f.git("merge", "-q", "--no-ff", "-m", "Merge pull request #7 from acme/tidy-comment", "tidy-comment")
	f.git("push", "-q", "origin", "main")
}

func gitOutput(t *testing.T, repo string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).Output()
	if err != nil {
		t.Fatalf("git %v in %s: %v", args, repo, err)
	}
	return strings.TrimSpace(string(out))
}

// fakeGitHubAPI is the fake GitHub the workflows' gpufleet comment github
// and check github talk to: the comments of the script tests' ghfake and
// the check runs of fakeChecks, both behind the token.
type fakeGitHubAPI struct {
	url      string
	comments *fakeGitHub
	checks   *fakeChecks
}

func startFakeGitHub(t *testing.T) *fakeGitHubAPI {
	t.Helper()
	f := &fakeGitHubAPI{comments: &fakeGitHub{nextID: 1000}, checks: &fakeChecks{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "/check-runs") || strings.Contains(r.URL.Path, "/statuses/") {
			f.comments.mu.Lock()
			token := f.comments.token
			f.comments.mu.Unlock()
			if r.Header.Get("Authorization") != "Bearer "+token {
				w.WriteHeader(http.StatusUnauthorized)
				json.NewEncoder(w).Encode(map[string]string{"message": "Bad credentials"})
				return
			}
			f.checks.ServeHTTP(w, r)
			return
		}
		f.comments.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	f.url = srv.URL
	return f
}

// comment is the one comment on issue (owner/name#number).
func (f *fakeGitHubAPI) comment(t *testing.T, issue string) string {
	t.Helper()
	f.comments.mu.Lock()
	defer f.comments.mu.Unlock()
	var bodies []string
	for _, c := range f.comments.comments {
		if c.Issue == issue {
			bodies = append(bodies, c.Body)
		}
	}
	if len(bodies) != 1 {
		t.Fatalf("%s has %d comments, want 1; requests %q", issue, len(bodies), f.comments.requests)
	}
	return bodies[0]
}

// checkRun is the one check run on sha.
func (f *fakeGitHubAPI) checkRun(t *testing.T, sha string) map[string]any {
	t.Helper()
	f.checks.mu.Lock()
	defer f.checks.mu.Unlock()
	var on []map[string]any
	for _, run := range f.checks.runs {
		if run["head_sha"] == sha {
			on = append(on, run)
		}
	}
	if len(on) != 1 {
		t.Fatalf("%s has %d check runs, want 1; calls %q", sha, len(on), f.checks.calls)
	}
	return on[0]
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
