// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"bytes"
	"encoding/json"
	"mime"
	"net/http"
	"slices"
	"strings"

	"github.com/google/go-github/v75/github"
)

// pushEvent is the part of GitHub's push event payload the agent reads.
type pushEvent struct {
	Ref        string `json:"ref"`
	Deleted    bool   `json:"deleted"`
	Repository struct {
		FullName      string `json:"full_name"`
		CloneURL      string `json:"clone_url"`
		SSHURL        string `json:"ssh_url"`
		GitURL        string `json:"git_url"`
		HTMLURL       string `json:"html_url"`
		DefaultBranch string `json:"default_branch"`
	} `json:"repository"`
}

// githubWebhook takes GitHub's webhook deliveries. Only a push to the
// branch a configured repository reconciles triggers a run; a request that
// is refused (4xx), or repeats the X-GitHub-Delivery id of one handled
// within the hour, never does; one that failed (5xx) runs when GitHub
// redelivers it. Nothing of a payload is logged but the repository and
// ref it names.
func (a *Agent) githubWebhook(w http.ResponseWriter, r *http.Request) {
	event, delivery := r.Header.Get("X-GitHub-Event"), r.Header.Get("X-GitHub-Delivery")
	log := a.log.With("delivery", delivery, "event", event)
	if a.shuttingDown.Load() {
		replyError(w, http.StatusServiceUnavailable, "shutting down")
		return
	}
	body, raw, err := readGitHubPayload(w, r, a.opts.Secret, a.opts.MaxPayload)
	if err != nil {
		code := refuse(w, err)
		log.Warn("webhook refused", "status", code, "reason", err, "remote", r.RemoteAddr)
		return
	}
	// A delivery is claimed only once its signature checks out, so a
	// forged request cannot make the agent ignore the genuine one; and it
	// is remembered only once handled, here or by the replica it is
	// passed to, so a redelivery of one that failed runs.
	if delivery != "" {
		settle, first, err := a.deliveries.claim(r.Context(), delivery)
		switch {
		case err != nil:
			replyError(w, http.StatusServiceUnavailable, "another copy of this delivery is being handled")
			return
		case !first:
			log.Info("webhook: delivery already handled; no run")
			reply(w, http.StatusOK, map[string]string{"result": "duplicate"})
			return
		}
		answer := &answered{ResponseWriter: w}
		defer func() { settle(answer.handled()) }()
		w = answer
	}
	switch event {
	case "ping":
		// GitHub sends it when a hook is created: a 200 shows the secret
		// and the URL are right.
		log.Info("webhook ping")
		reply(w, http.StatusOK, map[string]string{"result": "pong"})
		return
	case "push":
	default:
		ignore(w, "only push events trigger a run")
		return
	}
	var push pushEvent
	if err := json.Unmarshal(body, &push); err != nil {
		replyError(w, http.StatusBadRequest, "the payload is not a push event")
		return
	}
	branch, isBranch := strings.CutPrefix(push.Ref, "refs/heads/")
	switch {
	case !isBranch:
		ignore(w, "not a branch: "+push.Ref)
		return
	case push.Deleted:
		ignore(w, "the branch was deleted")
		return
	}
	workers := a.matchPush(push)
	if len(workers) == 0 {
		if owner, ok := a.othersOwner(push); ok {
			a.forwardPush(w, r, raw, owner, log.With("repository", push.Repository.FullName))
			return
		}
		log.Info("webhook for a repository not configured here", "repository", push.Repository.FullName)
		ignore(w, "no configured repository matches "+push.Repository.FullName)
		return
	}
	var triggered []string
	for _, wk := range workers {
		// Until its first clone, a repository configured without a
		// branch reconciles the remote's default branch.
		want := wk.currentBranch()
		if want == "" {
			want = push.Repository.DefaultBranch
		}
		if branch == want {
			wk.trigger("webhook")
			triggered = append(triggered, wk.name)
		}
	}
	if len(triggered) == 0 {
		ignore(w, "branch "+branch+" is not reconciled")
		return
	}
	log.Info("push: run queued", "repos", triggered, "ref", push.Ref)
	reply(w, http.StatusAccepted, map[string]any{"result": "triggered", "repos": triggered})
}

// readGitHubPayload reads a delivery in either content type a GitHub
// webhook can be set to send — JSON as it is, or form-encoded with the JSON
// in its payload field — and checks X-Hub-Signature-256 over the body as
// sent, in constant time (go-github's ValidatePayloadFromBody).
func readGitHubPayload(w http.ResponseWriter, r *http.Request, secret []byte, limit int64) (payload, raw []byte, err error) {
	body, err := readLimited(w, r, limit)
	if err != nil {
		return nil, nil, err
	}
	// GitHub always says; a sender that does not is taken to send JSON.
	mediaType := "application/json"
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mediaType, _, err = mime.ParseMediaType(ct); err != nil {
			return nil, nil, errContentType
		}
	}
	if mediaType != "application/json" && mediaType != "application/x-www-form-urlencoded" {
		return nil, nil, errContentType
	}
	payload, err = github.ValidatePayloadFromBody(mediaType, bytes.NewReader(body), r.Header.Get(github.SHA256SignatureHeader), secret)
	if err != nil {
		return nil, nil, errBadSignature
	}
	return payload, body, nil
}

// matchPush finds the configured repositories a push event is about, by
// any of the URLs GitHub gives, or else by owner/name.
func (a *Agent) matchPush(push pushEvent) []*worker {
	repo := push.Repository
	var out []*worker
	for _, u := range []string{repo.CloneURL, repo.SSHURL, repo.GitURL, repo.HTMLURL} {
		for _, w := range a.match(u) {
			if !slices.Contains(out, w) {
				out = append(out, w)
			}
		}
	}
	if len(out) == 0 {
		out = a.match(repo.FullName)
	}
	return out
}

// ignore answers a well-formed request that asks for nothing: 202, so a
// sender does not retry it, and no run.
func ignore(w http.ResponseWriter, why string) {
	reply(w, http.StatusAccepted, map[string]string{"result": "ignored", "reason": why})
}
