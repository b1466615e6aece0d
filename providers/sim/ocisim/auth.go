// SPDX-License-Identifier: Apache-2.0

package ocisim

import (
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// OCI signs every request after draft-cavage-http-signatures-08: the
// Authorization header names the key, the headers signed and an RSA
// PKCS#1 v1.5 signature over their SHA-256. The front builds the signing
// string exactly as the SDK does (common/http_signer.go), so a signature
// verifies here if and only if it would at OCI.

// signature is a request's parsed Authorization header.
type signature struct {
	keyID   string
	headers []string
	value   []byte
}

// hasBody reports whether OCI requires a method's body to be signed, as
// the SDK signs it: POST, PUT and PATCH.
func hasBody(method string) bool {
	return method == http.MethodPost || method == http.MethodPut || method == http.MethodPatch
}

// authenticate checks a request's signature and returns the caller's
// tenancy and, for a method with a body, the body, read whole to check
// its digest. The form of the signature, its date and the body's digest
// are always checked; the signature itself is verified when the front
// has public keys.
//
// The date is not compared with the world's clock, as OCI compares it
// with its own (within five minutes): a world's clock may be a test's,
// far from the wall clock the SDK dates requests by.
func (s *Server) authenticate(r *http.Request) (string, []byte, error) {
	sig, err := parseSignature(r.Header.Get("Authorization"))
	if err != nil {
		return "", nil, errNotAuthenticated(err.Error())
	}
	tenancy, _, _ := strings.Cut(sig.keyID, "/")
	required := []string{"(request-target)", "host"}
	if hasBody(r.Method) {
		required = append(required, "content-length", "content-type", "x-content-sha256")
	}
	for _, h := range required {
		if !slices.Contains(sig.headers, h) {
			return "", nil, errNotAuthenticated(fmt.Sprintf("the signature does not cover %s", h))
		}
	}
	if !slices.Contains(sig.headers, "date") && !slices.Contains(sig.headers, "x-date") {
		return "", nil, errNotAuthenticated("the signature covers neither date nor x-date")
	}
	for _, h := range sig.headers {
		if h != "(request-target)" && h != "host" && headerValue(r, h) == "" {
			return "", nil, errNotAuthenticated(fmt.Sprintf("the signed header %s is missing", h))
		}
	}
	if date := headerValue(r, "date"); date != "" {
		if _, err := http.ParseTime(date); err != nil {
			return "", nil, errNotAuthenticated(fmt.Sprintf("the date %q is not an HTTP date", date))
		}
	}
	var body []byte
	if hasBody(r.Method) {
		if body, err = readBody(r); err != nil {
			return "", nil, err
		}
		sum := sha256.Sum256(body)
		if got := r.Header.Get("x-content-sha256"); got != base64.StdEncoding.EncodeToString(sum[:]) {
			return "", nil, errNotAuthenticated("the body's SHA-256 is not the signed x-content-sha256")
		}
	}
	if len(s.opts.PublicKeys) > 0 {
		key, ok := s.opts.PublicKeys[sig.keyID]
		if !ok {
			return "", nil, errNotAuthenticated(fmt.Sprintf("the key %s is not known", sig.keyID))
		}
		digest := sha256.Sum256([]byte(signingString(r, sig.headers)))
		if rsa.VerifyPKCS1v15(key, crypto.SHA256, digest[:], sig.value) != nil {
			return "", nil, errNotAuthenticated("the signature does not verify")
		}
	}
	return tenancy, body, nil
}

// parseSignature reads an Authorization header of the form
//
//	Signature version="1",headers="date (request-target) host",keyId="<tenancy>/<user>/<fingerprint>",algorithm="rsa-sha256",signature="<base64>"
func parseSignature(auth string) (signature, error) {
	rest, ok := strings.CutPrefix(auth, "Signature ")
	if !ok {
		return signature{}, errors.New("the request carries no Signature authorization")
	}
	params := map[string]string{}
	for rest = strings.TrimSpace(rest); rest != ""; {
		name, after, ok := strings.Cut(rest, `="`)
		if !ok {
			return signature{}, errors.New("the Authorization header is not a list of name=\"value\" pairs")
		}
		value, after, ok := strings.Cut(after, `"`)
		if !ok {
			return signature{}, errors.New("the Authorization header has an unterminated value")
		}
		params[strings.TrimSpace(name)] = value
		rest = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(after), ","))
	}
	if v, ok := params["version"]; ok && v != "1" {
		return signature{}, fmt.Errorf("signature version %q is not 1", v)
	}
	if a := params["algorithm"]; a != "rsa-sha256" {
		return signature{}, fmt.Errorf("the algorithm %q is not rsa-sha256", a)
	}
	sig := signature{keyID: params["keyId"]}
	if parts := strings.Split(sig.keyID, "/"); len(parts) != 3 || slices.Contains(parts, "") {
		return signature{}, fmt.Errorf("the keyId %q is not <tenancy>/<user>/<fingerprint>", sig.keyID)
	}
	for _, h := range strings.Fields(params["headers"]) {
		sig.headers = append(sig.headers, strings.ToLower(h))
	}
	if len(sig.headers) == 0 {
		return signature{}, errors.New("the signature names no headers")
	}
	var err error
	if sig.value, err = base64.StdEncoding.DecodeString(params["signature"]); err != nil || len(sig.value) == 0 {
		return signature{}, errors.New("the signature is not base64")
	}
	return sig, nil
}

// signingString is what a request's signature signs: each signed header
// as "name: value", one a line, in the order signed, (request-target)
// being the lower-case method and the request's URI as sent.
func signingString(r *http.Request, headers []string) string {
	lines := make([]string, len(headers))
	for i, h := range headers {
		var value string
		switch h {
		case "(request-target)":
			uri := r.RequestURI
			if uri == "" {
				// A request built in process rather than read off the wire.
				uri = r.URL.RequestURI()
			}
			value = strings.ToLower(r.Method) + " " + uri
		case "host":
			value = r.Host
		default:
			value = headerValue(r, h)
		}
		lines[i] = h + ": " + value
	}
	return strings.Join(lines, "\n")
}

// headerValue is a request header as it was sent. Content-Length is the
// request's length when the server keeps it apart from the headers.
func headerValue(r *http.Request, name string) string {
	v := r.Header.Get(name)
	if v == "" && name == "content-length" && r.ContentLength >= 0 && hasBody(r.Method) {
		v = strconv.FormatInt(r.ContentLength, 10)
	}
	return v
}

// readBody reads a request's body whole.
func readBody(r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(r.Body)
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return nil, errCannotParse(fmt.Sprintf("the body is over %d bytes.", tooBig.Limit))
	case err != nil:
		return nil, errCannotParse("the body could not be read.")
	}
	return body, nil
}
