// SPDX-License-Identifier: Apache-2.0

package ocisim

import (
	"bytes"
	"context"
	"crypto/rsa"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/oracle/oci-go-sdk/v65/common"
	"github.com/oracle/oci-go-sdk/v65/core"

	"github.com/gpufleet/gpufleet/providers/sim"
)

// With public keys, the front verifies each signature as OCI does; the
// SDK's signature over its own request verifies with the right key only.
func TestSignatureVerified(t *testing.T) {
	for _, c := range []struct {
		name string
		keys map[string]*rsa.PublicKey
		ok   bool
	}{
		{"no keys: any well-formed signature", nil, true},
		{"the signing key", map[string]*rsa.PublicKey{keyID(): &testKey().PublicKey}, true},
		{"another key under the keyId", map[string]*rsa.PublicKey{keyID(): &otherKey().PublicKey}, false},
		{"the key under another keyId", map[string]*rsa.PublicKey{tenancy + "/" + user + "/00:00": &testKey().PublicKey}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFront(t, sim.Config{}, Options{PublicKeys: c.keys})
			_, getErr := f.compute().ListInstances(context.Background(), core.ListInstancesRequest{CompartmentId: common.String(compartment)})
			_, launchErr := f.launchWith(f.compute(), details(ad1, a10, "n"), "t")
			if c.ok {
				if getErr != nil || launchErr != nil {
					t.Fatalf("a signed list answered %v and a signed launch %v", getErr, launchErr)
				}
				return
			}
			wantServiceError(t, getErr, http.StatusUnauthorized, CodeNotAuthenticated)
			wantServiceError(t, launchErr, http.StatusUnauthorized, CodeNotAuthenticated)
			if n := len(f.world.Calls()); n != 0 {
				t.Errorf("refused requests reached the world: %v", f.world.Calls())
			}
			if n := len(f.world.Instances()); n != 0 {
				t.Errorf("a refused launch made %d instances", n)
			}
		})
	}
}

// A signature covers the request's target and host: one moved to another
// path or host no longer verifies.
func TestSignatureCoversTargetAndHost(t *testing.T) {
	f := newFront(t, sim.Config{}, Options{PublicKeys: map[string]*rsa.PublicKey{keyID(): &testKey().PublicKey}})
	req := signed(t, testKey(), "GET", computeHost, "/20160918/instances?compartmentId="+compartment, nil)
	if a := f.send(req); a.status != http.StatusOK {
		t.Fatalf("a signed request answered %d %s", a.status, a.err.Message)
	}
	moved := signed(t, testKey(), "GET", computeHost, "/20160918/instances?compartmentId="+compartment, nil)
	moved.URL.RawQuery = "compartmentId=ocid1.compartment.oc1..other"
	wantAnswer(t, f.send(moved), http.StatusUnauthorized, CodeNotAuthenticated)
	rehosted := signed(t, testKey(), "GET", computeHost, "/20160918/instances?compartmentId="+compartment, nil)
	rehosted.URL.Host = "iaas.eu-frankfurt-1.oraclecloud.com"
	wantAnswer(t, f.send(rehosted), http.StatusUnauthorized, CodeNotAuthenticated)
}

// The form of a signature, its date and a body's digest are checked
// whether or not the front has keys to verify with.
func TestSignatureForm(t *testing.T) {
	launch := mustJSON(t, map[string]any{"availabilityDomain": ad1, "compartmentId": compartment, "shape": a10})
	for _, c := range []struct {
		name   string
		method string
		body   []byte
		spoil  func(r *http.Request)
		reason string
	}{
		{"no authorization", "GET", nil, func(r *http.Request) { r.Header.Del("Authorization") }, "no Signature"},
		{"a bearer token", "GET", nil, func(r *http.Request) { r.Header.Set("Authorization", "Bearer abc") }, "no Signature"},
		{"another algorithm", "GET", nil, func(r *http.Request) { replaceAuth(r, `algorithm="rsa-sha256"`, `algorithm="hmac-sha256"`) }, "algorithm"},
		{"a keyId that is not tenancy/user/fingerprint", "GET", nil, func(r *http.Request) { replaceAuth(r, keyID(), tenancy) }, "keyId"},
		{"a signature that is not base64", "GET", nil, func(r *http.Request) { replaceAuth(r, `signature="`, `signature="%%`) }, "base64"},
		{"an unterminated value", "GET", nil, func(r *http.Request) {
			r.Header.Set("Authorization", strings.TrimSuffix(r.Header.Get("Authorization"), `"`))
		}, "unterminated"},
		{"a signature without the host", "GET", nil, func(r *http.Request) { replaceAuth(r, `(request-target) host"`, `(request-target)"`) }, "host"},
		{"a signature without the date", "GET", nil, func(r *http.Request) { replaceAuth(r, `headers="date `, `headers="`) }, "date"},
		{"no date", "GET", nil, func(r *http.Request) { r.Header.Del("Date") }, "date"},
		{"a date that is not one", "GET", nil, func(r *http.Request) { r.Header.Set("Date", "yesterday") }, "date"},
		{"a body that is not the one signed", "POST", launch, func(r *http.Request) {
			spoilt := bytes.Replace(launch, []byte(a10), []byte(a100), 1)
			r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(spoilt)), int64(len(spoilt))
			r.Header.Set("Content-Length", "")
		}, "x-content-sha256"},
		{"a body without its digest signed", "POST", launch, func(r *http.Request) {
			replaceAuth(r, ` x-content-sha256"`, `"`)
		}, "x-content-sha256"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, keys := range []map[string]*rsa.PublicKey{nil, {keyID(): &testKey().PublicKey}} {
				f := newFront(t, sim.Config{}, Options{PublicKeys: keys})
				path := "/20160918/instances"
				if c.method == "GET" {
					path += "?compartmentId=" + compartment
				}
				req := signed(t, testKey(), c.method, computeHost, path, c.body)
				c.spoil(req)
				a := f.send(req)
				wantAnswer(t, a, http.StatusUnauthorized, CodeNotAuthenticated)
				if !strings.Contains(a.err.Message, c.reason) {
					t.Errorf("refused with %q, which does not say %s", a.err.Message, c.reason)
				}
				if n := len(f.world.Instances()); n != 0 {
					t.Errorf("a refused launch made %d instances", n)
				}
			}
		})
	}
}

// replaceAuth edits a request's Authorization header.
func replaceAuth(r *http.Request, old, new string) {
	r.Header.Set("Authorization", strings.Replace(r.Header.Get("Authorization"), old, new, 1))
}
