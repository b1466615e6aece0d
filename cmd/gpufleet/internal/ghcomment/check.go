// SPDX-License-Identifier: Apache-2.0

package ghcomment

import (
	"context"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/google/go-github/v75/github"
)

// CheckName is the name of the check run, and the context of the commit
// status, a plan is reported under: what branch protection requires.
const CheckName = "gpufleet plan"

// Conclusions a plan's check can have.
const (
	Success = "success"
	Failure = "failure"
)

// Check is a plan as a check on the head commit.
type Check struct {
	SHA        string
	Conclusion string
	// Title is the headline; Summary and Text the plan in Markdown.
	Title, Summary, Text string
	// DetailsURL, when set, links the check to where the plan is read.
	DetailsURL string
}

// GitHub bounds a check run's summary and text each at 65,535 characters,
// and a commit status's description at 140.
const (
	maxCheckOutput  = 65535
	maxStatusDetail = 140
)

// PostCheck reports a plan as the check run CheckName on its commit,
// updating the run of that name the commit has rather than adding a
// second. It returns the run's id and whether it made it.
func PostCheck(ctx context.Context, gh *github.Client, owner, repo string, c Check, now time.Time) (int64, bool, error) {
	output := &github.CheckRunOutput{
		Title:   github.Ptr(c.Title),
		Summary: github.Ptr(cut(c.Summary, maxCheckOutput)),
	}
	if c.Text != "" {
		output.Text = github.Ptr(cut(c.Text, maxCheckOutput))
	}
	done := &github.Timestamp{Time: now}
	var details *string
	if c.DetailsURL != "" {
		details = github.Ptr(c.DetailsURL)
	}
	runs, _, err := gh.Checks.ListCheckRunsForRef(ctx, owner, repo, c.SHA, &github.ListCheckRunsOptions{CheckName: github.Ptr(CheckName)})
	if err != nil {
		return 0, false, fmt.Errorf("listing the check runs of %s, %w", c.SHA, err)
	}
	for _, run := range runs.CheckRuns {
		if run.GetName() != CheckName {
			continue
		}
		_, _, err := gh.Checks.UpdateCheckRun(ctx, owner, repo, run.GetID(), github.UpdateCheckRunOptions{
			Name: CheckName, Status: github.Ptr("completed"), Conclusion: github.Ptr(c.Conclusion),
			CompletedAt: done, Output: output, DetailsURL: details,
		})
		if err != nil {
			return 0, false, fmt.Errorf("updating check run %d, %w", run.GetID(), err)
		}
		return run.GetID(), false, nil
	}
	run, _, err := gh.Checks.CreateCheckRun(ctx, owner, repo, github.CreateCheckRunOptions{
		Name: CheckName, HeadSHA: c.SHA, Status: github.Ptr("completed"), Conclusion: github.Ptr(c.Conclusion),
		CompletedAt: done, Output: output, DetailsURL: details,
	})
	if err != nil {
		return 0, false, fmt.Errorf("creating the check run on %s, %w", c.SHA, err)
	}
	return run.GetID(), true, nil
}

// PostStatus reports a plan as the commit status CheckName, for tokens
// that may not make check runs (a personal access token): GitHub keeps
// the latest status of each context, so a repeat replaces it.
func PostStatus(ctx context.Context, gh *github.Client, owner, repo string, c Check) error {
	state := "success"
	if c.Conclusion != Success {
		state = "failure"
	}
	status := &github.RepoStatus{State: github.Ptr(state), Context: github.Ptr(CheckName), Description: github.Ptr(cut(c.Title, maxStatusDetail))}
	if c.DetailsURL != "" {
		status.TargetURL = github.Ptr(c.DetailsURL)
	}
	if _, _, err := gh.Repositories.CreateStatus(ctx, owner, repo, c.SHA, status); err != nil {
		return fmt.Errorf("setting the status of %s, %w", c.SHA, err)
	}
	return nil
}

// cut shortens s to at most n characters, saying that it did.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	const more = "\n\n… (cut: the whole plan is in the pull request's comment)"
	runes := []rune(s)
	return string(runes[:n-utf8.RuneCountInString(more)]) + more
}
