// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/examples"
	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/reconcile"
)

func exampleSpec(t *testing.T, name string) string {
	t.Helper()
	data, err := fs.ReadFile(examples.FleetRepo, "fleet-repo/"+name)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// A push to the reconciled branch, signed with the secret, makes the agent
// reconcile the new head at once.
func TestSignedPushWebhookTriggersARun(t *testing.T) {
	o := newOrigin(t, 21)
	log, logs := testLog(t)
	s := serve(t, o.options(log), nil)
	first := s.nextRun()
	if first.err != nil || len(first.res.Applied) != 22 {
		t.Fatalf("first run: %v, applied %d", first.err, len(first.res.Applied))
	}

	o.Push("fleets/inference.cue", strings.Replace(exampleSpec(t, "fleets/inference.cue"), "nodes: 6", "nodes: 7", 1), "One more chat node")
	code, body := s.webhook("push", pushPayload(o.URL, "refs/heads/main"), "")
	if code != http.StatusAccepted || !strings.Contains(body, `"triggered"`) {
		t.Fatalf("push webhook: %d %s", code, body)
	}
	second := s.nextRun()
	if second.err != nil {
		t.Fatal(second.err)
	}
	if len(second.res.Applied) != 1 || second.res.Applied[0].Kind != planner.Create || second.res.Applied[0].Workload != "chat" {
		t.Errorf("the triggered run applied %+v, want the one new chat node", second.res.Applied)
	}
	fleets, _ := o.Statuses()
	if w := fleets["inference"].Workloads[0]; w.Name != "chat" || w.Desired != 7 || w.Running != 7 {
		t.Errorf("chat after the triggered run: %+v", w)
	}
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}
	if text := logs.String(); strings.Contains(text, string(secret)) || strings.Contains(text, "6113728f27ae") {
		t.Error("the log holds the secret or the payload")
	}
}

// A delivery without the right signature is refused with 401 and runs
// nothing, whatever it says.
func TestBadSignatureGets401AndNoRun(t *testing.T) {
	o := newOrigin(t, 22)
	log, _ := testLog(t)
	s := serve(t, o.options(log), nil)
	if first := s.nextRun(); first.err != nil {
		t.Fatal(first.err)
	}
	payload := pushPayload(o.URL, "refs/heads/main")
	tampered := bytes.Replace(payload, []byte("refs/heads/main"), []byte("refs/heads/mainx"), 1)
	for _, tt := range []struct{ name, sig string }{
		{"missing", noSignature},
		{"another secret", Sign([]byte("not-the-secret"), payload)},
		{"sha1", "sha1=" + strings.TrimPrefix(Sign(secret, payload), "sha256=")[:40]},
		{"not hex", "sha256=zz" + strings.Repeat("0", 62)},
		{"truncated", Sign(secret, payload)[:40]},
		{"another body", Sign(secret, tampered)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, body := s.webhook("push", payload, tt.sig)
			if code != http.StatusUnauthorized {
				t.Errorf("%d %s, want 401", code, body)
			}
		})
	}
	// The same goes for a ping, and for the generic trigger.
	if code, _ := s.webhook("ping", []byte(`{"zen":"Keep it logically awesome."}`), "sha256=00"); code != http.StatusUnauthorized {
		t.Errorf("unsigned ping: %d", code)
	}
	h := http.Header{"X-Gpufleet-Signature": {Sign([]byte("wrong"), []byte(`{"repo":"x"}`))}}
	if code, _ := s.post("/trigger", h, strings.NewReader(`{"repo":"`+o.URL+`"}`)); code != http.StatusUnauthorized {
		t.Errorf("badly signed trigger: %d", code)
	}

	w := s.agent.workers[0]
	if n := w.triggered.Load(); n != 0 {
		t.Errorf("refused requests triggered %d runs", n)
	}
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}
	if len(s.runs) != 0 {
		t.Errorf("%d runs after refused requests", len(s.runs))
	}
	if got := counterValue(t, s.agent.Metrics(), "gpufleet_reconcile_runs_total", map[string]string{"result": "success"}); got != 1 {
		t.Errorf("%g successful runs, want only the first", got)
	}
}

// A payload over the limit gets 413: declared too large, before a byte of
// it is read; sent without a length, as soon as it passes the limit.
func TestOversizedPayloadGets413(t *testing.T) {
	o := newOrigin(t, 23)
	log, _ := testLog(t)
	opts := o.options(log)
	opts.MaxPayload = 64 << 10
	s := serve(t, opts, nil)
	if first := s.nextRun(); first.err != nil {
		t.Fatal(first.err)
	}
	big := bytes.Repeat([]byte(" "), int(opts.MaxPayload)+1)
	copy(big, pushPayload(o.URL, "refs/heads/main"))

	t.Run("declared", func(t *testing.T) {
		// Only the head goes out: the answer must come without the body.
		conn, err := net.Dial("tcp", strings.TrimPrefix(s.base, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "POST /webhook/github HTTP/1.1\r\nHost: gpufleet\r\nContent-Type: application/json\r\nX-GitHub-Event: push\r\nX-Hub-Signature-256: %s\r\nContent-Length: %d\r\n\r\n", Sign(secret, big), len(big))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("%s, want 413", resp.Status)
		}
	})
	t.Run("streamed", func(t *testing.T) {
		h := http.Header{"X-Github-Event": {"push"}, "X-Hub-Signature-256": {Sign(secret, big)}}
		// A reader of unknown length makes the client send it chunked.
		code, body := s.post("/webhook/github", h, io.MultiReader(bytes.NewReader(big)))
		if code != http.StatusRequestEntityTooLarge {
			t.Errorf("%d %s, want 413", code, body)
		}
	})
	t.Run("trigger", func(t *testing.T) {
		h := http.Header{"X-Gpufleet-Signature": {Sign(secret, big)}}
		if code, body := s.post("/trigger", h, bytes.NewReader(big)); code != http.StatusRequestEntityTooLarge {
			t.Errorf("%d %s, want 413", code, body)
		}
	})
	if n := s.agent.workers[0].triggered.Load(); n != 0 {
		t.Errorf("oversized requests triggered %d runs", n)
	}
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}
	if len(s.runs) != 0 {
		t.Errorf("%d runs after oversized requests", len(s.runs))
	}
}

// instant stands in for a run that finishes at once.
func instant(context.Context, *worker) (*reconcile.Result, error) { return &reconcile.Result{}, nil }

// Which deliveries trigger which repositories.
func TestWebhookFilters(t *testing.T) {
	log, _ := testLog(t)
	s := serve(t, Options{
		Repos: []Repo{
			{URL: "https://x-access-token:t0ken@github.com/acme/fleets.git", Branch: "main"},
			{URL: "ssh://git@github.com/acme/infra", Branch: "prod"},
		},
		Interval: time.Hour, Secret: secret, Log: log,
	}, instant)
	for range 2 {
		s.nextRun()
	}
	fleets, infra := s.agent.workers[0], s.agent.workers[1]
	push := func(mutate func(m map[string]any)) []byte {
		m := map[string]any{
			"ref": "refs/heads/main",
			"repository": map[string]any{
				"full_name": "acme/fleets", "clone_url": "https://github.com/acme/fleets.git",
				"ssh_url": "git@github.com:acme/fleets.git", "html_url": "https://github.com/acme/fleets", "default_branch": "main",
			},
		}
		if mutate != nil {
			mutate(m)
		}
		return mustJSON(t, m)
	}
	repo := func(m map[string]any) map[string]any { return m["repository"].(map[string]any) }
	for _, tt := range []struct {
		name    string
		event   string
		payload []byte
		code    int
		fleets  int64
		infra   int64
	}{
		{"ping", "ping", []byte(`{"zen":"Design for failure.","hook_id":1}`), 200, 0, 0},
		{"other event", "issues", []byte(`{"action":"opened"}`), 202, 0, 0},
		{"push to the branch", "push", push(nil), 202, 1, 0},
		{"push to another branch", "push", push(func(m map[string]any) { m["ref"] = "refs/heads/dev" }), 202, 0, 0},
		{"tag", "push", push(func(m map[string]any) { m["ref"] = "refs/tags/v1.0" }), 202, 0, 0},
		{"deleted branch", "push", push(func(m map[string]any) { m["deleted"] = true }), 202, 0, 0},
		{"unknown repository", "push", push(func(m map[string]any) {
			m["repository"] = map[string]any{"full_name": "acme/other", "clone_url": "https://github.com/acme/other.git"}
		}), 202, 0, 0},
		{"by ssh_url", "push", push(func(m map[string]any) {
			m["ref"] = "refs/heads/prod"
			repo(m)["full_name"], repo(m)["clone_url"], repo(m)["html_url"] = "acme/infra", "https://example.com/mirror/infra.git", ""
			repo(m)["ssh_url"] = "git@github.com:acme/infra.git"
		}), 202, 0, 1},
		{"by full_name", "push", push(func(m map[string]any) {
			repo(m)["clone_url"], repo(m)["ssh_url"], repo(m)["html_url"] = "https://ghe.example.com/acme/fleets.git", "", ""
		}), 202, 1, 0},
		{"not JSON", "push", []byte(`{"ref": `), 400, 0, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f0, i0 := fleets.triggered.Load(), infra.triggered.Load()
			code, body := s.webhook(tt.event, tt.payload, "")
			if code != tt.code {
				t.Errorf("%d %s, want %d", code, body, tt.code)
			}
			if got := fleets.triggered.Load() - f0; got != tt.fleets {
				t.Errorf("acme/fleets triggered %d times, want %d (%s)", got, tt.fleets, body)
			}
			if got := infra.triggered.Load() - i0; got != tt.infra {
				t.Errorf("acme/infra triggered %d times, want %d (%s)", got, tt.infra, body)
			}
			if strings.Contains(body, "t0ken") {
				t.Errorf("the answer shows the token in the URL: %s", body)
			}
		})
	}
}

func TestSignedTrigger(t *testing.T) {
	log, _ := testLog(t)
	s := serve(t, Options{Repos: []Repo{{URL: "https://github.com/acme/fleets"}}, Interval: time.Hour, Secret: secret, Log: log}, instant)
	s.nextRun()
	w := s.agent.workers[0]
	for _, tt := range []struct {
		name, body string
		code       int
		triggers   int64
	}{
		{"by URL", `{"repo":"https://github.com/acme/fleets.git"}`, 202, 1},
		{"by SSH URL", `{"repo":"git@github.com:acme/fleets.git"}`, 202, 1},
		{"by owner/name", `{"repo":"acme/fleets"}`, 202, 1},
		{"unknown", `{"repo":"acme/other"}`, 404, 0},
		{"no repo", `{}`, 400, 0},
		{"unknown field", `{"repo":"acme/fleets","force":true}`, 400, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := w.triggered.Load()
			h := http.Header{"X-Gpufleet-Signature": {Sign(secret, []byte(tt.body))}}
			code, body := s.post("/trigger", h, strings.NewReader(tt.body))
			if code != tt.code {
				t.Errorf("%d %s, want %d", code, body, tt.code)
			}
			if got := w.triggered.Load() - before; got != tt.triggers {
				t.Errorf("%d triggers, want %d", got, tt.triggers)
			}
		})
	}
}
