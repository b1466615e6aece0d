package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpufleet/gpufleet/cmd/gpufleet/internal/ghcomment"
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
			body, err := readBody(file)
			if err != nil {
				return err
			}
			if !strings.HasPrefix(body, render.Marker) {
				body = render.Marker + "\n" + body
			}
			client, err := ghcomment.NewClient(token, apiURL)
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
	cmd.AddCommand(gh)
	return cmd
}

// maxBody bounds what is read as a plan: far beyond any real plan, short of
// exhausting memory.
const maxBody = 16 << 20

func readBody(file string) (string, error) {
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
	return string(data), nil
}
