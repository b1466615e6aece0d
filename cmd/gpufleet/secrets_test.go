// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/gpufleet/gpufleet/examples"
)

// canary is a credential that must never be seen again.
const canary = "canary-5f3a9c1e"

// credentialEnv is every environment variable gpufleet, or an SDK it
// drives, reads a secret from.
var credentialEnv = []string{
	"GITHUB_TOKEN", "GITLAB_TOKEN", "CI_JOB_TOKEN", "GPUFLEET_NOTIFY_WEBHOOK_SECRET", "GPUFLEET_GIT_TOKEN", "GPUFLEET_GIT_SSH_KEY_PASSPHRASE", "GPUFLEET_WEBHOOK_SECRET", "GPUFLEET_GCP_API_KEY",
	"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
	"AZURE_CLIENT_ID", "AZURE_CLIENT_SECRET", "AZURE_TENANT_ID", "AZURE_CLIENT_CERTIFICATE_PASSWORD",
	// The secrets the example's bootstrap files use.
	"GPUFLEET_SECRET_K8S_JOIN_TOKEN", "GPUFLEET_SECRET_RAY_PASSWORD",
}

// TestCredentialsNeverLeak puts a canary in every credential variable and
// in every configuration field that could hold one, runs what a user and
// CI run — validate, plan, a pull-request plan and comment, reconcile with
// the status commit — with debug logs in JSON, and looks for the canary
// everywhere those leave a trace.
func TestCredentialsNeverLeak(t *testing.T) {
	for _, name := range credentialEnv {
		t.Setenv(name, canary+"-"+strings.ToLower(name))
	}
	dir := t.TempDir()
	adc := filepath.Join(dir, "adc.json")
	if err := os.WriteFile(adc, []byte(`{"type":"service_account","private_key":"`+canary+`-adc"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", adc)
	t.Setenv("GPUFLEET_LOG_FORMAT", "json")
	t.Setenv("GPUFLEET_LOG_LEVEL", "debug")
	t.Setenv("GPUFLEET_NOW", "2026-11-29T12:00:00Z")

	repo := filepath.Join(dir, "repo")
	src, _ := fs.Sub(examples.FleetRepo, "fleet-repo")
	if err := os.CopyFS(repo, src); err != nil {
		t.Fatal(err)
	}
	cfg, _ := os.ReadFile(filepath.Join(repo, "gpufleet.cue"))
	cfg = bytes.Replace(cfg, []byte(`sshPublicKey: "ssh-ed25519 `), []byte(`sshPublicKey: "ssh-ed25519 AAAA`+canary+`-ssh `), 1)
	if !bytes.Contains(cfg, []byte(canary+"-ssh")) {
		t.Fatal("the example's SSH key is not where the test puts the canary")
	}
	// Runs tell a webhook and Slack, whose URLs are secrets too.
	cfg = append(cfg, []byte("\ngpufleet: notifications: {slack: {}, webhook: {}}\n")...)
	if err := os.WriteFile(filepath.Join(repo, "gpufleet.cue"), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	git := gitIn(t, repo)
	git("init", "-q", "-b", "main")
	git("add", ".")
	git("commit", "-q", "-m", "fleets")

	gh := &recordingGitHub{}
	srv := httptest.NewServer(gh)
	defer srv.Close()
	t.Setenv("GITHUB_API_URL", srv.URL+"/")
	t.Setenv("GPUFLEET_SLACK_WEBHOOK_URL", srv.URL+"/slack/"+canary+"-slack-url")
	t.Setenv("GPUFLEET_NOTIFY_WEBHOOK_URL", srv.URL+"/hook/"+canary+"-hook-url")

	var traces bytes.Buffer
	runCLI := func(stdin string, args ...string) {
		t.Helper()
		var stdout, stderr bytes.Buffer
		if stdin != "" {
			f := filepath.Join(dir, "stdin.md")
			os.WriteFile(f, []byte(stdin), 0o644)
			args = append(args, "--file", f)
		}
		code := run(context.Background(), args, &stdout, &stderr)
		traces.WriteString(stdout.String() + stderr.String())
		if code != 0 && code != 2 {
			t.Fatalf("gpufleet %v exited %d: %s", args, code, stderr.String())
		}
	}
	runCLI("", "validate", "--repo", repo, "-o", "json")
	runCLI("", "plan", "--repo", repo, "-o", "text")
	runCLI("", "plan", "--repo", repo, "-o", "json")
	runCLI("", "reconcile", "--repo", repo, "--sim", "--sim-state", filepath.Join(dir, "clouds.json"))
	git("commit", "-q", "--allow-empty", "-m", "a change")
	var md bytes.Buffer
	if code := run(context.Background(), []string{"plan", "--repo", repo, "--base", "HEAD~1", "-o", "markdown"}, &md, &traces); code != 0 {
		t.Fatalf("plan --base exited %d", code)
	}
	traces.Write(md.Bytes())
	runCLI(md.String(), "comment", "github", "--pr", "7", "--repo-slug", "acme/fleets")
	runCLI(md.String(), "comment", "gitlab", "--project", "4242", "--mr", "7", "--api-url", srv.URL+"/api/v4")
	var review bytes.Buffer
	run(context.Background(), []string{"plan", "--repo", repo, "--base", "HEAD~1", "-o", "json"}, &review, &traces)
	reviewFile := filepath.Join(dir, "review.json")
	os.WriteFile(reviewFile, review.Bytes(), 0o644)
	runCLI("", "check", "github", "--repo-slug", "acme/fleets", "--sha", "0123456789abcdef0123456789abcdef01234567", "--review", reviewFile)

	gh.mu.Lock()
	comments, requests := gh.bodies, gh.requests
	gh.mu.Unlock()
	if len(comments) < 2 {
		t.Fatalf("%d comments reached the fake GitHub and GitLab, want one each", len(comments))
	}
	if !strings.Contains(requests, `"kind":"changed"`) {
		t.Fatal("no notification reached the fake webhook")
	}
	var committed bytes.Buffer
	// What gpufleet committed: the user's own commit holds the config.
	cmd := exec.Command("git", "-C", repo, "log", "-p", "--all", "--author=gpufleet")
	cmd.Stdout = &committed
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(committed.String(), "status/STATUS.md") {
		t.Fatal("gpufleet committed no status to check")
	}
	for name, text := range map[string]string{
		"output and logs":  traces.String(),
		"comments":         strings.Join(comments, "\n"),
		"request bodies":   requests,
		"commits":          committed.String(),
		"status directory": readTree(t, filepath.Join(repo, "status")),
	} {
		if strings.Contains(text, canary) {
			i := strings.Index(text, canary)
			t.Errorf("a credential leaked into the %s: …%s…", name, text[max(0, i-120):min(len(text), i+60)])
		}
	}
	if !strings.Contains(traces.String(), `"level":"INFO"`) {
		t.Error("no JSON log line was checked")
	}
	// The bootstrap secrets went where they belong: into the nodes' first
	// boot, which the emulated clouds keep.
	clouds, err := os.ReadFile(filepath.Join(dir, "clouds.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"GPUFLEET_SECRET_K8S_JOIN_TOKEN", "GPUFLEET_SECRET_RAY_PASSWORD"} {
		if !bytes.Contains(clouds, []byte(canary+"-"+strings.ToLower(name))) {
			t.Errorf("%s did not reach the nodes' bootstrap in the clouds", name)
		}
	}
}

func readTree(t *testing.T, dir string) string {
	var b strings.Builder
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			data, _ := os.ReadFile(path)
			b.Write(data)
		}
		return nil
	})
	if b.Len() == 0 {
		t.Fatalf("no status files in %s", dir)
	}
	return b.String()
}

// recordingGitHub accepts plan comments and keeps their bodies.
type recordingGitHub struct {
	mu     sync.Mutex
	bodies []string
	// requests holds every request body, notifications and checks too.
	requests string
}

func (g *recordingGitHub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	defer g.mu.Unlock()
	body, _ := io.ReadAll(r.Body)
	g.requests += string(body) + "\n"
	switch {
	case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/check-runs"):
		w.Write([]byte(`{"total_count": 0, "check_runs": []}`))
	case r.Method == http.MethodGet:
		w.Write([]byte("[]"))
	case r.Method == http.MethodPost:
		var c struct {
			Body string `json:"body"`
		}
		json.Unmarshal(body, &c)
		g.bodies = append(g.bodies, c.Body)
		w.WriteHeader(http.StatusCreated)
		w.Write([]byte(`{"id": 1}`))
	}
}
