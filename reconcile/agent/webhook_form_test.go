// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"net/http"
	"net/url"
	"testing"
)

// GitHub sends a webhook as JSON or, the default when a hook is made in
// the web interface, form-encoded with the JSON in its payload field. Both
// trigger a run when signed over the body as sent, and neither when not.
func TestWebhooksOfEitherContentType(t *testing.T) {
	payload := pushPayload("https://github.com/acme/fleets.git", "refs/heads/main")
	form := []byte(url.Values{"payload": {string(payload)}}.Encode())
	tests := []struct {
		name        string
		contentType string
		body        []byte
		signed      []byte // what the signature covers
		want        int
		triggers    int64
	}{
		{"json", "application/json", payload, payload, http.StatusAccepted, 1},
		{"json with a charset", "application/json; charset=utf-8", payload, payload, http.StatusAccepted, 1},
		{"form", "application/x-www-form-urlencoded", form, form, http.StatusAccepted, 1},
		{"form signed over the payload alone", "application/x-www-form-urlencoded", form, payload, http.StatusUnauthorized, 0},
		{"form sent as json", "application/json", form, form, http.StatusBadRequest, 0},
		{"another type", "text/plain", payload, payload, http.StatusUnsupportedMediaType, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, w := webhookAgent(t)
			header := githubHeader("push", tt.signed, "", "")
			header.Set("Content-Type", tt.contentType)
			code, body := deliver(a.Handler(), header, tt.body)
			if code != tt.want || w.triggered.Load() != tt.triggers {
				t.Errorf("answer %d %s, %d runs; want %d, %d runs", code, body, w.triggered.Load(), tt.want, tt.triggers)
			}
		})
	}
}
