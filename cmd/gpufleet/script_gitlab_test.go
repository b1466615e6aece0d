package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"sync"

	"github.com/rogpeppe/go-internal/testscript"
)

// fakeGitLab serves the slice of GitLab's REST API that `comment gitlab`
// uses, a merge request's notes: listed in pages (X-Next-Page and Link),
// created, updated, deleted. It answers only requests bearing the token it
// was started with, in the header GitLab reads that kind of token from.
type fakeGitLab struct {
	mu       sync.Mutex
	header   string // PRIVATE-TOKEN or JOB-TOKEN
	token    string
	nextID   int64
	notes    []fakeNote
	failNext map[string][]int
	requests []string
}

type fakeNote struct {
	ID     int64  `json:"id"`
	Body   string `json:"body"`
	System bool   `json:"system"`
	// MR is project!iid; GitLab's answers do not carry it.
	MR string `json:"-"`
}

// glFakes holds each script's fake, by its $WORK: a script's values are
// set up before it runs, and this fake is only for the scripts that start
// one.
var glFakes sync.Map

// glfake start|notes|requests|fail runs a fake GitLab API on loopback for
// a script.
//
//	glfake start               serve it at $CI_API_V4_URL, accepting only
//	                           $GITLAB_TOKEN as PRIVATE-TOKEN or, when that is
//	                           empty, $CI_JOB_TOKEN as JOB-TOKEN, with a
//	                           reviewer's note and a system note on 4242!7
//	glfake notes               print every note, each after a line "--- MR note ID"
//	glfake requests            print the requests made since the last time, one a line
//	glfake fail METHOD CODE…   answer the next requests of METHOD with CODEs first
func cmdGLFake(ts *testscript.TestScript, neg bool, args []string) {
	usage := "usage: glfake start|notes|requests|fail METHOD CODE..."
	if neg || len(args) == 0 {
		ts.Fatalf("%s", usage)
	}
	work := ts.Getenv("WORK")
	if args[0] == "start" {
		f := &fakeGitLab{header: "PRIVATE-TOKEN", token: ts.Getenv("GITLAB_TOKEN"), nextID: 1001, failNext: map[string][]int{}}
		if f.token == "" {
			f.header, f.token = "JOB-TOKEN", ts.Getenv("CI_JOB_TOKEN")
		}
		if f.token == "" {
			ts.Fatalf("glfake start: set GITLAB_TOKEN or CI_JOB_TOKEN first")
		}
		f.notes = []fakeNote{
			{ID: 1000, Body: "LGTM, once the plan is green.", MR: "4242!7"},
			{ID: 1001, Body: "added 1 commit", System: true, MR: "4242!7"},
		}
		srv := httptest.NewServer(f)
		glFakes.Store(work, f)
		ts.Defer(func() {
			srv.Close()
			glFakes.Delete(work)
		})
		ts.Setenv("CI_API_V4_URL", srv.URL+"/api/v4")
		return
	}
	v, ok := glFakes.Load(work)
	if !ok {
		ts.Fatalf("glfake: run glfake start first")
	}
	f := v.(*fakeGitLab)
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case args[0] == "notes" && len(args) == 1:
		for _, n := range f.notes {
			fmt.Fprintf(ts.Stdout(), "--- %s note %d\n%s\n", n.MR, n.ID, n.Body)
		}
	case args[0] == "requests" && len(args) == 1:
		for _, r := range f.requests {
			fmt.Fprintln(ts.Stdout(), r)
		}
		f.requests = nil
	case args[0] == "fail" && len(args) >= 3:
		for _, a := range args[2:] {
			code, err := strconv.Atoi(a)
			if err != nil {
				ts.Fatalf("glfake fail: %v", err)
			}
			f.failNext[args[1]] = append(f.failNext[args[1]], code)
		}
	default:
		ts.Fatalf("%s", usage)
	}
}

// mrNotes and oneNote are the paths of the API it serves.
var (
	mrNotes = regexp.MustCompile(`^/api/v4/projects/([^/]+)/merge_requests/(\d+)/notes$`)
	oneNote = regexp.MustCompile(`^/api/v4/projects/([^/]+)/merge_requests/(\d+)/notes/(\d+)$`)
)

func (f *fakeGitLab) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	code := f.serve(w, r)
	call := r.Method + " " + r.URL.EscapedPath()
	if p := r.URL.Query().Get("page"); p != "" {
		call += "?page=" + p
	}
	f.requests = append(f.requests, fmt.Sprintf("%s %d", call, code))
}

func (f *fakeGitLab) serve(w http.ResponseWriter, r *http.Request) int {
	answer := func(code int, v any) int {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		if v != nil {
			json.NewEncoder(w).Encode(v)
		}
		return code
	}
	if r.Header.Get(f.header) != f.token {
		return answer(http.StatusUnauthorized, map[string]string{"message": "401 Unauthorized"})
	}
	if codes := f.failNext[r.Method]; len(codes) > 0 {
		f.failNext[r.Method] = codes[1:]
		return answer(codes[0], map[string]string{"message": http.StatusText(codes[0])})
	}
	notFound := map[string]string{"message": "404 Not found"}
	path := r.URL.EscapedPath()
	if m := mrNotes.FindStringSubmatch(path); m != nil {
		project, _ := url.PathUnescape(m[1])
		mr := project + "!" + m[2]
		switch r.Method {
		case http.MethodGet:
			var on []fakeNote
			for _, n := range f.notes {
				if n.MR == mr {
					on = append(on, n)
				}
			}
			perPage, _ := strconv.Atoi(r.URL.Query().Get("per_page"))
			page, _ := strconv.Atoi(r.URL.Query().Get("page"))
			perPage, page = min(cmp.Or(perPage, 20), 100), cmp.Or(page, 1)
			start := min((page-1)*perPage, len(on))
			end := min(start+perPage, len(on))
			if end < len(on) {
				next := *r.URL
				q := next.Query()
				q.Set("page", strconv.Itoa(page+1))
				next.RawQuery = q.Encode()
				w.Header().Set("X-Next-Page", strconv.Itoa(page+1))
				w.Header().Set("Link", fmt.Sprintf(`<http://%s%s>; rel="next"`, r.Host, next.RequestURI()))
			}
			return answer(http.StatusOK, append([]fakeNote{}, on[start:end]...))
		case http.MethodPost:
			var n fakeNote
			if err := json.NewDecoder(r.Body).Decode(&n); err != nil || n.Body == "" {
				return answer(http.StatusBadRequest, map[string]string{"message": "400 Bad request - body is missing"})
			}
			f.nextID++
			n.ID, n.MR = f.nextID, mr
			f.notes = append(f.notes, n)
			return answer(http.StatusCreated, n)
		}
	}
	if m := oneNote.FindStringSubmatch(path); m != nil {
		project, _ := url.PathUnescape(m[1])
		id, _ := strconv.ParseInt(m[3], 10, 64)
		i := slices.IndexFunc(f.notes, func(n fakeNote) bool { return n.ID == id && n.MR == project+"!"+m[2] })
		if i < 0 || f.notes[i].System {
			return answer(http.StatusNotFound, notFound)
		}
		switch r.Method {
		case http.MethodPut:
			var n fakeNote
			if err := json.NewDecoder(r.Body).Decode(&n); err != nil || n.Body == "" {
				return answer(http.StatusBadRequest, map[string]string{"message": "400 Bad request - body is missing"})
			}
			f.notes[i].Body = n.Body
			return answer(http.StatusOK, f.notes[i])
		case http.MethodDelete:
			f.notes = slices.Delete(f.notes, i, i+1)
			return answer(http.StatusNoContent, nil)
		}
	}
	return answer(http.StatusNotFound, notFound)
}
