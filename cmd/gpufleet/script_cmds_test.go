// SPDX-License-Identifier: Apache-2.0

package main

import (
	"cmp"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// waitFor bounds every wait of a script for a server: long enough for a
// loaded machine, short enough that a server that never comes up fails the
// script rather than the whole test binary's timeout.
const waitFor = 20 * time.Second

// exitcode N PROG [ARGS...] runs PROG as exec does and expects it to exit
// with status N. exec tells only zero from non-zero, and README promises
// scripts and CronJobs more: 2 for not converged, 3 for locked.
func cmdExitCode(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! exitcode")
	}
	if len(args) < 2 {
		ts.Fatalf("usage: exitcode N program [args...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exitcode: %q is not a number", args[0])
	}
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			ts.Fatalf("%s: %v", args[1], err)
		}
		got = exit.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited with status %d, want %d", args[1], got, want)
	}
}

// freeport NAME... sets each NAME to a TCP port free on 127.0.0.1, for a
// server started in the background to listen on. The ports are held open
// together while they are chosen, so no two are the same.
func cmdFreePort(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) == 0 {
		ts.Fatalf("usage: freeport NAME...")
	}
	var held []net.Listener
	defer func() {
		for _, l := range held {
			l.Close()
		}
	}()
	for _, name := range args {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		ts.Check(err)
		held = append(held, l)
		ts.Setenv(name, strconv.Itoa(l.Addr().(*net.TCPAddr).Port))
	}
}

// httpget [-until REGEXP] URL prints the status line and the body of a GET
// of a loopback URL. It tries again while nothing listens there yet and,
// with -until, while the status line and body do not match REGEXP (in
// multi-line mode, as stdout's), for up to waitFor.
func cmdHTTPGet(ts *testscript.TestScript, neg bool, args []string) {
	var until *regexp.Regexp
	if len(args) == 3 && args[0] == "-until" {
		var err error
		if until, err = regexp.Compile("(?m)" + args[1]); err != nil {
			ts.Fatalf("httpget -until: %v", err)
		}
		args = args[2:]
	}
	if neg || len(args) != 1 {
		ts.Fatalf("usage: httpget [-until REGEXP] URL")
	}
	target := loopbackURL(ts, args[0])
	answer, err := retry(func() (string, error) { return roundTrip(http.MethodGet, target, nil, nil) }, func(answer string) bool {
		return until == nil || until.MatchString(answer)
	})
	if err != nil {
		ts.Fatalf("GET %s: %v", target, err)
	}
	fmt.Fprint(ts.Stdout(), answer)
}

// httppost [-sign SECRET] URL BODY posts BODY as JSON to a loopback URL and
// prints the status line and the body of the answer. With -sign it signs
// the body as README says /trigger wants it: X-Gpufleet-Signature:
// sha256=<hex HMAC-SHA256 of the body under SECRET>.
func cmdHTTPPost(ts *testscript.TestScript, neg bool, args []string) {
	header := http.Header{"Content-Type": {"application/json"}}
	if len(args) == 4 && args[0] == "-sign" {
		mac := hmac.New(sha256.New, []byte(args[1]))
		mac.Write([]byte(args[3]))
		header.Set("X-Gpufleet-Signature", "sha256="+hex.EncodeToString(mac.Sum(nil)))
		args = args[2:]
	}
	if neg || len(args) != 2 {
		ts.Fatalf("usage: httppost [-sign SECRET] URL BODY")
	}
	target := loopbackURL(ts, args[0])
	answer, err := retry(func() (string, error) { return roundTrip(http.MethodPost, target, header, []byte(args[1])) }, nil)
	if err != nil {
		ts.Fatalf("POST %s: %v", target, err)
	}
	fmt.Fprint(ts.Stdout(), answer)
}

// loopbackURL refuses a URL that leaves the machine: scripts talk only to
// the servers they start.
func loopbackURL(ts *testscript.TestScript, raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		ts.Fatalf("%v", err)
	}
	if ip := net.ParseIP(u.Hostname()); u.Scheme != "http" || (u.Hostname() != "localhost" && (ip == nil || !ip.IsLoopback())) {
		ts.Fatalf("%s is not an http URL on loopback", raw)
	}
	return u.String()
}

// retry calls try until it answers without an error and done accepts the
// answer (nil accepts any), for up to waitFor. Only refused connections and
// unaccepted answers are tried again: a POST that reached a server is not
// sent twice.
func retry(try func() (string, error), done func(string) bool) (string, error) {
	deadline := time.Now().Add(waitFor)
	for {
		answer, err := try()
		switch {
		case err == nil && (done == nil || done(answer)):
			return answer, nil
		case err != nil && !errors.Is(err, syscall.ECONNREFUSED):
			return "", err
		case time.Now().After(deadline):
			if err != nil {
				return "", fmt.Errorf("nothing listened for %s: %w", waitFor, err)
			}
			return "", fmt.Errorf("no answer matched in %s; the last was:\n%s", waitFor, answer)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// roundTrip makes one request and renders the answer as its status line
// and body.
func roundTrip(method, target string, header http.Header, body []byte) (string, error) {
	req, err := http.NewRequest(method, target, strings.NewReader(string(body)))
	if err != nil {
		return "", err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	client := http.Client{Timeout: waitFor}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	return resp.Status + "\n" + string(data), nil
}

// term sends SIGTERM, what Kubernetes stops a pod with, to the commands
// running in the background; wait then collects them. The kill builtin
// sends only SIGINT and SIGKILL.
func cmdTerm(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: term")
	}
	for _, cmd := range ts.BackgroundCmds() {
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
			ts.Fatalf("%v", err)
		}
	}
}

// fakeGitHubKey finds a script's fake GitHub among its values.
type fakeGitHubKey struct{}

// fakeGitHub serves the slice of GitHub's REST API that `comment github`
// uses, a pull request's issue comments: listed in pages, created, edited,
// deleted. It answers only requests bearing the token it was started with.
type fakeGitHub struct {
	mu       sync.Mutex
	token    string
	nextID   int64
	comments []fakeComment
	requests []string
}

type fakeComment struct {
	ID   int64  `json:"id"`
	Body string `json:"body"`
	// Issue is owner/name#number; GitHub's answers do not carry it.
	Issue string `json:"-"`
}

// ghfake start|comments|requests runs a fake GitHub API on loopback for a
// script.
//
//	ghfake start     serve it at $GITHUB_API_URL, accepting only $GITHUB_TOKEN,
//	                 with one comment by a reviewer on acme/fleets#42
//	ghfake comments  print every comment, each after a line "--- ISSUE comment ID"
//	ghfake requests  print the requests made since the last time, one a line
func cmdGHFake(ts *testscript.TestScript, neg bool, args []string) {
	f := ts.Value(fakeGitHubKey{}).(*fakeGitHub)
	if neg || len(args) != 1 {
		ts.Fatalf("usage: ghfake start|comments|requests")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch args[0] {
	case "start":
		if f.token = ts.Getenv("GITHUB_TOKEN"); f.token == "" {
			ts.Fatalf("ghfake start: set GITHUB_TOKEN first")
		}
		f.nextID = 1000
		f.comments = []fakeComment{{ID: 1000, Body: "LGTM, once the plan is green.", Issue: "acme/fleets#42"}}
		srv := httptest.NewServer(f)
		ts.Defer(srv.Close)
		ts.Setenv("GITHUB_API_URL", srv.URL)
	case "comments":
		for _, c := range f.comments {
			fmt.Fprintf(ts.Stdout(), "--- %s comment %d\n%s\n", c.Issue, c.ID, c.Body)
		}
	case "requests":
		for _, r := range f.requests {
			fmt.Fprintln(ts.Stdout(), r)
		}
		f.requests = nil
	default:
		ts.Fatalf("usage: ghfake start|comments|requests")
	}
}

// issueComments and oneComment are the paths of the API it serves.
var (
	issueComments = regexp.MustCompile(`^/repos/([^/]+/[^/]+)/issues/(\d+)/comments$`)
	oneComment    = regexp.MustCompile(`^/repos/([^/]+/[^/]+)/issues/comments/(\d+)$`)
)

func (f *fakeGitHub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	code := f.serve(w, r)
	f.requests = append(f.requests, fmt.Sprintf("%s %s %d", r.Method, r.URL.Path, code))
}

func (f *fakeGitHub) serve(w http.ResponseWriter, r *http.Request) int {
	answer := func(code int, v any) int {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		if v != nil {
			json.NewEncoder(w).Encode(v)
		}
		return code
	}
	if r.Header.Get("Authorization") != "Bearer "+f.token {
		return answer(http.StatusUnauthorized, map[string]string{"message": "Bad credentials"})
	}
	notFound := map[string]string{"message": "Not Found"}
	if m := issueComments.FindStringSubmatch(r.URL.Path); m != nil {
		issue := m[1] + "#" + m[2]
		switch r.Method {
		case http.MethodGet:
			var on []fakeComment
			for _, c := range f.comments {
				if c.Issue == issue {
					on = append(on, c)
				}
			}
			perPage, _ := strconv.Atoi(r.URL.Query().Get("per_page"))
			page, _ := strconv.Atoi(r.URL.Query().Get("page"))
			perPage, page = cmp.Or(perPage, 30), cmp.Or(page, 1)
			start := min((page-1)*perPage, len(on))
			end := min(start+perPage, len(on))
			if end < len(on) {
				w.Header().Set("Link", fmt.Sprintf(`<http://%s%s?per_page=%d&page=%d>; rel="next"`, r.Host, r.URL.Path, perPage, page+1))
			}
			return answer(http.StatusOK, append([]fakeComment{}, on[start:end]...))
		case http.MethodPost:
			var c fakeComment
			if err := json.NewDecoder(r.Body).Decode(&c); err != nil {
				return answer(http.StatusBadRequest, map[string]string{"message": err.Error()})
			}
			f.nextID++
			c.ID, c.Issue = f.nextID, issue
			f.comments = append(f.comments, c)
			return answer(http.StatusCreated, c)
		}
	}
	if m := oneComment.FindStringSubmatch(r.URL.Path); m != nil {
		id, _ := strconv.ParseInt(m[2], 10, 64)
		i := slices.IndexFunc(f.comments, func(c fakeComment) bool { return c.ID == id && strings.HasPrefix(c.Issue, m[1]+"#") })
		if i < 0 {
			return answer(http.StatusNotFound, notFound)
		}
		switch r.Method {
		case http.MethodPatch:
			var c fakeComment
			if err := json.NewDecoder(r.Body).Decode(&c); err != nil {
				return answer(http.StatusBadRequest, map[string]string{"message": err.Error()})
			}
			f.comments[i].Body = c.Body
			return answer(http.StatusOK, f.comments[i])
		case http.MethodDelete:
			f.comments = slices.Delete(f.comments, i, i+1)
			return answer(http.StatusNoContent, nil)
		}
	}
	return answer(http.StatusNotFound, notFound)
}

// maxlines N fails unless the last command's stdout has at most N lines:
// what a person reads of a plan or a run stays short however many nodes
// change.
func cmdMaxLines(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: maxlines N")
	}
	limit, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("maxlines: %q is not a number", args[0])
	}
	out := ts.ReadFile("stdout")
	if n := strings.Count(out, "\n"); n > limit {
		ts.Fatalf("stdout has %d lines, want at most %d", n, limit)
	}
}
