// SPDX-License-Identifier: Apache-2.0

package glcomment

import (
	"errors"
	"fmt"
)

// Token is a GitLab API token and the variable it came from. It prints as
// its source, never as its value, so a stray %v cannot leak it.
type Token struct {
	value string
	// Source is the environment variable that held it.
	Source string
	// Job says it is a CI/CD job token, sent as JOB-TOKEN; any other token
	// is sent as PRIVATE-TOKEN.
	Job bool
}

// The variables a token is read from, in order.
const (
	EnvToken    = "GITLAB_TOKEN"
	EnvJobToken = "CI_JOB_TOKEN"
)

// TokenFromEnv reads the token from GITLAB_TOKEN (a personal, project or
// group access token) or, when that is unset, from the CI_JOB_TOKEN GitLab
// CI gives every job.
func TokenFromEnv(getenv func(string) string) (Token, error) {
	if v := getenv(EnvToken); v != "" {
		return Token{value: v, Source: EnvToken}, nil
	}
	if v := getenv(EnvJobToken); v != "" {
		return Token{value: v, Source: EnvJobToken, Job: true}, nil
	}
	return Token{}, errors.New(EnvToken + " is not set (nor " + EnvJobToken + ")")
}

func (t Token) String() string { return "token from " + t.Source }

// GoString keeps %#v from printing the value.
func (t Token) GoString() string { return fmt.Sprintf("glcomment.Token{Source: %q}", t.Source) }
