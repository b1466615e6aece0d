// SPDX-License-Identifier: Apache-2.0

package armsim

import (
	"net/http"
	"strings"
)

// ARM's front door turns away a request without a bearer token before it
// routes it, so a client that forgets its credential fails here as it
// would in Azure instead of passing unnoticed. The emulator has no
// Microsoft Entra ID to ask, so any token is taken: only the header's
// shape is checked.

// authorityURI is where ARM's challenge tells a client to get a token.
const authorityURI = "https://login.microsoftonline.com/common"

// authenticate answers a request whose Authorization header is missing or
// is not a bearer token with ARM's 401 and its challenge, and reports
// whether the request may go on.
func (s *Server) authenticate(w http.ResponseWriter, r *http.Request) bool {
	e, description, ok := checkAuthorization(r.Header.Values("Authorization"))
	if ok {
		return true
	}
	w.Header().Set("WWW-Authenticate", `Bearer authorization_uri="`+authorityURI+`", error="invalid_token", error_description="`+description+`"`)
	s.writeError(w, e)
	return false
}

// checkAuthorization reads the Authorization header's values: one
// "Bearer <token>" passes; otherwise it returns ARM's error and the
// challenge's description of it.
func checkAuthorization(values []string) (armError, string, bool) {
	if len(values) == 0 || len(values) == 1 && strings.TrimSpace(values[0]) == "" {
		return armError{Status: http.StatusUnauthorized, Code: "AuthenticationFailed",
			Message: "Authentication failed. The 'Authorization' header is missing."}, "The authentication failed because of missing 'Authorization' header.", false
	}
	scheme, token, _ := strings.Cut(strings.TrimSpace(values[0]), " ")
	if len(values) == 1 && strings.EqualFold(scheme, "Bearer") && strings.TrimSpace(token) != "" {
		return armError{}, "", true
	}
	return armError{Status: http.StatusUnauthorized, Code: "InvalidAuthenticationToken",
		Message: "The access token is invalid."}, "The access token is invalid.", false
}
