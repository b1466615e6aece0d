package ghcomment

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/google/go-github/v75/github"
	"github.com/hashicorp/go-retryablehttp"

	"github.com/gpufleet/gpufleet/cmd/gpufleet/internal/plancomment"
)

// NewClient makes a GitHub client that authenticates with token and
// retries throttled and failed requests with backoff, a bounded number of
// times. baseURL, when set, is the API's root (GITHUB_API_URL on GitHub
// Enterprise and in tests).
func NewClient(token, baseURL string) (*github.Client, error) {
	rc := retryablehttp.NewClient()
	rc.RetryMax = 4
	rc.RetryWaitMin = 500 * time.Millisecond
	rc.RetryWaitMax = 10 * time.Second
	// retryablehttp logs every request with its URL by default; gpufleet
	// logs through slog, and nothing of a request.
	rc.Logger = nil
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
