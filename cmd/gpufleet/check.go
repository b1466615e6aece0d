// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpufleet/gpufleet/cmd/gpufleet/internal/ghcomment"
	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers/outbound"
	"github.com/gpufleet/gpufleet/reconcile/render"
)

func (a *app) checkCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Report a pull request's plan as a check on its head commit",
	}
	var slug, sha, reviewFile, apiURL, detailsURL string
	var commitStatus bool
	gh := &cobra.Command{
		Use:   "github",
		Short: "Report a pull request's plan as the GitHub check run \"" + ghcomment.CheckName + "\", which branch protection can require",
		Long: `github reads a pull request's plan (gpufleet plan --base REF -o json) and
reports it on the head commit as the check run "` + ghcomment.CheckName + `": success, or
failure when the pull request's specs do not load or its deletions exceed
the circuit breaker defaults.disruption.refuseOver (deletions a disruption
budget rolls over later runs do not fail it), with the plan as the check's
output. A second report on the
same commit updates the run. With --commit-status it sets a commit status
instead, for tokens that may not make check runs. The token comes from
GITHUB_TOKEN only.`,
		Example: `  gpufleet plan --repo . --base "$BASE_SHA" -o json > review.json
  gpufleet check github --repo-slug acme/fleets --sha "$HEAD_SHA" --review review.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			owner, repo, ok := strings.Cut(slug, "/")
			if !ok || owner == "" || repo == "" || strings.Contains(repo, "/") {
				return fmt.Errorf("--repo-slug must be OWNER/NAME, not %q", slug)
			}
			if sha == "" {
				return errors.New("--sha must name the pull request's head commit")
			}
			token := os.Getenv("GITHUB_TOKEN")
			if token == "" {
				return errors.New("GITHUB_TOKEN is not set")
			}
			review, err := a.readReview(reviewFile)
			if err != nil {
				return err
			}
			check, err := checkOf(review)
			if err != nil {
				return err
			}
			check.SHA, check.DetailsURL = sha, detailsURL
			client, err := ghcomment.NewClient(token, apiURL, ghcomment.Options{AllowHTTP: outbound.AllowHTTP(os.Getenv)})
			if err != nil {
				return err
			}
			if commitStatus {
				if err := ghcomment.PostStatus(cmd.Context(), client, owner, repo, check); err != nil {
					return err
				}
				fmt.Fprintf(a.stdout, "status %q of %s: %s — %s\n", ghcomment.CheckName, sha, check.Conclusion, check.Title)
				return nil
			}
			id, created, err := ghcomment.PostCheck(cmd.Context(), client, owner, repo, check, time.Now())
			if err != nil {
				return err
			}
			verb := "updated"
			if created {
				verb = "created"
			}
			fmt.Fprintf(a.stdout, "check run %d %s on %s: %s — %s\n", id, verb, sha, check.Conclusion, check.Title)
			return nil
		},
	}
	gh.Flags().StringVar(&slug, "repo-slug", envOr("GITHUB_REPOSITORY", ""), "OWNER/NAME of the repository [GITHUB_REPOSITORY]")
	gh.Flags().StringVar(&sha, "sha", "", "the pull request's head commit")
	gh.Flags().StringVar(&reviewFile, "review", "-", "the pull request's plan, as plan --base REF -o json writes it; - for standard input")
	gh.Flags().StringVar(&apiURL, "github-url", envOr("GITHUB_API_URL", ""), "GitHub API root, for GitHub Enterprise [GITHUB_API_URL]")
	gh.Flags().StringVar(&detailsURL, "details-url", "", "where the check links to, e.g. the pull request's plan comment")
	gh.Flags().BoolVar(&commitStatus, "commit-status", false, "set a commit status rather than a check run")
	cmd.AddCommand(gh)
	return cmd
}

// readReview reads a pull request's plan, as plan --base -o json writes it.
func (a *app) readReview(file string) (*planner.Review, error) {
	data, err := a.readBody(file)
	if err != nil {
		return nil, err
	}
	var head struct {
		FormatVersion int    `json:"formatVersion"`
		Kind          string `json:"kind"`
	}
	if err := json.Unmarshal([]byte(data), &head); err != nil || head.Kind != "review" || head.FormatVersion != render.FormatVersion {
		return nil, fmt.Errorf("%s is not a pull request's plan (gpufleet plan --base REF -o json writes one)", file)
	}
	var review planner.Review
	if err := json.Unmarshal([]byte(data), &review); err != nil {
		return nil, fmt.Errorf("reading %s, %w", file, err)
	}
	return &review, nil
}

// checkOf is what a check says of a pull request's plan: a failure when
// merging it could not be reconciled as it stands (its specs do not load,
// or it deletes more than the circuit breaker, refuseOver, allows), else a
// success: a change the disruption budget rolls out over runs is one.
func checkOf(r *planner.Review) (ghcomment.Check, error) {
	var md bytes.Buffer
	if err := render.ReviewMarkdown(&md, r); err != nil {
		return ghcomment.Check{}, err
	}
	c := ghcomment.Check{Conclusion: ghcomment.Success, Title: render.ReviewSummary(r), Summary: md.String()}
	switch {
	case r.Head == nil:
		c.Conclusion = ghcomment.Failure
	case len(r.Head.Changes.Refused) > 0:
		c.Conclusion = ghcomment.Failure
		c.Title = fmt.Sprintf("%d deletions refused: %s", len(r.Head.Changes.Refused), r.Head.Changes.Refusal)
	}
	return c, nil
}
