package glcomment

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
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeGitLab serves the slice of GitLab's REST API the commenter uses, a
// merge request's notes: listed in pages (X-Next-Page and a Link header, as
// GitLab sends them), created, updated and deleted. It records every call.
type fakeGitLab struct {
	mu     sync.Mutex
	notes  []*fakeNote
	nextID int64
	// paging says which pagination headers a list answers with: "both",
	// "offset" (X-Next-Page only) or "link" (Link only).
	paging string
	// tokens are the credentials it accepts, by header.
	tokens map[string]string
	// failNext holds, by method, the statuses to answer before serving.
	failNext map[string][]int
	calls    []string
	// headers records which credential header each call carried.
	headers map[string]int
	// missing are the merge requests, project!iid, it answers 404 for.
	missing map[string]bool
}

type fakeNote struct {
	ID     int64  `json:"id"`
	Body   string `json:"body"`
	System bool   `json:"system"`
	// MR is project!iid; GitLab's answers do not carry it.
	MR string `json:"-"`
}

func newFake(t *testing.T) (*fakeGitLab, string) {
	f := &fakeGitLab{
		nextID:   1000,
		paging:   "both",
		tokens:   map[string]string{"PRIVATE-TOKEN": testToken},
		failNext: map[string][]int{},
		headers:  map[string]int{},
		missing:  map[string]bool{},
	}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv.URL + "/api/v4"
}

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
	f.calls = append(f.calls, fmt.Sprintf("%s %d", call, code))
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
	authorized := false
	for header, token := range f.tokens {
		if v := r.Header.Get(header); v != "" {
			f.headers[header]++
			authorized = authorized || v == token
		}
	}
	if !authorized {
		return answer(http.StatusUnauthorized, map[string]string{"message": "401 Unauthorized"})
	}
	if codes := f.failNext[r.Method]; len(codes) > 0 {
		f.failNext[r.Method] = codes[1:]
		if codes[0] == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", "1")
		}
		return answer(codes[0], map[string]string{"message": http.StatusText(codes[0])})
	}
	notFound := map[string]string{"message": "404 Not found"}
	path := r.URL.EscapedPath()
	if m := mrNotes.FindStringSubmatch(path); m != nil {
		project, _ := url.PathUnescape(m[1])
		mr := project + "!" + m[2]
		if f.missing[mr] {
			return answer(http.StatusNotFound, notFound)
		}
		switch r.Method {
		case http.MethodGet:
			var on []*fakeNote
			for _, n := range f.notes {
				if n.MR == mr {
					on = append(on, n)
				}
			}
			if r.URL.Query().Get("sort") != "asc" {
				slices.Reverse(on) // GitLab lists the newest first by default
			}
			perPage, _ := strconv.Atoi(r.URL.Query().Get("per_page"))
			page, _ := strconv.Atoi(r.URL.Query().Get("page"))
			perPage, page = min(cmp.Or(perPage, 20), 100), cmp.Or(page, 1)
			start := min((page-1)*perPage, len(on))
			end := min(start+perPage, len(on))
			w.Header().Set("X-Page", strconv.Itoa(page))
			w.Header().Set("X-Per-Page", strconv.Itoa(perPage))
			w.Header().Set("X-Total", strconv.Itoa(len(on)))
			if end < len(on) {
				if f.paging != "link" {
					w.Header().Set("X-Next-Page", strconv.Itoa(page+1))
				}
				if f.paging != "offset" {
					next := *r.URL
					q := next.Query()
					q.Set("page", strconv.Itoa(page+1))
					next.RawQuery = q.Encode()
					w.Header().Set("Link", fmt.Sprintf(`<http://%s%s>; rel="next"`, r.Host, next.RequestURI()))
				}
			}
			return answer(http.StatusOK, on[start:end])
		case http.MethodPost:
			var n fakeNote
			if err := json.NewDecoder(r.Body).Decode(&n); err != nil || n.Body == "" {
				return answer(http.StatusBadRequest, map[string]string{"message": "400 Bad request - body is missing"})
			}
			if len([]rune(n.Body)) > MaxLength {
				return answer(http.StatusBadRequest, map[string]string{"message": "Note is too long (maximum is 1000000 characters)"})
			}
			f.nextID++
			n.ID, n.MR = f.nextID, mr
			f.notes = append(f.notes, &n)
			return answer(http.StatusCreated, n)
		}
	}
	if m := oneNote.FindStringSubmatch(path); m != nil {
		project, _ := url.PathUnescape(m[1])
		id, _ := strconv.ParseInt(m[3], 10, 64)
		i := slices.IndexFunc(f.notes, func(n *fakeNote) bool { return n.ID == id && n.MR == project+"!"+m[2] })
		if i < 0 {
			return answer(http.StatusNotFound, notFound)
		}
		switch r.Method {
		case http.MethodPut:
			var n fakeNote
			if err := json.NewDecoder(r.Body).Decode(&n); err != nil || n.Body == "" {
				return answer(http.StatusBadRequest, map[string]string{"message": "400 Bad request - body is missing"})
			}
			if len([]rune(n.Body)) > MaxLength {
				return answer(http.StatusBadRequest, map[string]string{"message": "Note is too long (maximum is 1000000 characters)"})
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

// ours returns the plan notes on mr, oldest first.
func (f *fakeGitLab) ours(mr string) []*fakeNote {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*fakeNote
	for _, n := range f.notes {
		if n.MR == mr && !n.System && strings.HasPrefix(n.Body, marker) {
			out = append(out, n)
		}
	}
	return out
}

// takeCalls returns the calls made since the last time.
func (f *fakeGitLab) takeCalls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	calls := f.calls
	f.calls = nil
	return calls
}

// fastRetry keeps tests quick: a retry waits milliseconds, whatever the
// server asks.
var fastRetry = Retry{Max: 4, WaitMin: time.Millisecond, WaitMax: 20 * time.Millisecond}
