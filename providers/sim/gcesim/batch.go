// SPDX-License-Identifier: Apache-2.0

package gcesim

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"sync"
)

// Google's batch endpoint takes several API calls in one HTTP request, as
// gcloud sends every multi-resource command (create a b c, delete a b,
// list --zones z1,z2, the waits on their operations): a multipart/mixed
// POST to /batch/compute/v1 whose parts are each an application/http
// request, answered by a multipart/mixed response with one application/http
// response a part, each naming its request's Content-ID prefixed with
// "response-". Each part is served as if it had come alone; they run at
// once, as the real endpoint does not order them either.

// batchPath is the batch endpoint of compute/v1, as client libraries
// derive it from the API's root.
const batchPath = "/batch/compute/v1"

// maxBatchParts is the most calls one batch may hold, as GCE documents.
const maxBatchParts = 1000

// maxBatchBody caps a batch's body: a few dozen calls of the largest body
// a call may have.
const maxBatchBody = 64 << 20

// inBatchKey marks the requests of a batch's parts, which may not be
// batches themselves.
type inBatchKey struct{}

// batchPart is one call of a batch and, once served, its response.
type batchPart struct {
	contentID string
	request   *http.Request
	response  *partRecorder
}

// serveBatch serves the batch endpoint.
func (s *Server) serveBatch(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodPost || r.Context().Value(inBatchKey{}) != nil {
		return notFoundRoute(r)
	}
	parts, err := readBatch(r)
	if err != nil {
		return err
	}
	ctx := context.WithValue(r.Context(), inBatchKey{}, true)
	var wg sync.WaitGroup
	for _, p := range parts {
		p.request = p.request.WithContext(ctx)
		p.request.TLS, p.request.RemoteAddr = r.TLS, r.RemoteAddr
		if p.request.Host == "" {
			// A part that names no host came where the batch came.
			p.request.Host = r.Host
		}
		if p.request.Header.Get("Authorization") == "" {
			// The batch's credentials stand for each of its calls.
			p.request.Header.Set("Authorization", r.Header.Get("Authorization"))
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				// A handler aborting its response aborts only its part:
				// the batch's own goroutine is not there to take it.
				if v := recover(); v != nil && v != http.ErrAbortHandler {
					panic(v)
				}
			}()
			s.ServeHTTP(p.response, p.request)
		}()
	}
	wg.Wait()
	return writeBatch(w, parts)
}

// readBatch reads a batch's parts, refusing what the endpoint refuses: a
// body that is not multipart/mixed, a part that is not an HTTP request,
// too many parts.
func readBatch(r *http.Request) ([]*batchPart, *apiError) {
	media, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || media != "multipart/mixed" || params["boundary"] == "" {
		return nil, badBatch("Failed to parse batch request, error: the request's Content-Type is not multipart/mixed with a boundary.")
	}
	mr := multipart.NewReader(r.Body, params["boundary"])
	var parts []*batchPart
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, badBatch("Failed to parse batch request, error: " + err.Error())
		}
		if len(parts) == maxBatchParts {
			return nil, badBatch(fmt.Sprintf("A batch request cannot contain more than %d requests.", maxBatchParts))
		}
		body, err := io.ReadAll(part)
		if err != nil {
			return nil, badBatch("Failed to parse batch request, error: " + err.Error())
		}
		req, err := readPartRequest(body)
		if err != nil {
			return nil, badBatch(fmt.Sprintf("Failed to parse batch request, error: part %d is not an HTTP request: %v", len(parts), err))
		}
		parts = append(parts, &batchPart{contentID: part.Header.Get("Content-ID"), request: req, response: newPartRecorder()})
	}
	if len(parts) == 0 {
		return nil, badBatch("Failed to parse batch request, error: no parts.")
	}
	return parts, nil
}

func badBatch(msg string) *apiError {
	return &apiError{Status: http.StatusBadRequest, Reason: "badRequest", Message: msg}
}

// readPartRequest reads a part's HTTP request. Clients set the body's
// Content-Length, but a part is delimited by its boundary anyway, so a
// body without one runs to the end of the part.
func readPartRequest(part []byte) (*http.Request, error) {
	br := bufio.NewReader(bytes.NewReader(part))
	req, err := http.ReadRequest(br)
	if err != nil {
		return nil, err
	}
	if req.Header.Get("Content-Length") == "" && req.Header.Get("Transfer-Encoding") == "" {
		rest, _ := io.ReadAll(br)
		rest = bytes.TrimRight(rest, "\r\n")
		req.Body, req.ContentLength = io.NopCloser(bytes.NewReader(rest)), int64(len(rest))
	}
	return req, nil
}

// writeBatch answers a batch with its parts' responses in request order.
func writeBatch(w http.ResponseWriter, parts []*batchPart) error {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	if err := mw.SetBoundary("batch_" + randomHex(12)); err != nil {
		return fmt.Errorf("setting the batch boundary, %w", err)
	}
	for _, p := range parts {
		h := textproto.MIMEHeader{}
		h.Set("Content-Type", "application/http")
		if id := p.contentID; id != "" {
			h.Set("Content-ID", responseID(id))
		}
		pw, err := mw.CreatePart(h)
		if err != nil {
			return fmt.Errorf("writing a batch response, %w", err)
		}
		if err := p.response.writeTo(pw); err != nil {
			return fmt.Errorf("writing a batch response, %w", err)
		}
	}
	if err := mw.Close(); err != nil {
		return fmt.Errorf("writing a batch response, %w", err)
	}
	w.Header().Set("Content-Type", "multipart/mixed; boundary="+mw.Boundary())
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(buf.Bytes())
	return nil
}

// responseID is the Content-ID of a part's response: "<response-ID>" for
// the request's "<ID>".
func responseID(id string) string {
	inner := strings.TrimSuffix(strings.TrimPrefix(id, "<"), ">")
	return "<response-" + inner + ">"
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// partRecorder is the ResponseWriter a part is served into.
type partRecorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func newPartRecorder() *partRecorder { return &partRecorder{header: http.Header{}} }

func (p *partRecorder) Header() http.Header { return p.header }

func (p *partRecorder) WriteHeader(status int) {
	if p.status == 0 {
		p.status = status
	}
}

func (p *partRecorder) Write(b []byte) (int, error) {
	p.WriteHeader(http.StatusOK)
	return p.body.Write(b)
}

// writeTo writes the response in application/http form: status line,
// headers, blank line, body.
func (p *partRecorder) writeTo(w io.Writer) error {
	status := p.status
	if status == 0 {
		status = http.StatusOK
	}
	p.header.Set("Content-Length", strconv.Itoa(p.body.Len()))
	if _, err := fmt.Fprintf(w, "HTTP/1.1 %d %s\r\n", status, http.StatusText(status)); err != nil {
		return err
	}
	if err := p.header.Write(w); err != nil {
		return err
	}
	if _, err := io.WriteString(w, "\r\n"); err != nil {
		return err
	}
	_, err := w.Write(p.body.Bytes())
	return err
}
