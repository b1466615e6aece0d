// SPDX-License-Identifier: Apache-2.0

package glfake

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Server serves the slice of GitLab's REST API the commenter uses, a
// merge request's notes: listed in pages (X-Next-Page and a Link header, as
// GitLab sends them), created, updated and deleted. It records every call.
type Server struct {
	sync.Mutex
	Notes  []*Note
	NextID int64
	// paging says which pagination headers a list answers with: "both",
	// "offset" (X-Next-Page only) or "link" (Link only).
	Paging string
	// tokens are the credentials it accepts, by header.
	Tokens map[string]string
	// failNext holds, by method, the statuses to answer before serving.
	FailNext map[string][]int
	Calls    []string
	// headers records which credential header each call carried.
	Headers map[string]int
	// missing are the merge requests, project!iid, it answers 404 for.
	Missing map[string]bool
	// MaxLength is the longest note it takes, in characters.
	MaxLength int
}

type Note struct {
	ID     int64  `json:"id"`
	Body   string `json:"body"`
	System bool   `json:"system"`
	// MR is project!iid; GitLab's answers do not carry it.
	MR string `json:"-"`
}

// New is a fake GitLab accepting token as a PRIVATE-TOKEN; serve it with
// httptest.NewServer, its API at URL + "/api/v4".
func New(token string) *Server {
	f := &Server{
		MaxLength: 1_000_000,
		NextID:    1000,
		Paging:    "both",
		Tokens:    map[string]string{"PRIVATE-TOKEN": token},
		FailNext:  map[string][]int{},
		Headers:   map[string]int{},
		Missing:   map[string]bool{},
	}
	return f
}

var (
	mrNotes = regexp.MustCompile(`^/api/v4/projects/([^/]+)/merge_requests/(\d+)/notes$`)
	oneNote = regexp.MustCompile(`^/api/v4/projects/([^/]+)/merge_requests/(\d+)/notes/(\d+)$`)
)

func (f *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.Lock()
	defer f.Unlock()
	code := f.serve(w, r)
	call := r.Method + " " + r.URL.EscapedPath()
	if p := r.URL.Query().Get("page"); p != "" {
		call += "?page=" + p
	}
	f.Calls = append(f.Calls, fmt.Sprintf("%s %d", call, code))
}

func (f *Server) serve(w http.ResponseWriter, r *http.Request) int {
	answer := func(code int, v any) int {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		if v != nil {
			json.NewEncoder(w).Encode(v)
		}
		return code
	}
	authorized := false
	for header, token := range f.Tokens {
		if v := r.Header.Get(header); v != "" {
			f.Headers[header]++
			authorized = authorized || v == token
		}
	}
	if !authorized {
		return answer(http.StatusUnauthorized, map[string]string{"message": "401 Unauthorized"})
	}
	if codes := f.FailNext[r.Method]; len(codes) > 0 {
		f.FailNext[r.Method] = codes[1:]
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
		if f.Missing[mr] {
			return answer(http.StatusNotFound, notFound)
		}
		switch r.Method {
		case http.MethodGet:
			var on []*Note
			for _, n := range f.Notes {
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
				if f.Paging != "link" {
					w.Header().Set("X-Next-Page", strconv.Itoa(page+1))
				}
				if f.Paging != "offset" {
					next := *r.URL
					q := next.Query()
					q.Set("page", strconv.Itoa(page+1))
					next.RawQuery = q.Encode()
					w.Header().Set("Link", fmt.Sprintf(`<http://%s%s>; rel="next"`, r.Host, next.RequestURI()))
				}
			}
			return answer(http.StatusOK, on[start:end])
		case http.MethodPost:
			var n Note
			if err := json.NewDecoder(r.Body).Decode(&n); err != nil || n.Body == "" {
				return answer(http.StatusBadRequest, map[string]string{"message": "400 Bad request - body is missing"})
			}
			if len([]rune(n.Body)) > f.MaxLength {
				return answer(http.StatusBadRequest, map[string]string{"message": "Note is too long (maximum is 1000000 characters)"})
			}
			f.NextID++
			n.ID, n.MR = f.NextID, mr
			f.Notes = append(f.Notes, &n)
			return answer(http.StatusCreated, n)
		}
	}
	if m := oneNote.FindStringSubmatch(path); m != nil {
		project, _ := url.PathUnescape(m[1])
		id, _ := strconv.ParseInt(m[3], 10, 64)
		i := slices.IndexFunc(f.Notes, func(n *Note) bool { return n.ID == id && n.MR == project+"!"+m[2] })
		if i < 0 || f.Notes[i].System {
			return answer(http.StatusNotFound, notFound)
		}
		switch r.Method {
		case http.MethodPut:
			var n Note
			if err := json.NewDecoder(r.Body).Decode(&n); err != nil || n.Body == "" {
				return answer(http.StatusBadRequest, map[string]string{"message": "400 Bad request - body is missing"})
			}
			if len([]rune(n.Body)) > f.MaxLength {
				return answer(http.StatusBadRequest, map[string]string{"message": "Note is too long (maximum is 1000000 characters)"})
			}
			f.Notes[i].Body = n.Body
			return answer(http.StatusOK, f.Notes[i])
		case http.MethodDelete:
			f.Notes = slices.Delete(f.Notes, i, i+1)
			return answer(http.StatusNoContent, nil)
		}
	}
	return answer(http.StatusNotFound, notFound)
}

// Ours returns the notes on mr that start with marker, oldest first.
func (f *Server) Ours(mr, marker string) []*Note {
	f.Lock()
	defer f.Unlock()
	var out []*Note
	for _, n := range f.Notes {
		if n.MR == mr && !n.System && strings.HasPrefix(n.Body, marker) {
			out = append(out, n)
		}
	}
	return out
}

// TakeCalls returns the calls made since the last time, as
// "METHOD PATH[?page=N] STATUS".
func (f *Server) TakeCalls() []string {
	f.Lock()
	defer f.Unlock()
	calls := f.Calls
	f.Calls = nil
	return calls
}
