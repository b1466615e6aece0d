// SPDX-License-Identifier: Apache-2.0

package glcomment

import (
	"errors"
	"fmt"
	"net/http"

	gitlab "gitlab.com/gitlab-org/api/client-go"
)

// Sentinels for what GitLab refused, to match with errors.Is.
var (
	// ErrAuth: GitLab does not know the token (401).
	ErrAuth = errors.New("GitLab refused the token")
	// ErrForbidden: the token is known but may not do this (403).
	ErrForbidden = errors.New("the token may not write notes on this merge request")
	// ErrNotFound: no such project or merge request, or the token may not
	// see it (GitLab answers 404 for both).
	ErrNotFound = errors.New("merge request not found (or the token may not read it)")
)

// explain wraps a failed call in what was being done and, where GitLab
// refused the token, what to do about it. GitLab's answers never hold the
// token, and neither does anything added here.
func (c *Client) explain(doing string, err error) error {
	var er *gitlab.ErrorResponse
	switch {
	case errors.Is(err, gitlab.ErrNotFound):
		return fmt.Errorf("%s, %w", doing, ErrNotFound)
	case errors.As(err, &er) && er.HasStatusCode(http.StatusUnauthorized):
		return fmt.Errorf("%s, %w in %s (401 Unauthorized): it is unknown, expired or revoked", doing, ErrAuth, c.token.Source)
	case errors.As(err, &er) && er.HasStatusCode(http.StatusForbidden):
		hint := "it needs the api scope and at least the Reporter role"
		if c.token.Job {
			hint = "a CI/CD job token cannot write merge request notes on most GitLab versions: set " + EnvToken + " to a project access token with the api scope"
		}
		return fmt.Errorf("%s, %w (403 Forbidden, token from %s): %s", doing, ErrForbidden, c.token.Source, hint)
	}
	return fmt.Errorf("%s, %w", doing, err)
}
