package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/gpufleet/gpufleet/examples"
	"github.com/gpufleet/gpufleet/providers/clouds"
	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/providers/sim/emulator"
	"github.com/gpufleet/gpufleet/reconcile"
	"github.com/gpufleet/gpufleet/reconcile/status"
)

// guard bounds every wait in these tests. Nothing passes by waiting it
// out: it only turns a hang into a failure.
const guard = 60 * time.Second

var secret = []byte("test-webhook-secret")

// origin is the example fleet repository in a bare Git repository on disk,
// with the emulated clouds beside it.
type origin struct {
	t     *testing.T
	dir   string
	path  string
	url   string
	world *sim.World
	emu   *emulator.Emulator
}

func newOrigin(t *testing.T, seed uint64) *origin {
	t.Helper()
	src, err := fs.Sub(examples.FleetRepo, "fleet-repo")
	if err != nil {
		t.Fatal(err)
	}
	o := &origin{t: t, dir: t.TempDir()}
	o.path = filepath.Join(o.dir, "origin.git")
	if err := examples.Seed(o.path, filepath.Join(o.dir, "seed"), src, "Example fleets"); err != nil {
		t.Fatal(err)
	}
	o.url = "file://" + o.path
	if o.world, err = sim.New(sim.Config{Seed: seed}); err != nil {
		t.Fatal(err)
	}
	if o.emu, err = emulator.Start(o.world, emulator.Options{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.emu.Close(context.Background()) })
	return o
}

// options are agent options for the origin on the emulator: a schedule
// too slow to fire during a test, so runs happen only when asked.
func (o *origin) options(log *slog.Logger) Options {
	return Options{
		Repos:     []Repo{{URL: o.url}},
		Interval:  time.Hour,
		WorkDir:   filepath.Join(o.dir, "work"),
		Holder:    "test-agent",
		Endpoints: clouds.Endpoints{AWS: o.emu.Endpoints.EC2, Azure: o.emu.Endpoints.ARM, GCP: o.emu.Endpoints.GCE},
		Secret:    secret,
		Log:       log,
	}
}

// push commits a file to the origin from a clone of its own.
func (o *origin) push(path, content, message string) {
	o.t.Helper()
	dir, err := os.MkdirTemp(o.dir, "person-")
	if err != nil {
		o.t.Fatal(err)
	}
	repo, err := git.PlainClone(dir, false, &git.CloneOptions{URL: o.url})
	if err != nil {
		o.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, path), []byte(content), 0o644); err != nil {
		o.t.Fatal(err)
	}
	wt, err := repo.Worktree()
	if err != nil {
		o.t.Fatal(err)
	}
	if _, err := wt.Add(path); err != nil {
		o.t.Fatal(err)
	}
	who := &object.Signature{Name: "a person", Email: "person@example.com", When: time.Now()}
	if _, err := wt.Commit(message, &git.CommitOptions{Author: who, Committer: who}); err != nil {
		o.t.Fatal(err)
	}
	if err := repo.Push(&git.PushOptions{}); err != nil {
		o.t.Fatal(err)
	}
}

func (o *origin) repo() *git.Repository {
	o.t.Helper()
	repo, err := git.PlainOpen(o.path)
	if err != nil {
		o.t.Fatal(err)
	}
	return repo
}

// head is the commit at the origin's main branch.
func (o *origin) head() *object.Commit {
	o.t.Helper()
	repo := o.repo()
	ref, err := repo.Reference(plumbing.NewBranchReferenceName("main"), true)
	if err != nil {
		o.t.Fatal(err)
	}
	c, err := repo.CommitObject(ref.Hash())
	if err != nil {
		o.t.Fatal(err)
	}
	return c
}

// statusFiles reads every status/*.json at the origin's head, failing on
// one that is not valid JSON.
func (o *origin) statusFiles() (fleets map[string]*status.FleetStatus, state *status.RepoState) {
	o.t.Helper()
	tree, err := o.head().Tree()
	if err != nil {
		o.t.Fatal(err)
	}
	fleets = map[string]*status.FleetStatus{}
	err = tree.Files().ForEach(func(f *object.File) error {
		name, ok := strings.CutPrefix(f.Name, "status/")
		if !ok || !strings.HasSuffix(name, ".json") {
			return nil
		}
		text, err := f.Contents()
		if err != nil {
			return err
		}
		if name == "gpufleet.json" {
			state = &status.RepoState{}
			return json.Unmarshal([]byte(text), state)
		}
		var st status.FleetStatus
		if err := json.Unmarshal([]byte(text), &st); err != nil {
			return fmt.Errorf("%s: %w", f.Name, err)
		}
		fleets[st.Fleet] = &st
		return nil
	})
	if err != nil {
		o.t.Fatalf("a status file at the head is not valid: %v", err)
	}
	return fleets, state
}

// lockMessage is the message of the commit the origin's lock ref points
// at, "" when there is no lock ref.
func (o *origin) lockMessage() string {
	o.t.Helper()
	repo := o.repo()
	ref, err := repo.Reference("refs/gpufleet/lock", true)
	if err != nil {
		return ""
	}
	c, err := repo.CommitObject(ref.Hash())
	if err != nil {
		o.t.Fatal(err)
	}
	return c.Message
}

// creates counts the create calls the emulated clouds have received,
// including those still waiting out an injected latency.
func (o *origin) creates() int {
	calls := o.world.Calls()
	return calls["aws RunInstances"] + calls["azure put"] + calls["gcp instances.insert"]
}

// runEvent is one finished run.
type runEvent struct {
	repo string
	res  *reconcile.Result
	err  error
}

// served is an agent serving on loopback.
type served struct {
	t      *testing.T
	agent  *Agent
	base   string
	runs   chan runEvent
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
	if fake != nil {
		a.reconcile = fake
	}
	s := &served{t: t, agent: a, runs: make(chan runEvent, 64), done: make(chan error, 1)}
	a.afterRun = func(w *worker, res *reconcile.Result, err error) {
		s.runs <- runEvent{repo: w.name, res: res, err: err}
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

// nextRun waits for the next run to finish.
func (s *served) nextRun() runEvent {
	s.t.Helper()
	select {
	case ev := <-s.runs:
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
