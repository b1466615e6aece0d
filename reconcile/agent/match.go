// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"net/url"
	"path/filepath"
	"strings"
)

// repoKey reduces a repository URL to host/path in lower case, without
// scheme, user, port, trailing slash or .git, so that the HTTPS, SSH and
// scp-like forms of one repository, as a webhook names them, compare
// equal to the form it was configured with.
func repoKey(raw string) string {
	s := strings.TrimSpace(raw)
	switch {
	case strings.Contains(s, "://"):
		u, err := url.Parse(s)
		if err != nil {
			return strings.ToLower(s)
		}
		s = u.Hostname() + u.Path
	case isSCPLike(s):
		host, path, _ := strings.Cut(s, ":")
		if _, h, ok := strings.Cut(host, "@"); ok {
			host = h
		}
		s = host + "/" + strings.TrimPrefix(path, "/")
	default:
		// A local checkout: the same directory, however it was written.
		if abs, err := filepath.Abs(s); err == nil {
			s = filepath.ToSlash(abs)
		}
	}
	s = strings.TrimSuffix(s, "/")
	s = strings.TrimSuffix(s, ".git")
	return strings.ToLower(s)
}

// isSCPLike reports whether s is Git's user@host:path form: a colon
// before any slash.
func isSCPLike(s string) bool {
	colon := strings.Index(s, ":")
	slash := strings.Index(s, "/")
	return colon > 0 && (slash < 0 || colon < slash) && !filepath.IsAbs(s)
}

// displayName is a repository URL fit for logs and metric labels: a user
// or token in it is dropped.
func displayName(raw string) string {
	if strings.Contains(raw, "://") {
		if u, err := url.Parse(raw); err == nil && u.User != nil {
			u.User = nil
			return u.String()
		}
	}
	return raw
}

// hideCredentials hides from a message about a repository the credentials its URL
// may carry: the URL wherever it appears, its user information before an
// @, and the password, or the token given as an HTTPS user name, anywhere
// else.
func hideCredentials(msg, rawURL string) string {
	if rawURL == "" {
		return msg
	}
	msg = strings.ReplaceAll(msg, rawURL, displayName(rawURL))
	u, err := url.Parse(rawURL)
	if err != nil || u.User == nil {
		return msg
	}
	msg = strings.ReplaceAll(msg, u.User.String()+"@", "")
	secret, ok := u.User.Password()
	if !ok && strings.HasPrefix(u.Scheme, "http") {
		secret = u.User.Username()
	}
	if secret == "" {
		return msg
	}
	return strings.ReplaceAll(msg, secret, "REDACTED")
}

// match returns the configured repositories ref names: a URL in any form,
// or owner/name as GitHub's full_name gives it.
func (a *Agent) match(ref string) []*worker {
	if strings.TrimSpace(ref) == "" {
		return nil
	}
	key := repoKey(ref)
	var out []*worker
	for _, w := range a.workers {
		if w.key == key {
			out = append(out, w)
		}
	}
	if len(out) > 0 || strings.Count(ref, "/") != 1 || strings.Contains(ref, ":") {
		return out
	}
	// owner/name: the last two parts of a configured URL's path.
	name := "/" + strings.ToLower(strings.TrimSuffix(ref, ".git"))
	for _, w := range a.workers {
		if strings.HasSuffix(w.key, name) {
			out = append(out, w)
		}
	}
	return out
}
