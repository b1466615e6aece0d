// SPDX-License-Identifier: Apache-2.0

package gcesim

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/providers/sim"

	"github.com/gpufleet/gpufleet/providers/sim/clienttest"
)

// The gcloud tests drive the front with the real Google Cloud CLI, as an
// operator would, unchanged but for where it sends its requests: a
// client nobody here wrote, with its own batching, polling and paging.

// gcloudProject is the project the gcloud tests work in.
const gcloudProject = "demo-project"

// gcloudFront is a world behind a front on loopback, and the environment
// gcloud needs to talk to it and to nothing else.
type gcloudFront struct {
	world  *sim.World
	server *Server
	// url is the loopback server's, http or https.
	url string
	// requests logs the HTTP requests the server took, batches counted
	// once.
	requests *requestLog
	env      []string
}

// requestLog records requests as "METHOD PATH".
type requestLog struct {
	mu   sync.Mutex
	seen []string
}

func (l *requestLog) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.mu.Lock()
		l.seen = append(l.seen, r.Method+" "+r.URL.Path)
		l.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

// count is how many requests had the method and a path ending in suffix.
func (l *requestLog) count(method, suffix string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, s := range l.seen {
		m, path, _ := strings.Cut(s, " ")
		if m == method && strings.HasSuffix(path, suffix) {
			n++
		}
	}
	return n
}

// gcloudPath finds gcloud, or skips the test.
func gcloudPath(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("gcloud")
	if err != nil {
		clienttest.Missing(t, "gcloud", "install the Google Cloud CLI (apt-get install google-cloud-cli from Google's repository)")
	}
	if testing.Short() {
		t.Skip("gcloud tests start a Python process a call; skipped in -short mode")
	}
	return path
}

// newGcloudFront starts a world and its front on loopback.
func newGcloudFront(t *testing.T, cfg sim.Config, opts Options) *gcloudFront {
	t.Helper()
	return newGcloudFrontTLS(t, cfg, opts, nil, "")
}

// newGcloudFrontTLS is newGcloudFront over TLS when tlsConfig is set;
// caFile is then the CA gcloud is told to trust.
func newGcloudFrontTLS(t *testing.T, cfg sim.Config, opts Options, tlsConfig *tls.Config, caFile string) *gcloudFront {
	t.Helper()
	gcloudPath(t)
	world, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := New(world, opts)
	log := &requestLog{}
	ts := httptest.NewUnstartedServer(log.wrap(srv))
	if tlsConfig != nil {
		ts.TLS = tlsConfig
		ts.StartTLS()
	} else {
		ts.Start()
	}
	t.Cleanup(ts.Close)
	t.Cleanup(func() {
		if n := srv.panics.Load(); n != 0 {
			t.Errorf("%d requests reached the panic recovery", n)
		}
	})

	dir := t.TempDir()
	token := filepath.Join(dir, "token")
	if err := os.WriteFile(token, []byte("emulator-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A clean environment: no proxies, no credentials, no metadata
	// server, no update checks, surveys or usage reports, nothing that
	// would leave loopback.
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + dir,
		"LANG=C.UTF-8",
		"CLOUDSDK_CONFIG=" + filepath.Join(dir, "gcloud"),
		"CLOUDSDK_CORE_PROJECT=" + gcloudProject,
		"CLOUDSDK_AUTH_ACCESS_TOKEN_FILE=" + token,
		"CLOUDSDK_API_ENDPOINT_OVERRIDES_COMPUTE=" + ts.URL + "/compute/v1/",
		"CLOUDSDK_CORE_DISABLE_PROMPTS=1",
		"CLOUDSDK_COMPONENT_MANAGER_DISABLE_UPDATE_CHECK=1",
		"CLOUDSDK_CORE_DISABLE_USAGE_REPORTING=true",
		"CLOUDSDK_CORE_CHECK_GCE_METADATA=false",
		"CLOUDSDK_SURVEY_DISABLE_PROMPTS=true",
		// gcloud retries a batch's 403s five times, five seconds apart,
		// in case the API is being enabled; the emulator's APIs always
		// are.
		"CLOUDSDK_CORE_SHOULD_PROMPT_TO_ENABLE_API=false",
	}
	if caFile != "" {
		env = append(env, "CLOUDSDK_CORE_CUSTOM_CA_CERTS_FILE="+caFile)
	}
	return &gcloudFront{world: world, server: srv, url: ts.URL, requests: log, env: env}
}

// run runs gcloud with args and returns its output.
func (g *gcloudFront) run(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, gcloudPath(t), args...)
	cmd.Env = g.env
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	began := time.Now()
	err = cmd.Run()
	t.Logf("gcloud %s: %v in %v", strings.Join(args, " "), err, time.Since(began).Round(time.Millisecond))
	return out.String(), errOut.String(), err
}

// ok runs gcloud with --format=json, fails the test unless it succeeds,
// and decodes what it printed into v (unless v is nil). It returns
// gcloud's stderr.
func (g *gcloudFront) ok(t *testing.T, v any, args ...string) string {
	t.Helper()
	stdout, stderr, err := g.run(t, append(args, "--format=json")...)
	if err != nil {
		t.Fatalf("gcloud %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	if v != nil {
		if err := json.Unmarshal([]byte(stdout), v); err != nil {
			t.Fatalf("gcloud %s printed %q: %v", strings.Join(args, " "), stdout, err)
		}
	}
	return stderr
}

// fails runs gcloud, fails the test unless gcloud fails, and returns its
// stderr.
func (g *gcloudFront) fails(t *testing.T, args ...string) string {
	t.Helper()
	_, stderr, err := g.run(t, args...)
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("gcloud %s: got %v, want it to fail\n%s", strings.Join(args, " "), err, stderr)
	}
	return stderr
}

// link is the URL the front writes for a path, under the base gcloud
// calls.
func (g *gcloudFront) link(path string) string { return g.url + "/compute/v1/" + path }

// wantIn fails the test unless every want is in text.
func wantIn(t *testing.T, what, text string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(text, want) {
			t.Errorf("%s lacks %q:\n%s", what, want, text)
		}
	}
}

// jsonAt walks a decoded JSON value along a path of keys and indexes
// ("networkInterfaces", 0, "networkIP").
func jsonAt(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			a, _ := v.([]any)
			if k >= len(a) {
				return nil
			}
			v = a[k]
		}
	}
	return v
}
