// SPDX-License-Identifier: Apache-2.0

package ghcomment

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/google/go-github/v75/github"

	"github.com/gpufleet/gpufleet/cmd/gpufleet/internal/plancomment"
	"github.com/gpufleet/gpufleet/providers/outbound"
)

// DefaultAPIURL is GitHub.com's REST API root.
const DefaultAPIURL = "https://api.github.com/"

// Options tune a client.
type Options struct {
	// Timeout bounds one attempt; zero means DefaultTimeout.
	Timeout time.Duration
	// AllowHTTP lets the token go to a plain http API beyond loopback
	// (outbound.AllowHTTPEnv).
	AllowHTTP bool
	// Transport, when set, carries the requests: tests give one that
	// trusts their certificate.
	Transport http.RoundTripper
}

// DefaultTimeout bounds one request to GitHub.
const DefaultTimeout = 30 * time.Second

// NewClient makes a GitHub client that authenticates with token and
// retries throttled and failed requests with backoff, a bounded number of
// times. baseURL, when set, is the API's root (GITHUB_API_URL on GitHub
// Enterprise and in tests). The token goes to the API's host only — a
// redirect elsewhere is refused, not followed without it — and over https
// unless the host is loopback or opts.AllowHTTP.
func NewClient(token, baseURL string, opts Options) (*github.Client, error) {
	api, err := outbound.CheckURL(cmp.Or(baseURL, DefaultAPIURL), opts.AllowHTTP)
	if err != nil {
		return nil, fmt.Errorf("the GitHub API URL %q %w", baseURL, err)
	}
	rc := outbound.Retrying(outbound.Policy{Timeout: cmp.Or(opts.Timeout, DefaultTimeout), Origin: api, Transport: opts.Transport})
	rc.RetryMax = 4
	rc.RetryWaitMin = 500 * time.Millisecond
	rc.RetryWaitMax = 10 * time.Second
	client := github.NewClient(rc.StandardClient()).WithAuthToken(token)
	if baseURL != "" {
		if !strings.HasSuffix(baseURL, "/") {
			baseURL += "/"
		}
		var err error
		if client, err = client.WithEnterpriseURLs(baseURL, baseURL); err != nil {
			return nil, err
		}
		// WithEnterpriseURLs adds /api/v3/ to hosts other than GitHub's;
		// GITHUB_API_URL already names the API root.
		u, err := client.BaseURL.Parse(baseURL)
		if err != nil {
			return nil, err
		}
		client.BaseURL = u
	}
	return client, nil
}

// Result says what Post did.
type Result struct {
	Created, Updated, Deleted []int64
	Parts                     int
}

// Post makes the pull request's plan comment say body: it updates the
// comments that start with marker, one per part, creates what is missing
// and deletes parts left over from a longer plan.
func Post(ctx context.Context, gh *github.Client, owner, repo string, pr int, marker, body string) (Result, error) {
	parts := Split(body, MaxLength-512)
	existing, err := find(ctx, gh, owner, repo, pr, marker)
	if err != nil {
		return Result{}, err
	}
	res := Result{Parts: len(parts)}
	for i, part := range parts {
		text := plancomment.Body(marker, part, i+1, len(parts))
		if id, ok := existing[i+1]; ok {
			if _, _, err := gh.Issues.EditComment(ctx, owner, repo, id, &github.IssueComment{Body: github.Ptr(text)}); err != nil {
				return res, fmt.Errorf("updating plan comment %d, %w", id, err)
			}
			res.Updated = append(res.Updated, id)
			delete(existing, i+1)
			continue
		}
		c, _, err := gh.Issues.CreateComment(ctx, owner, repo, pr, &github.IssueComment{Body: github.Ptr(text)})
		if err != nil {
			return res, fmt.Errorf("creating the plan comment, %w", err)
		}
		res.Created = append(res.Created, c.GetID())
	}
	for _, n := range slices.Sorted(maps.Keys(existing)) {
		id := existing[n]
		if _, err := gh.Issues.DeleteComment(ctx, owner, repo, id); err != nil {
			return res, fmt.Errorf("deleting the left-over plan comment %d, %w", id, err)
		}
		res.Deleted = append(res.Deleted, id)
	}
	return res, nil
}

// find lists the pull request's comments and returns those that start with
// marker, by part number; the oldest comment wins a duplicate number.
func find(ctx context.Context, gh *github.Client, owner, repo string, pr int, marker string) (map[int]int64, error) {
	found := map[int]int64{}
	opts := &github.IssueListCommentsOptions{ListOptions: github.ListOptions{PerPage: 100}}
	for {
		comments, resp, err := gh.Issues.ListComments(ctx, owner, repo, pr, opts)
		if err != nil {
			if resp != nil && resp.StatusCode == http.StatusNotFound {
				return nil, fmt.Errorf("pull request %s/%s#%d not found (or the token may not read it)", owner, repo, pr)
			}
			return nil, fmt.Errorf("listing the comments of %s/%s#%d, %w", owner, repo, pr, err)
		}
		for _, c := range comments {
			n, ours := plancomment.Part(c.GetBody(), marker)
			if !ours {
				continue
			}
			if _, dup := found[n]; !dup {
				found[n] = c.GetID()
			}
		}
		if resp.NextPage == 0 {
			return found, nil
		}
		opts.Page = resp.NextPage
	}
}
