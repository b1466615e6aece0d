// SPDX-License-Identifier: Apache-2.0

package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpufleet/gpufleet/cmd/gpufleet/internal/ghcomment"
	"github.com/gpufleet/gpufleet/cmd/gpufleet/internal/glcomment"
	"github.com/gpufleet/gpufleet/providers/outbound"
	"github.com/gpufleet/gpufleet/reconcile/render"
)

func (a *app) commentCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "comment",
		Short: "Post a plan as a pull-request comment",
	}
	var pr int
	var slug, file, apiURL string
	gh := &cobra.Command{
		Use:   "github",
		Short: "Post or update the one gpufleet plan comment of a GitHub pull request",
		Long: `github posts the plan read from --file (or standard input) on a pull
request, or updates the comment it posted before, which it finds by a hidden
marker: one sticky comment, never a second. A plan longer than GitHub allows
is split into parts. The token comes from GITHUB_TOKEN only.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			owner, repo, ok := strings.Cut(slug, "/")
			if !ok || owner == "" || repo == "" || strings.Contains(repo, "/") {
				return fmt.Errorf("--repo-slug must be OWNER/NAME, not %q", slug)
			}
			if pr <= 0 {
				return errors.New("--pr must be the pull request's number")
			}
			token := os.Getenv("GITHUB_TOKEN")
			if token == "" {
				return errors.New("GITHUB_TOKEN is not set")
			}
			body, err := a.readBody(file)
			if err != nil {
				return err
			}
			if !strings.HasPrefix(body, render.Marker) {
				body = render.Marker + "\n" + body
			}
			client, err := ghcomment.NewClient(token, apiURL, ghcomment.Options{AllowHTTP: outbound.AllowHTTP(os.Getenv)})
			if err != nil {
				return err
			}
			res, err := ghcomment.Post(cmd.Context(), client, owner, repo, pr, render.Marker, body)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "plan comment on %s#%d: %d parts, %d created, %d updated, %d deleted\n",
				slug, pr, res.Parts, len(res.Created), len(res.Updated), len(res.Deleted))
			return nil
		},
	}
	gh.Flags().IntVar(&pr, "pr", 0, "pull request number")
	gh.Flags().StringVar(&slug, "repo-slug", envOr("GITHUB_REPOSITORY", ""), "OWNER/NAME of the repository [GITHUB_REPOSITORY]")
	gh.Flags().StringVar(&file, "file", "-", "the plan in Markdown; - for standard input")
	gh.Flags().StringVar(&apiURL, "github-url", envOr("GITHUB_API_URL", ""), "GitHub API root, for GitHub Enterprise [GITHUB_API_URL]")
	cmd.AddCommand(gh, a.commentGitLabCommand())
	return cmd
}

func (a *app) commentGitLabCommand() *cobra.Command {
	var mr int64
	var project, file, apiURL string
	gl := &cobra.Command{
		Use:   "gitlab",
		Short: "Post or update the one gpufleet plan note of a GitLab merge request",
		Long: `gitlab posts the plan read from --file (or standard input) as a note on a
merge request, or updates the note it posted before, which it finds by a
hidden marker: one sticky note, never a second. A plan longer than GitLab
allows in a note (1,000,000 characters) is split into parts, and parts left
over from a longer plan are deleted.

The token comes from the environment only, never a flag: GITLAB_TOKEN (a
project or personal access token with the api scope, sent as PRIVATE-TOKEN),
else CI_JOB_TOKEN (sent as JOB-TOKEN; most GitLab versions do not let a job
token write notes, so set GITLAB_TOKEN as a masked CI/CD variable). In a
merge request pipeline GitLab CI sets CI_PROJECT_ID, CI_MERGE_REQUEST_IID and
CI_API_V4_URL, the defaults of --project, --mr and --api-url.`,
		Example: `  gpufleet comment gitlab --file plan.md                 # in a merge request pipeline
  GITLAB_TOKEN=… gpufleet comment gitlab --project acme/fleets --mr 7 --file plan.md
  gpufleet plan --repo . --base main -o markdown | gpufleet comment gitlab --api-url https://gitlab.example.com/api/v4 --project 42 --mr 7`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if project == "" {
				return errors.New("--project must be the project's ID or path (GROUP/NAME)")
			}
			if mr <= 0 {
				return errors.New("--mr must be the merge request's IID, the number after !")
			}
			token, err := glcomment.TokenFromEnv(os.Getenv)
			if err != nil {
				return err
			}
			body, err := a.readBody(file)
			if err != nil {
				return err
			}
			if !strings.HasPrefix(body, render.Marker) {
				body = render.Marker + "\n" + body
			}
			client, err := glcomment.NewClient(token, apiURL, glcomment.Options{AllowHTTP: outbound.AllowHTTP(os.Getenv)})
			if err != nil {
				return err
			}
			target := glcomment.MergeRequest{Project: project, IID: mr}
			res, err := client.Post(cmd.Context(), target, render.Marker, body)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "plan note on %s: %d parts, %d created, %d updated, %d deleted\n",
				target, res.Parts, len(res.Created), len(res.Updated), len(res.Deleted))
			return nil
		},
	}
	// A malformed CI_MERGE_REQUEST_IID leaves no default, and --mr says so.
	defaultMR, _ := strconv.ParseInt(os.Getenv("CI_MERGE_REQUEST_IID"), 10, 64)
	gl.Flags().Int64Var(&mr, "mr", defaultMR, "merge request IID, the number after ! [CI_MERGE_REQUEST_IID]")
	gl.Flags().StringVar(&project, "project", envOr("CI_PROJECT_ID", ""), "the project's numeric ID or path, GROUP/NAME [CI_PROJECT_ID]")
	gl.Flags().StringVar(&file, "file", "-", "the plan in Markdown; - for standard input")
	gl.Flags().StringVar(&apiURL, "api-url", envOr("CI_API_V4_URL", glcomment.DefaultAPIURL), "GitLab API root, for self-managed GitLab [CI_API_V4_URL]")
	return gl
}

// maxBody bounds what is read as a plan: far beyond any real plan, short of
// exhausting memory.
const maxBody = 16 << 20

// readBody reads a plan to post, masked: what it quotes goes to another
// host, in public.
func (a *app) readBody(file string) (string, error) {
	var r io.Reader = os.Stdin
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return "", err
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, maxBody+1))
	if err != nil {
		return "", err
	}
	if len(data) > maxBody {
		return "", fmt.Errorf("the plan is over %d bytes", maxBody)
	}
	return a.secrets.String(string(data)), nil
}
