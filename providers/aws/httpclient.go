// SPDX-License-Identifier: Apache-2.0

package aws

import (
	"bytes"
	"io"
	"net/http"
)

// LoopbackHTTPClient returns an HTTP client for aws-sdk-go-v2 clients
// pointed at an emulator on loopback (Options.HTTPClient,
// ec2.Options.HTTPClient, and the Price List client's).
//
// Against a server as quick as gpufleet's emulator, the SDK trips over its own race
// (aws/aws-sdk-go-v2#1825, #2737): smithy-go closes the request body as
// soon as the response headers arrive, while net/http's write loop is
// still checking that body for trailing bytes; the closed body answers
// that check with an error, and the transport tears down the connection
// under the response still being read ("use of closed network
// connection"). Over a real network the response comes too late to
// matter. The standard retryer retries the failure, but with retries off,
// or where calls are counted, it shows. This client hands the transport a
// private copy of each request body, which the SDK cannot close early.
func LoopbackHTTPClient() *http.Client {
	return &http.Client{Transport: privateBodies{next: http.DefaultTransport.(*http.Transport).Clone()}}
}

type privateBodies struct{ next http.RoundTripper }

func (p privateBodies) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return p.next.RoundTrip(r)
	}
	body, err := io.ReadAll(r.Body)
	r.Body.Close()
	if err != nil {
		return nil, err
	}
	// A RoundTripper must not modify the caller's request.
	own := r.Clone(r.Context())
	own.Body = io.NopCloser(bytes.NewReader(body))
	own.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return p.next.RoundTrip(own)
}
