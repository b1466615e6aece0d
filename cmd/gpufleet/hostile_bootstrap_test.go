// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// hostileSecret is the bootstrap secret every hostile template reaches for:
// quotes, markup, a backslash and a second line, so that each form it can
// take in JSON or Go's quoting is looked for too.
const hostileSecret = "hostile-Vq7\"<tok>&\\n-9Xw\nsecond-line-Kp4e"

// processDeadline bounds every gpufleet process of the sweep: far beyond
// what any of them takes, so reaching it can only mean a hang.
const processDeadline = 90 * time.Second

// hostileTemplates are bootstrap files that try to leak the secret, to run
// without end, to grow without bound, or to read what is not theirs.
// valid marks those the language takes; converges, for those, whether the
// run reaches what the specs ask.
var hostileTemplates = []struct {
	name string
	src  string
	// setup changes the repository before its commit; after, when a file
	// Git cannot hold is needed.
	setup       func(t *testing.T, repo string)
	afterCommit bool
	valid       bool
	converges   bool
	// refused: the run refuses to launch, before any call, and exits 1.
	refused bool
}{
	{name: "range over a secret", src: `{{range secret "K"}}{{end}}`},
	{name: "a secret of a secret", src: `{{secret (secret "K")}}`},
	{name: "printf of a secret", src: `{{printf "%s" (secret "K")}}`},
	{name: "a secret piped to printf", src: `{{secret "K" | printf "%q"}}`},
	{name: "a secret compared", src: `{{if eq (secret "K") "x"}}y{{end}}`},
	{name: "a secret as a test", src: `{{if secret "K"}}y{{end}}`},
	{name: "a secret named by a field", src: `{{secret .Zone}}`},
	{name: "with a secret", src: `{{with secret "K"}}{{.}}{{end}}`},
	{name: "a secret in a variable", src: `{{$x := secret "K"}}{{$x}}`},
	{name: "len of a secret", src: `{{len (secret "K")}}`},
	{name: "index of a secret", src: `{{index (secret "K") 0}}`},
	{name: "slice of a secret", src: `{{slice (secret "K") 1}}`},
	{name: "html of a secret", src: `{{html (secret "K")}}`},
	{name: "js of a secret", src: `{{js (secret "K")}}`},
	{name: "urlquery of a secret", src: `{{urlquery (secret "K")}}`},
	{name: "a secret in a block", src: `{{block "b" .}}{{secret "K"}}{{end}}`},
	{name: "a huge range", src: `{{range 1000000000}}x{{end}}`},
	{name: "a huge silent range", src: `{{range 1000000000}}{{end}}`},
	{name: "a range over the data", src: `{{range $i, $e := .}}{{$e}}{{end}}`},
	{name: "recursion", src: `{{define "a"}}{{template "a"}}{{end}}{{template "a"}}`},
	{name: "exponential templates", src: `{{define "a"}}{{template "b"}}{{template "b"}}{{end}}{{define "b"}}{{template "c"}}{{template "c"}}{{end}}{{define "c"}}xxxxxxxxxxxxxxxx{{end}}{{template "a"}}`},
	{name: "a huge printf", src: `{{printf "%0999999999d" 1}}`},
	{name: "call", src: `{{call .Zone}}`},
	{name: "a field of a field", src: `{{.Zone.Name}}`},
	{name: "an undefined template", src: `{{template "nothere"}}`},
	{name: "an undeclared secret", src: `{{secret "UNDECLARED"}}`},
	{name: "not UTF-8 around a secret", src: "\xff\xfe{{secret \"K\"}}"},
	{name: "not UTF-8 in a constant", src: "{{\"\xc3\x28\"}}"},
	{name: "unterminated", src: `{{secret "K"`},
	{name: "break outside a range", src: `{{break}}`},
	{name: "over EC2's user data", src: strings.Repeat("echo padding the user data past its limit\n", 400)},
	{name: "secrets that render past EC2's limit", src: strings.Repeat(`{{secret "K"}}`, 400)},
	{name: "a symlink to the clone's config", setup: func(t *testing.T, repo string) {
		os.Remove(filepath.Join(repo, "bootstrap", "b.sh"))
		if err := os.Symlink("../.git/config", filepath.Join(repo, "bootstrap", "b.sh")); err != nil {
			t.Fatal(err)
		}
	}},
	{name: "a named pipe", setup: func(t *testing.T, repo string) {
		os.Remove(filepath.Join(repo, "bootstrap", "b.sh"))
		if err := syscall.Mkfifo(filepath.Join(repo, "bootstrap", "b.sh"), 0o644); err != nil {
			t.Skip("no named pipes here:", err)
		}
	}, afterCommit: true},
	{name: "a directory", setup: func(t *testing.T, repo string) {
		os.Remove(filepath.Join(repo, "bootstrap", "b.sh"))
		if err := os.MkdirAll(filepath.Join(repo, "bootstrap", "b.sh", "x"), 0o755); err != nil {
			t.Fatal(err)
		}
	}, afterCommit: true},
	// Templates the language takes: their secret reaches the node and
	// nowhere else.
	{name: "the secret standing alone", src: "#!/bin/sh\nTOKEN='{{secret \"K\"}}'\n", valid: true, converges: true},
	{name: "the secret in both branches", src: `{{if .Token}}{{secret "K"}}{{else}}{{secret "K"}}{{end}}`, valid: true, converges: true},
	{name: "the secret in a comment", src: `{{/* {{secret "K"}} */}}echo`, valid: true, converges: true},
	{name: "a secret too short to mask", src: `{{secret "SHORT"}}`, valid: true, refused: true},
}

// TestHostileBootstrapsLeakNothing runs every hostile template through
// validate, plan and reconcile — real processes against the embedded
// emulator, with notifications to a loopback receiver — and looks for the
// secret everywhere they leave a trace: their output, every Git object of
// the repository, the status files and every notification. Each process
// must end before its deadline, and each run must leave the repository
// lock free.
func TestHostileBootstrapsLeakNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a reconcile per hostile bootstrap; run without -short")
	}
	t.Parallel()
	bin := buildGpufleet(t)
	var mu sync.Mutex
	var received bytes.Buffer
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		received.WriteString(r.URL.String() + "\n" + string(body) + "\n")
		mu.Unlock()
	}))
	defer receiver.Close()
	short := "Zq7#xK1"
	env := append(os.Environ(),
		"GPUFLEET_SECRET_K="+hostileSecret,
		"GPUFLEET_SECRET_SHORT="+short,
		"GPUFLEET_NOTIFY_WEBHOOK_URL="+receiver.URL+"/hook",
		"GPUFLEET_NOTIFY_WEBHOOK_SECRET=hook-signing-key-canary",
		"GPUFLEET_SLACK_WEBHOOK_URL="+receiver.URL+"/slack",
		"GPUFLEET_LOG_LEVEL=debug",
	)
	leaks := secretForms(hostileSecret)
	leaks = append(leaks, short, "hook-signing-key-canary", "ghp_gitconfig_canary")
	notified := 0
	for _, tt := range hostileTemplates {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			var before, after func(*testing.T, string)
			if tt.afterCommit {
				after = tt.setup
			} else {
				before = tt.setup
			}
			repo := hostileRepo(t, dir, tt.src, before)
			if after != nil {
				after(t, repo)
			}
			var traces bytes.Buffer
			gpufleet := func(args ...string) int {
				t.Helper()
				ctx, cancel := context.WithTimeout(context.Background(), processDeadline)
				defer cancel()
				cmd := exec.CommandContext(ctx, bin, args...)
				cmd.Env, cmd.Dir = env, dir
				cmd.Stdout, cmd.Stderr = &traces, &traces
				err := cmd.Run()
				if ctx.Err() != nil {
					t.Fatalf("gpufleet %s hung: killed after %s", args[0], processDeadline)
				}
				var exit *exec.ExitError
				switch {
				case err == nil:
					return 0
				case errors.As(err, &exit):
					return exit.ExitCode()
				}
				t.Fatalf("gpufleet %s: %v", args[0], err)
				return -1
			}
			state := filepath.Join(dir, "clouds.json")
			validate, plan := gpufleet("validate", "--repo", repo), gpufleet("plan", "--repo", repo)
			reconcile := gpufleet("reconcile", "--repo", repo, "--sim", "--sim-state", state)
			switch {
			case !tt.valid && (validate != 1 || plan != 1 || reconcile != 1):
				t.Errorf("validate, plan and reconcile exited %d, %d, %d; want 1 each:\n%s", validate, plan, reconcile, traces.String())
			case tt.valid && (validate != 0 || plan != 0):
				t.Errorf("validate and plan exited %d, %d; want 0:\n%s", validate, plan, traces.String())
			case tt.valid && tt.converges && reconcile != 0:
				t.Errorf("reconcile exited %d, want 0:\n%s", reconcile, traces.String())
			case tt.valid && tt.refused && reconcile != 1:
				t.Errorf("reconcile exited %d, want 1 (refused to launch):\n%s", reconcile, traces.String())
			case tt.valid && !tt.converges && !tt.refused && reconcile != 2:
				t.Errorf("reconcile exited %d, want 2 (not converged):\n%s", reconcile, traces.String())
			}
			objects := gitObjects(t, repo)
			statusFiles := statusText(t, repo)
			if tt.valid && statusFiles == "" {
				t.Errorf("no status was written to look in")
			}
			// A released lock is a commit that says so; a run that never
			// took it leaves no ref.
			if out, err := exec.Command("git", "-C", repo, "log", "-1", "--format=%B", "refs/gpufleet/lock", "--").Output(); err == nil && !strings.Contains(string(out), "released-by:") {
				t.Errorf("the run left the lock held: %s", out)
			}
			mu.Lock()
			messages := received.String()
			mu.Unlock()
			for where, text := range map[string]string{
				"output and logs": traces.String(),
				"Git objects":     objects,
				"status files":    statusFiles,
				"notifications":   messages,
			} {
				for _, leak := range leaks {
					if i := strings.Index(text, leak); i >= 0 {
						t.Errorf("%q leaked into the %s: …%s…", leak, where, text[max(0, i-100):min(len(text), i+len(leak)+40)])
					}
				}
			}
			if tt.valid && tt.converges && !strings.Contains(tt.src, "/*") {
				if data := userData(t, state); !strings.Contains(data, hostileSecret) {
					t.Errorf("the secret did not reach the node: its user data is %q", data)
				}
			}
		})
	}
	mu.Lock()
	notified = strings.Count(received.String(), "/hook")
	mu.Unlock()
	if notified == 0 {
		t.Error("no notification was sent to look in")
	}
}

// hostileRepo is a repository of one small AWS workload whose nodes boot
// with bootstrap/b.sh = src, notifications on, committed, with a clone's
// config that holds a credential.
func hostileRepo(t *testing.T, dir, src string, setup func(*testing.T, string)) string {
	t.Helper()
	repo := filepath.Join(dir, "repo")
	files := map[string]string{
		"gpufleet.cue":   "package gpufleet\n\ngpufleet: {\n\tclouds: aws: regions: [\"us-east-1\"]\n\tnotifications: {slack: {}, webhook: {}}\n}\n",
		"fleets/f.cue":   "package gpufleet\n\nfleets: f: {\n\towner: \"me\"\n\tworkloads: w: {\n\t\tgpu: {model: \"T4\", perNode: 1}\n\t\tnodes: 1\n\t\tbootstrap: {file: \"bootstrap/b.sh\", format: \"script\", secrets: [\"K\", \"SHORT\"]}\n\t}\n}\n",
		"bootstrap/b.sh": src,
	}
	for name, data := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(repo, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(repo, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git := gitIn(t, repo)
	git("init", "-q", "-b", "main")
	if setup != nil {
		setup(t, repo)
	}
	git("config", "remote.origin.url", "https://x-access-token:ghp_gitconfig_canary@github.com/acme/fleets")
	git("add", ".")
	git("commit", "-q", "-m", "fleets")
	return repo
}

// userData is the user data of the emulated EC2's instances, decoded.
func userData(t *testing.T, state string) string {
	t.Helper()
	data, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	var world struct {
		Instances []struct {
			Cloud      string            `json:"cloud"`
			Properties map[string]string `json:"properties"`
		} `json:"instances"`
	}
	if err := json.Unmarshal(data, &world); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	for _, inst := range world.Instances {
		if inst.Cloud == "aws" {
			raw, err := base64.StdEncoding.DecodeString(inst.Properties["userData"])
			if err != nil {
				t.Fatal(err)
			}
			out.Write(raw)
		}
	}
	return out.String()
}

// statusText is every status file of a repository, "" for none.
func statusText(t *testing.T, repo string) string {
	t.Helper()
	if _, err := os.Stat(filepath.Join(repo, "status")); err != nil {
		return ""
	}
	return readTree(t, filepath.Join(repo, "status"))
}

// gitObjects is the content of every object in a repository.
func gitObjects(t *testing.T, repo string) string {
	t.Helper()
	out, err := exec.Command("git", "-C", repo, "cat-file", "--batch-all-objects", "--batch").Output()
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// secretForms are the ways a value can show in text: as it is, each of its
// lines, JSON-escaped, and in base64.
func secretForms(v string) []string {
	js, _ := json.Marshal(v)
	forms := []string{v, string(js[1 : len(js)-1]), base64.StdEncoding.EncodeToString([]byte(v))}
	for _, line := range strings.Split(v, "\n") {
		if len(line) >= 8 {
			forms = append(forms, line)
		}
	}
	return forms
}
