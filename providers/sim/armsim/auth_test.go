// SPDX-License-Identifier: Apache-2.0

package armsim

import (
	"io"
	"net/http"
	"testing"
)

const groupsPath = "/subscriptions/" + testSub + "/resourcegroups?api-version=2022-09-01"

// A request without a bearer token is turned away before it is routed,
// with ARM's 401, its body and its challenge; any bearer token passes.
func TestAuthentication(t *testing.T) {
	f := newFront(t, frontConfig{})
	const missingBody = `{"error":{"code":"AuthenticationFailed","message":"Authentication failed. The 'Authorization' header is missing."}}`
	const missingChallenge = `Bearer authorization_uri="https://login.microsoftonline.com/common", error="invalid_token", error_description="The authentication failed because of missing 'Authorization' header."`
	const invalidChallenge = `Bearer authorization_uri="https://login.microsoftonline.com/common", error="invalid_token", error_description="The access token is invalid."`
	tests := []struct {
		name          string
		authorization []string // nil: no header
		path          string
		wantStatus    int
		wantCode      string
		wantBody      string
		wantChallenge string
	}{
		{name: "no header", path: groupsPath, wantStatus: 401, wantCode: "AuthenticationFailed", wantBody: missingBody, wantChallenge: missingChallenge},
		{name: "an empty header", authorization: []string{""}, path: groupsPath, wantStatus: 401, wantCode: "AuthenticationFailed", wantBody: missingBody, wantChallenge: missingChallenge},
		{name: "no header on a path ARM has no route for", path: "/nothing", wantStatus: 401, wantCode: "AuthenticationFailed", wantBody: missingBody, wantChallenge: missingChallenge},
		{name: "basic credentials", authorization: []string{"Basic dXNlcjpwYXNz"}, path: groupsPath, wantStatus: 401, wantCode: "InvalidAuthenticationToken", wantChallenge: invalidChallenge},
		{name: "a bearer without a token", authorization: []string{"Bearer "}, path: groupsPath, wantStatus: 401, wantCode: "InvalidAuthenticationToken", wantChallenge: invalidChallenge},
		{name: "a bare token", authorization: []string{"eyJ0eXAi"}, path: groupsPath, wantStatus: 401, wantCode: "InvalidAuthenticationToken", wantChallenge: invalidChallenge},
		{name: "two headers", authorization: []string{"Bearer a", "Bearer b"}, path: groupsPath, wantStatus: 401, wantCode: "InvalidAuthenticationToken", wantChallenge: invalidChallenge},
		{name: "any bearer token", authorization: []string{"Bearer anything"}, path: groupsPath, wantStatus: 200},
		{name: "the scheme in any case", authorization: []string{"bearer anything"}, path: groupsPath, wantStatus: 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := rawRequest(t, http.MethodGet, f.url+tt.path, nil, http.Header{"Authorization": tt.authorization})
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.wantStatus, body)
			}
			if got := resp.Header.Get("WWW-Authenticate"); got != tt.wantChallenge {
				t.Errorf("WWW-Authenticate %q, want %q", got, tt.wantChallenge)
			}
			if got := resp.Header.Get("x-ms-error-code"); got != tt.wantCode {
				t.Errorf("x-ms-error-code %q, want %q", got, tt.wantCode)
			}
			if tt.wantBody != "" && string(body) != tt.wantBody {
				t.Errorf("body %s, want %s", body, tt.wantBody)
			}
		})
	}
}
