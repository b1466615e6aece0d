// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// errTooLarge and errBadSignature are why a request is refused before its
// body is looked at.
var (
	errTooLarge     = errors.New("payload too large")
	errBadSignature = errors.New("missing or invalid signature")
	errContentType  = errors.New("the content type is neither application/json nor application/x-www-form-urlencoded")
)

// readSigned reads a request body of at most limit bytes and checks the
// signature in the header against it: "sha256=" and the hex HMAC-SHA256 of
// the body under the secret, as GitHub sends X-Hub-Signature-256.
func readSigned(w http.ResponseWriter, r *http.Request, secret []byte, header string, limit int64) ([]byte, error) {
	body, err := readLimited(w, r, limit)
	if err != nil {
		return nil, err
	}
	if !validSignature(secret, body, r.Header.Get(header)) {
		return nil, errBadSignature
	}
	return body, nil
}

// readLimited reads a request body of at most limit bytes. A body declared
// too large is refused before a byte of it is read; one that turns out
// too large, as soon as it passes the limit.
func readLimited(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	if r.ContentLength > limit {
		return nil, errTooLarge
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, errTooLarge
		}
		return nil, fmt.Errorf("reading the request, %w", err)
	}
	return body, nil
}

// validSignature compares in constant time, so the time an answer takes
// tells an attacker nothing about how much of a forged signature was
// right.
func validSignature(secret, body []byte, header string) bool {
	hexSum, ok := strings.CutPrefix(header, "sha256=")
	if !ok {
		return false
	}
	got, err := hex.DecodeString(hexSum)
	if err != nil {
		return false
	}
	return hmac.Equal(got, digest(secret, body))
}

// Sign returns the signature header value of a body: what a sender of
// /trigger puts in X-Gpufleet-Signature.
func Sign(secret, body []byte) string {
	return "sha256=" + hex.EncodeToString(digest(secret, body))
}

func digest(secret, body []byte) []byte {
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	return mac.Sum(nil)
}

// refuse answers a request whose body could not be read or trusted.
func refuse(w http.ResponseWriter, err error) int {
	switch {
	case errors.Is(err, errTooLarge):
		// Closing the connection spares reading the rest of the body,
		// which the server would otherwise drain to keep it alive.
		w.Header().Set("Connection", "close")
		replyError(w, http.StatusRequestEntityTooLarge, err.Error())
		return http.StatusRequestEntityTooLarge
	case errors.Is(err, errBadSignature):
		replyError(w, http.StatusUnauthorized, err.Error())
		return http.StatusUnauthorized
	case errors.Is(err, errContentType):
		replyError(w, http.StatusUnsupportedMediaType, err.Error())
		return http.StatusUnsupportedMediaType
	}
	replyError(w, http.StatusBadRequest, "could not read the request")
	return http.StatusBadRequest
}
