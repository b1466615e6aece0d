// SPDX-License-Identifier: Apache-2.0

package ghcomment

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

const marker = "<!-- gpufleet-plan -->"

// fakeGitHub serves the slice of GitHub's REST API the commenter uses:
// issue comments, listed in pages, created, edited and deleted.
type fakeGitHub struct {
	mu       sync.Mutex
	comments []*fakeComment
	nextID   int64
	requests map[string]int
	failNext map[string]int // method → 502s to answer first
	token    string
	authErrs int
}

type fakeComment struct {
	ID   int64  `json:"id"`
	Body string `json:"body"`
}

func newFake(t *testing.T) (*fakeGitHub, string) {
	f := &fakeGitHub{nextID: 1000, requests: map[string]int{}, failNext: map[string]int{}, token: "ghs_test"}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv.URL + "/"
}

func (f *fakeGitHub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests[r.Method]++
	if r.Header.Get("Authorization") != "Bearer "+f.token {
		f.authErrs++
		http.Error(w, `{"message":"Bad credentials"}`, http.StatusUnauthorized)
		return
	}
	if f.failNext[r.Method] > 0 {
		f.failNext[r.Method]--
		http.Error(w, `{"message":"Server Error"}`, http.StatusBadGateway)
		return
	}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	// repos/o/r/issues/N/comments or repos/o/r/issues/comments/ID
	if len(parts) < 5 || parts[0] != "repos" || parts[3] != "issues" {
		http.NotFound(w, r)
		return
	}
	switch {
	case len(parts) == 6 && parts[5] == "comments" && r.Method == http.MethodGet:
		perPage, _ := strconv.Atoi(r.URL.Query().Get("per_page"))
		page, _ := strconv.Atoi(r.URL.Query().Get("page"))
		if perPage == 0 {
			perPage = 30
		}
		if page == 0 {
			page = 1
		}
		start := min((page-1)*perPage, len(f.comments))
		end := min(start+perPage, len(f.comments))
		if end < len(f.comments) {
			w.Header().Set("Link", fmt.Sprintf(`<http://%s%s?per_page=%d&page=%d>; rel="next"`, r.Host, r.URL.Path, perPage, page+1))
		}
		json.NewEncoder(w).Encode(f.comments[start:end])
	case len(parts) == 6 && parts[5] == "comments" && r.Method == http.MethodPost:
		var c fakeComment
		json.NewDecoder(r.Body).Decode(&c)
		f.nextID++
		c.ID = f.nextID
		f.comments = append(f.comments, &c)
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(c)
	case len(parts) == 6 && parts[4] == "comments":
		id, _ := strconv.ParseInt(parts[5], 10, 64)
		i := slices.IndexFunc(f.comments, func(c *fakeComment) bool { return c.ID == id })
		if i < 0 {
			http.NotFound(w, r)
			return
		}
		switch r.Method {
		case http.MethodPatch:
			var c fakeComment
			json.NewDecoder(r.Body).Decode(&c)
			f.comments[i].Body = c.Body
			json.NewEncoder(w).Encode(f.comments[i])
		case http.MethodDelete:
			f.comments = slices.Delete(f.comments, i, i+1)
			w.WriteHeader(http.StatusNoContent)
		}
	default:
		http.NotFound(w, r)
	}
}

func (f *fakeGitHub) ours() []*fakeComment {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*fakeComment
	for _, c := range f.comments {
		if strings.HasPrefix(c.Body, marker) {
			out = append(out, c)
		}
	}
	return out
}

func post(t *testing.T, url, body string) Result {
	t.Helper()
	client, err := NewClient("ghs_test", url, Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Post(context.Background(), client, "acme", "fleets", 42, marker, body)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestTheFirstRunCreatesAndTheSecondUpdatesTheSameComment(t *testing.T) {
	f, url := newFake(t)
	// Plenty of people talk on the pull request: the search pages through.
	for i := range 150 {
		f.comments = append(f.comments, &fakeComment{ID: int64(i + 1), Body: fmt.Sprintf("LGTM %d", i)})
	}
	first := post(t, url, marker+"\n**Plan: 1 to create, 0 to delete**\n")
	if len(first.Created) != 1 || len(first.Updated) != 0 {
		t.Fatalf("first run: %+v", first)
	}
	second := post(t, url, marker+"\n**Plan: 2 to create, 0 to delete**\n")
	if len(second.Created) != 0 || len(second.Updated) != 1 || second.Updated[0] != first.Created[0] {
		t.Fatalf("second run: %+v, want an update of %d", second, first.Created[0])
	}
	ours := f.ours()
	if len(ours) != 1 || !strings.Contains(ours[0].Body, "2 to create") {
		t.Fatalf("plan comments: %+v", ours)
	}
	if len(f.comments) != 151 {
		t.Errorf("%d comments in all; the others were touched", len(f.comments))
	}
}

func TestServerErrorsAreRetried(t *testing.T) {
	f, url := newFake(t)
	f.failNext[http.MethodGet] = 1
	f.failNext[http.MethodPost] = 2
	res := post(t, url, marker+"\nplan\n")
	if len(res.Created) != 1 || f.requests[http.MethodPost] != 3 {
		t.Errorf("created %v with %d POSTs, want 1 after two 502s", res.Created, f.requests[http.MethodPost])
	}
}

// bigPlan is a plan of about 200 KB: a long diff inside a collapsible
// section, the shape that must survive splitting.
func bigPlan() string {
	var b strings.Builder
	b.WriteString(marker + "\n### Plan: 4000 to create, 0 to delete\n\n")
	b.WriteString("<details><summary>fleet <b>huge</b>: $0.00/h → $4,000.00/h</summary>\n\n```diff\n")
	for i := range 4000 {
		fmt.Fprintf(&b, "+ create huge/w%04d on aws/us-east-1/us-east-1a/g6.2xlarge/on-demand at $0.976/h ✓\n", i)
	}
	b.WriteString("```\n\n- `w`: runner-up gcp/us-central1/us-central1-b/g2-standard-4/on-demand\n</details>\n")
	return b.String()
}

func TestALongPlanIsSplitIntoValidParts(t *testing.T) {
	f, url := newFake(t)
	plan := bigPlan()
	if len(plan) < 200_000 {
		t.Fatalf("the plan is only %d bytes", len(plan))
	}
	res := post(t, url, plan)
	ours := f.ours()
	if res.Parts < 4 || len(ours) != res.Parts {
		t.Fatalf("%d parts posted as %d comments", res.Parts, len(ours))
	}
	var lines []string
	for i, c := range ours {
		if n := utf8.RuneCountInString(c.Body); n >= MaxLength {
			t.Errorf("part %d has %d characters", i+1, n)
		}
		if !strings.Contains(c.Body, fmt.Sprintf("<!-- part %d/%d -->", i+1, res.Parts)) {
			t.Errorf("part %d lacks its header", i+1)
		}
		if strings.Count(c.Body, "```")%2 != 0 {
			t.Errorf("part %d leaves a code block open", i+1)
		}
		if strings.Count(c.Body, "<details") != strings.Count(c.Body, "</details>") {
			t.Errorf("part %d leaves a section open", i+1)
		}
		for _, line := range strings.Split(c.Body, "\n") {
			if strings.HasPrefix(line, "+ create") {
				lines = append(lines, line)
			}
		}
	}
	if len(lines) != 4000 || !strings.Contains(lines[3999], "w3999") {
		t.Errorf("the parts hold %d of the 4,000 action lines", len(lines))
	}
	// A short plan next time: one part is updated, the rest deleted.
	again := post(t, url, marker+"\nNo changes\n")
	if len(again.Updated) != 1 || len(again.Deleted) != res.Parts-1 || len(f.ours()) != 1 {
		t.Errorf("after a short plan: %+v, %d comments left", again, len(f.ours()))
	}
}

// Sections and code blocks with long opening lines, and lines longer than
// a part, still split within the limit and in finite time.
func TestSplitPathologicalInput(t *testing.T) {
	long := strings.Repeat("s", 3000)
	body := strings.Repeat("<details><summary>"+long+"</summary>\n", 5) + "```" + long + "\n" + strings.Repeat("z", 20000) + "\n" + strings.Repeat("line\n", 2000)
	for _, limit := range []int{512, 1024, 4096} {
		for i, p := range Split(body, limit) {
			if n := utf8.RuneCountInString(p); n > limit {
				t.Errorf("limit %d: part %d has %d characters", limit, i, n)
			}
		}
	}
}

func TestSplit(t *testing.T) {
	tests := []struct {
		name  string
		body  string
		limit int
		parts int
	}{
		{"short", "hello\n", 100, 1},
		{"one long line", strings.Repeat("x", 10_000), 4096, 5},
		{"many lines", strings.Repeat("a line of text\n", 1000), 4096, 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parts := Split(tt.body, tt.limit)
			if len(parts) < tt.parts {
				t.Errorf("%d parts, want at least %d", len(parts), tt.parts)
			}
			total := 0
			for _, p := range parts {
				if n := utf8.RuneCountInString(p); n > tt.limit {
					t.Errorf("a part has %d characters, over %d", n, tt.limit)
				}
				total += strings.Count(p, "x") + strings.Count(p, "a line")
			}
			if want := strings.Count(tt.body, "x") + strings.Count(tt.body, "a line"); total != want {
				t.Errorf("the parts hold %d of %d units", total, want)
			}
		})
	}
}
