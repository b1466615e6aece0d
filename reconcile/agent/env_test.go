// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/reconcile"
	"github.com/gpufleet/gpufleet/reconcile/testenv"
)

// guard bounds every wait in these tests. Nothing passes by waiting it
// out: it only turns a hang into a failure.
const guard = 60 * time.Second

var secret = []byte("test-webhook-secret")

// origin is the shared end-to-end environment: the example fleets and the
// emulated clouds.
type origin struct {
	*testenv.Env
	t *testing.T
}

func newOrigin(t *testing.T, seed uint64) *origin {
	t.Helper()
	return &origin{Env: testenv.New(t, sim.Config{Seed: seed}), t: t}
}

// options are agent options for the origin on the emulator: a schedule
// too slow to fire during a test, so runs happen only when asked.
func (o *origin) options(log *slog.Logger) Options {
	return Options{
		Repos:     []Repo{{URL: o.URL}},
		Interval:  time.Hour,
		WorkDir:   filepath.Join(o.Dir, "work"),
		Holder:    "test-agent",
		Endpoints: o.Endpoints(),
		Secret:    secret,
		Log:       log,
	}
}

// runEvent is one finished run.
type runEvent struct {
	w    *worker
	repo string
	res  *reconcile.Result
	err  error
}

// served is an agent serving on loopback.
type served struct {
	t     *testing.T
	agent *Agent
	base  string
	runs  chan runEvent
	// seen counts the runs nextRun has returned, by worker.
	seen   map[*worker]int64
	cancel context.CancelFunc
	done   chan error
}

// serve starts an agent on 127.0.0.1:0. fake, when set, stands in for
// each run.
func serve(t *testing.T, opts Options, fake func(context.Context, *worker) (*reconcile.Result, error)) *served {
	t.Helper()
	a, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	run := a.reconcile
	if fake != nil {
		run = fake
	}
	s := &served{t: t, agent: a, runs: make(chan runEvent, 64), seen: map[*worker]int64{}, done: make(chan error, 1)}
	a.reconcile = func(ctx context.Context, w *worker) (*reconcile.Result, error) {
		res, err := run(ctx, w)
		s.runs <- runEvent{w: w, repo: w.name, res: res, err: err}
		return res, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.base = "http://" + l.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	go func() { s.done <- a.Serve(ctx, l) }()
	t.Cleanup(func() { s.stop() })
	return s
}

// stop cancels the agent's context, as SIGTERM does, and waits for Serve.
func (s *served) stop() error {
	s.cancel()
	select {
	case err := <-s.done:
		s.done <- err // later calls get the same answer
		return err
	case <-time.After(guard):
		s.t.Fatal("the agent did not stop")
		return nil
	}
}

// nextRun waits for the next run to finish and the agent to record how it
// went.
func (s *served) nextRun() runEvent {
	s.t.Helper()
	select {
	case ev := <-s.runs:
		s.seen[ev.w]++
		for deadline := time.Now().Add(guard); ev.w.finished.Load() < s.seen[ev.w]; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				s.t.Fatal("the agent did not record the run")
			}
		}
		return ev
	case <-time.After(guard):
		s.t.Fatal("no run finished")
		return runEvent{}
	}
}

// post sends a request and returns its status and body.
func (s *served) post(path string, header http.Header, body io.Reader) (int, string) {
	s.t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.base+path, body)
	if err != nil {
		s.t.Fatal(err)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	text, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(text)
}

func (s *served) get(path string) (int, string) {
	s.t.Helper()
	resp, err := http.Get(s.base + path)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	text, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(text)
}

// noSignature sends a webhook without a signature header.
const noSignature = "none"

// deliveryIDs numbers the deliveries the tests send, so that each is new
// to the agent, as GitHub's are.
var deliveryIDs atomic.Int64

// webhook posts a new GitHub delivery signed with sig; "" signs it
// correctly.
func (s *served) webhook(event string, payload []byte, sig string) (int, string) {
	s.t.Helper()
	return s.post("/webhook/github", githubHeader(event, payload, sig, newDeliveryID()), bytes.NewReader(payload))
}

func newDeliveryID() string {
	return fmt.Sprintf("72d3162e-cc78-11e3-81ab-%012d", deliveryIDs.Add(1))
}

// githubHeader is the header of a GitHub delivery signed with sig ("" signs
// it correctly, noSignature leaves it out), with the delivery id given,
// none when "".
func githubHeader(event string, payload []byte, sig, delivery string) http.Header {
	if sig == "" {
		sig = Sign(secret, payload)
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("X-GitHub-Event", event)
	if delivery != "" {
		h.Set("X-GitHub-Delivery", delivery)
	}
	if sig != noSignature {
		h.Set("X-Hub-Signature-256", sig)
	}
	return h
}

// pushPayload is a push event as GitHub sends it, cut to what matters.
func pushPayload(cloneURL, ref string) []byte {
	payload, _ := json.Marshal(map[string]any{
		"ref":     ref,
		"before":  "6113728f27ae82c7b1a177c8d03f9e96e0adf246",
		"after":   "0000000000000000000000000000000000000001",
		"deleted": false,
		"repository": map[string]any{
			"full_name":      "acme/fleets",
			"clone_url":      cloneURL,
			"ssh_url":        "git@github.com:acme/fleets.git",
			"html_url":       "https://github.com/acme/fleets",
			"default_branch": "main",
		},
		"pusher": map[string]string{"name": "someone"},
	})
	return payload
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// waitFor waits until cond holds, looking often; the guard only turns a
// hang into a failure.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(guard)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// logBuffer collects an agent's log lines and passes them to the test's.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	out io.Writer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Write(p)
	return b.out.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func testLog(t *testing.T) (*slog.Logger, *logBuffer) {
	buf := &logBuffer{out: t.Output()}
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug})), buf
}

func stringsReader(s string) io.Reader { return strings.NewReader(s) }
