// SPDX-License-Identifier: Apache-2.0

package glcomment

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gpufleet/gpufleet/cmd/gpufleet/internal/glcomment/glfake"
)

const (
	marker    = "<!-- gpufleet-plan -->"
	testToken = "glpat-0123456789TokenForTheTest"
)

var mr = MergeRequest{Project: "acme/fleets", IID: 7}

func client(t *testing.T, url string, tok Token) *Client {
	t.Helper()
	c, err := NewClient(tok, url, Options{Retry: fastRetry})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func post(t *testing.T, url, body string) Result {
	t.Helper()
	res, err := client(t, url, Token{value: testToken, Source: EnvToken}).Post(context.Background(), mr, marker, body)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestTheFirstRunCreatesAndTheSecondUpdatesTheSameNote(t *testing.T) {
	for _, paging := range []string{"both", "offset", "link"} {
		t.Run(paging, func(t *testing.T) {
			f, url := newFake(t)
			f.Paging = paging
			// Plenty of people talk on the merge request, and GitLab adds
			// its own notes: the search pages through, and skips those.
			for i := range 250 {
				f.Notes = append(f.Notes, &glfake.Note{ID: int64(i + 1), Body: fmt.Sprintf("LGTM %d", i), MR: mr.String()})
			}
			f.Notes = append(f.Notes, &glfake.Note{ID: 300, Body: marker + " added 2 commits", System: true, MR: mr.String()})
			// The same plan marker on another merge request is not ours here.
			f.Notes = append(f.Notes, &glfake.Note{ID: 301, Body: marker + "\nother", MR: "acme/fleets!8"})

			first := post(t, url, marker+"\n**Plan: 1 to create, 0 to delete**\n")
			if len(first.Created) != 1 || len(first.Updated) != 0 || len(first.Deleted) != 0 {
				t.Fatalf("first run: %+v", first)
			}
			want := []string{
				"GET /api/v4/projects/acme%2Ffleets/merge_requests/7/notes 200",
				"GET /api/v4/projects/acme%2Ffleets/merge_requests/7/notes?page=2 200",
				"GET /api/v4/projects/acme%2Ffleets/merge_requests/7/notes?page=3 200",
				"POST /api/v4/projects/acme%2Ffleets/merge_requests/7/notes 201",
			}
			if got := f.TakeCalls(); !slices.Equal(got, want) {
				t.Errorf("first run's calls:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}

			second := post(t, url, marker+"\n**Plan: 2 to create, 0 to delete**\n")
			if len(second.Created) != 0 || len(second.Updated) != 1 || second.Updated[0] != first.Created[0] {
				t.Fatalf("second run: %+v, want an update of %d", second, first.Created[0])
			}
			want[3] = fmt.Sprintf("PUT /api/v4/projects/acme%%2Ffleets/merge_requests/7/notes/%d 200", first.Created[0])
			if got := f.TakeCalls(); !slices.Equal(got, want) {
				t.Errorf("second run's calls:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			ours := f.Ours(mr.String(), marker)
			if len(ours) != 1 || !strings.Contains(ours[0].Body, "2 to create") || strings.Count(ours[0].Body, marker) != 1 {
				t.Fatalf("plan notes: %+v", ours)
			}
			if len(f.Notes) != 253 {
				t.Errorf("%d notes in all; the others were touched", len(f.Notes))
			}
		})
	}
}

// A numeric project ID works as well as a path.
func TestAProjectByID(t *testing.T) {
	f, url := newFake(t)
	c := client(t, url, Token{value: testToken, Source: EnvToken})
	if _, err := c.Post(context.Background(), MergeRequest{Project: "4242", IID: 3}, marker, marker+"\nplan\n"); err != nil {
		t.Fatal(err)
	}
	if got := f.TakeCalls(); len(got) != 2 || got[1] != "POST /api/v4/projects/4242/merge_requests/3/notes 201" {
		t.Errorf("calls: %q", got)
	}
}

// bigPlan is a plan of about 3.5 MB: a long diff inside a collapsible
// section, then a second section, the shapes that must survive splitting.
func bigPlan(actions int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n### Plan: %d to create, 0 to delete\n\n", marker, actions)
	b.WriteString("<details><summary>fleet <b>huge</b>: $0.00/h → $40,000.00/h</summary>\n\n```diff\n")
	for i := range actions {
		fmt.Fprintf(&b, "+ create huge/w%05d on aws/us-east-1/us-east-1a/g6.2xlarge/on-demand at $0.976/h ✓\n", i)
	}
	b.WriteString("```\n\n- `w`: runner-up gcp/us-central1/us-central1-b/g2-standard-4/on-demand\n</details>\n")
	b.WriteString("<details><summary>fleet small</summary>\n\n```diff\n+ create small/w0\n```\n</details>\n")
	return b.String()
}

// checkPart parses a part as Markdown renders it and says what it leaves
// open: a code block (a fence line toggles it) or a <details> section
// (counted outside code blocks).
func checkPart(part string) error {
	inFence, depth := false, 0
	for i, line := range strings.Split(part, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trimmed, "```"):
			inFence = !inFence
		case inFence:
		case strings.HasPrefix(trimmed, "<details"):
			depth++
		case strings.HasPrefix(trimmed, "</details>"):
			if depth--; depth < 0 {
				return fmt.Errorf("line %d closes a section never opened", i+1)
			}
		}
	}
	if inFence {
		return errors.New("a code block is left open")
	}
	if depth != 0 {
		return fmt.Errorf("%d sections are left open", depth)
	}
	return nil
}

func TestALongPlanIsSplitIntoValidParts(t *testing.T) {
	f, url := newFake(t)
	plan := bigPlan(40_000)
	if n := utf8.RuneCountInString(plan); n < 3*MaxLength {
		t.Fatalf("the plan is only %d characters", n)
	}
	res := post(t, url, plan)
	ours := f.Ours(mr.String(), marker)
	if res.Parts < 4 || len(ours) != res.Parts || len(res.Created) != res.Parts {
		t.Fatalf("%d parts posted as %d notes: %+v", res.Parts, len(ours), res)
	}
	var actions []string
	for i, n := range ours {
		if got := utf8.RuneCountInString(n.Body); got > MaxLength {
			t.Errorf("part %d has %d characters, over %d", i+1, got, MaxLength)
		}
		if !strings.HasPrefix(n.Body, fmt.Sprintf("%s\n<!-- part %d/%d -->\n", marker, i+1, res.Parts)) {
			t.Errorf("part %d lacks its header: %.80q", i+1, n.Body)
		}
		if err := checkPart(n.Body); err != nil {
			t.Errorf("part %d: %v", i+1, err)
		}
		for _, line := range strings.Split(n.Body, "\n") {
			if strings.HasPrefix(line, "+ create huge/") {
				actions = append(actions, line)
			}
		}
	}
	if len(actions) != 40_000 || !strings.Contains(actions[39_999], "w39999") {
		t.Errorf("the parts hold %d of the 40,000 action lines", len(actions))
	}
	if last := ours[len(ours)-1].Body; !strings.Contains(last, "+ create small/w0") {
		t.Errorf("the last part lacks the plan's end")
	}

	// The next push adds a little: the same notes are updated, none added.
	again := post(t, url, bigPlan(40_100))
	if again.Parts != res.Parts || len(again.Updated) != res.Parts || len(again.Created) != 0 {
		t.Errorf("after a slightly longer plan: %+v", again)
	}

	// A short plan at last: the first part is updated, the rest deleted.
	f.TakeCalls()
	short := post(t, url, marker+"\nNo changes\n")
	if len(short.Updated) != 1 || short.Updated[0] != res.Created[0] || !slices.Equal(short.Deleted, res.Created[1:]) {
		t.Errorf("after a short plan: %+v, want %d updated and %v deleted", short, res.Created[0], res.Created[1:])
	}
	if left := f.Ours(mr.String(), marker); len(left) != 1 || strings.Contains(left[0].Body, "<!-- part") || !strings.Contains(left[0].Body, "No changes") {
		t.Errorf("%d plan notes left: %+v", len(left), left)
	}
	deletes := 0
	for _, c := range f.TakeCalls() {
		if strings.HasPrefix(c, "DELETE ") && strings.HasSuffix(c, " 204") {
			deletes++
		}
	}
	if deletes != res.Parts-1 {
		t.Errorf("%d DELETE calls, want %d", deletes, res.Parts-1)
	}
}

// A create retried after a lost answer can leave a part twice: the next
// run keeps the oldest and deletes the copy.
func TestADuplicatePartIsDeleted(t *testing.T) {
	f, url := newFake(t)
	f.Notes = []*glfake.Note{
		{ID: 10, Body: marker + "\nold plan\n", MR: mr.String()},
		{ID: 11, Body: "LGTM", MR: mr.String()},
		{ID: 12, Body: marker + "\nold plan\n", MR: mr.String()},
	}
	res := post(t, url, marker+"\nnew plan\n")
	if !slices.Equal(res.Updated, []int64{10}) || !slices.Equal(res.Deleted, []int64{12}) || len(res.Created) != 0 {
		t.Errorf("%+v, want 10 updated and 12 deleted", res)
	}
}

func TestServerErrorsAreRetried(t *testing.T) {
	f, url := newFake(t)
	f.FailNext[http.MethodGet] = []int{http.StatusInternalServerError}
	f.FailNext[http.MethodPost] = []int{http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusTooManyRequests}
	start := time.Now()
	res := post(t, url, marker+"\nplan\n")
	if len(res.Created) != 1 {
		t.Fatalf("created %v", res.Created)
	}
	want := []string{
		"GET /api/v4/projects/acme%2Ffleets/merge_requests/7/notes 500",
		"GET /api/v4/projects/acme%2Ffleets/merge_requests/7/notes 200",
		"POST /api/v4/projects/acme%2Ffleets/merge_requests/7/notes 502",
		"POST /api/v4/projects/acme%2Ffleets/merge_requests/7/notes 503",
		"POST /api/v4/projects/acme%2Ffleets/merge_requests/7/notes 429",
		"POST /api/v4/projects/acme%2Ffleets/merge_requests/7/notes 201",
	}
	if got := f.TakeCalls(); !slices.Equal(got, want) {
		t.Errorf("calls:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// The 429 asked for a second; the test's Retry caps the wait.
	if d := time.Since(start); d > 800*time.Millisecond {
		t.Errorf("the retries took %s", d)
	}
	if len(f.Ours(mr.String(), marker)) != 1 {
		t.Errorf("%d plan notes", len(f.Ours(mr.String(), marker)))
	}
}

// Retries end: a server that keeps failing is an error naming what failed.
func TestRetriesGiveUp(t *testing.T) {
	f, url := newFake(t)
	f.FailNext[http.MethodGet] = slices.Repeat([]int{http.StatusBadGateway}, 10)
	_, err := client(t, url, Token{value: testToken, Source: EnvToken}).Post(context.Background(), mr, marker, marker+"\nplan\n")
	if err == nil || !strings.Contains(err.Error(), "listing the notes of acme/fleets!7") || !strings.Contains(err.Error(), "502") {
		t.Fatalf("err = %v", err)
	}
	if n := len(f.TakeCalls()); n != fastRetry.Max+1 {
		t.Errorf("%d calls, want %d", n, fastRetry.Max+1)
	}
}

func TestRefusedTokensAreClearErrors(t *testing.T) {
	tests := []struct {
		name    string
		token   Token
		accept  map[string]string
		want    error
		message string
	}{
		{
			name:    "an unknown access token",
			token:   Token{value: "glpat-revoked0123456789", Source: EnvToken},
			accept:  map[string]string{"PRIVATE-TOKEN": testToken},
			want:    ErrAuth,
			message: "listing the notes of acme/fleets!7, GitLab refused the token in GITLAB_TOKEN (401 Unauthorized)",
		},
		{
			name:    "an unknown job token, sent as JOB-TOKEN",
			token:   Token{value: "glcbt-revoked0123456789", Source: EnvJobToken, Job: true},
			accept:  map[string]string{"JOB-TOKEN": testToken},
			want:    ErrAuth,
			message: "GitLab refused the token in CI_JOB_TOKEN (401 Unauthorized)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, url := newFake(t)
			f.Tokens = tt.accept
			_, err := client(t, url, tt.token).Post(context.Background(), mr, marker, marker+"\nplan\n")
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.message) {
				t.Fatalf("err = %v, want %v saying %q", err, tt.want, tt.message)
			}
			if strings.Contains(err.Error(), tt.token.value) || strings.Contains(err.Error(), testToken) {
				t.Errorf("the error shows the token: %v", err)
			}
			if got := f.TakeCalls(); len(got) != 1 {
				t.Errorf("a refused token was retried: %q", got)
			}
			for header := range tt.accept {
				if f.Headers[header] != 1 {
					t.Errorf("the token was not sent as %s: %v", header, f.Headers)
				}
			}
		})
	}
}

// The job token goes in JOB-TOKEN; where GitLab lets it write notes it
// works like any other.
func TestAJobToken(t *testing.T) {
	f, url := newFake(t)
	f.Tokens = map[string]string{"JOB-TOKEN": testToken}
	c := client(t, url, Token{value: testToken, Source: EnvJobToken, Job: true})
	if _, err := c.Post(context.Background(), mr, marker, marker+"\nplan\n"); err != nil {
		t.Fatal(err)
	}
	if f.Headers["JOB-TOKEN"] != 2 || len(f.Ours(mr.String(), marker)) != 1 {
		t.Errorf("headers %v, %d plan notes", f.Headers, len(f.Ours(mr.String(), marker)))
	}
}

func TestAForbiddenJobTokenSaysWhatToDo(t *testing.T) {
	f, url := newFake(t)
	f.FailNext[http.MethodPost] = []int{http.StatusForbidden}
	f.Tokens = map[string]string{"JOB-TOKEN": testToken}
	_, err := client(t, url, Token{value: testToken, Source: EnvJobToken, Job: true}).Post(context.Background(), mr, marker, marker+"\nplan\n")
	if !errors.Is(err, ErrForbidden) || !strings.Contains(err.Error(), "set GITLAB_TOKEN") {
		t.Fatalf("err = %v", err)
	}
	if strings.Contains(err.Error(), testToken) {
		t.Errorf("the error shows the token: %v", err)
	}
}

func TestAMissingMergeRequest(t *testing.T) {
	f, url := newFake(t)
	f.Missing["acme/fleets!99"] = true
	c := client(t, url, Token{value: testToken, Source: EnvToken})
	_, err := c.Post(context.Background(), MergeRequest{Project: "acme/fleets", IID: 99}, marker, marker+"\nplan\n")
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "acme/fleets!99") {
		t.Fatalf("err = %v", err)
	}
	if got := f.TakeCalls(); len(got) != 1 {
		t.Errorf("a 404 was retried, or more was tried: %q", got)
	}
}
