// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"
)

// FuzzWebhook sends arbitrary bodies, events and signatures to the GitHub
// webhook. Whatever arrives, the handler answers without panicking, an
// unsigned or wrongly signed request is refused with 401 and triggers
// nothing, and an oversized one gets 413.
func FuzzWebhook(f *testing.F) {
	secret := []byte("fuzz-secret")
	const limit = 4096
	a, err := New(Options{Repos: []Repo{ParseRepo("https://github.com/acme/fleets", "main")}, Secret: secret, MaxPayload: limit})
	if err != nil {
		f.Fatal(err)
	}
	h := a.Handler()
	w := a.workers[0]
	f.Add(pushPayload("https://github.com/acme/fleets", "refs/heads/main"), "push", true, "")
	f.Add(pushPayload("https://github.com/acme/fleets", "refs/heads/other"), "push", true, "")
	f.Add([]byte(`{"zen":"Keep it logically awesome."}`), "ping", true, "")
	f.Add([]byte(`{"ref":`), "push", true, "")
	f.Add([]byte(`{}`), "push", false, "sha256=00")
	f.Add(bytes.Repeat([]byte("x"), limit+1), "push", true, "")
	f.Fuzz(func(t *testing.T, body []byte, event string, sign bool, forged string) {
		req := httptest.NewRequest(http.MethodPost, "/webhook/github", bytes.NewReader(body))
		req.Header.Set("X-GitHub-Event", event)
		if sign {
			req.Header.Set("X-Hub-Signature-256", Sign(secret, body))
		} else {
			req.Header.Set("X-Hub-Signature-256", forged)
		}
		before := w.triggered.Load()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		code := rec.Code
		triggered := w.triggered.Load() != before
		// Drain the trigger so the next input starts from nothing pending.
		select {
		case <-w.pending:
		default:
		}
		switch {
		case len(body) > limit:
			if code != http.StatusRequestEntityTooLarge || triggered {
				t.Fatalf("oversized body: %d, triggered %v", code, triggered)
			}
		case !sign && forged != Sign(secret, body):
			if code != http.StatusUnauthorized || triggered {
				t.Fatalf("bad signature %q: %d, triggered %v", forged, code, triggered)
			}
		case code >= 500:
			t.Fatalf("signed request: %d %s", code, rec.Body.String())
		case triggered && (event != "push" || code != http.StatusAccepted):
			t.Fatalf("event %q triggered a run with %d", event, code)
		}
	})
}
