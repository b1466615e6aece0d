// SPDX-License-Identifier: Apache-2.0

package glcomment

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestBackoff(t *testing.T) {
	now := time.Now()
	tests := []struct {
		name     string
		status   int
		header   http.Header
		attempt  int
		min, max time.Duration
		want     time.Duration
	}{
		{"a server error doubles from the least", 502, nil, 0, time.Second, time.Minute, time.Second},
		{"the third retry", 500, nil, 3, time.Second, time.Minute, 8 * time.Second},
		{"never past the most", 500, nil, 20, time.Second, time.Minute, time.Minute},
		{"Retry-After in seconds", 429, http.Header{"Retry-After": {"7"}}, 0, time.Second, time.Minute, 7 * time.Second},
		{"Retry-After past the most", 429, http.Header{"Retry-After": {"3600"}}, 0, time.Second, time.Minute, time.Minute},
		{"Retry-After on a 503", 503, http.Header{"Retry-After": {"4"}}, 2, time.Second, time.Minute, 4 * time.Second},
		{"Retry-After of nothing waits the least", 429, http.Header{"Retry-After": {"0"}}, 0, time.Second, time.Minute, time.Second},
		{"RateLimit-Reset", 429, http.Header{"Ratelimit-Reset": {fmt.Sprint(now.Add(30 * time.Second).Unix())}}, 0, time.Second, time.Minute, 30 * time.Second},
		{"a 429 without a hint doubles", 429, nil, 1, time.Second, time.Minute, 2 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := backoff(tt.min, tt.max, tt.attempt, &http.Response{StatusCode: tt.status, Header: tt.header})
			// RateLimit-Reset counts whole seconds from now.
			if d := got - tt.want; d > time.Second || d < -time.Second {
				t.Errorf("backoff = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestTokenFromEnv(t *testing.T) {
	tests := []struct {
		name   string
		env    map[string]string
		source string
		job    bool
		err    string
	}{
		{"an access token", map[string]string{"GITLAB_TOKEN": "glpat-a", "CI_JOB_TOKEN": "glcbt-b"}, "GITLAB_TOKEN", false, ""},
		{"the job's token", map[string]string{"CI_JOB_TOKEN": "glcbt-b"}, "CI_JOB_TOKEN", true, ""},
		{"an empty GITLAB_TOKEN is unset", map[string]string{"GITLAB_TOKEN": "", "CI_JOB_TOKEN": "glcbt-b"}, "CI_JOB_TOKEN", true, ""},
		{"none", nil, "", false, "GITLAB_TOKEN is not set (nor CI_JOB_TOKEN)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok, err := TokenFromEnv(func(k string) string { return tt.env[k] })
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || tok.Source != tt.source || tok.Job != tt.job || tok.value != tt.env[tt.source] {
				t.Fatalf("TokenFromEnv = %#v, %v", tok, err)
			}
			for _, format := range []string{"%v", "%+v", "%#v", "%s", "%q"} {
				if s := fmt.Sprintf(format, tok); strings.Contains(s, tok.value) {
					t.Errorf("%s prints the token: %s", format, s)
				}
			}
		})
	}
}

func TestNewClientRefusesABadURL(t *testing.T) {
	for _, u := range []string{"gitlab.example.com/api/v4", "ftp://gitlab.example.com", "https://"} {
		if _, err := NewClient(Token{value: "t", Source: EnvToken}, u, Options{}); err == nil {
			t.Errorf("NewClient(%q) made a client", u)
		}
	}
}
