// SPDX-License-Identifier: Apache-2.0

package gcesim

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"

	"github.com/gpufleet/gpufleet/providers/sim"
)

// batchRequest writes a batch as gcloud's apitools does: LF line ends,
// each part an application/http request with a Content-ID, the body's
// Content-Length set.
func batchRequest(t *testing.T, url string, parts []string) *http.Request {
	t.Helper()
	var body strings.Builder
	for i, p := range parts {
		fmt.Fprintf(&body, "--xyz\nContent-Type: application/http\nMIME-Version: 1.0\nContent-Transfer-Encoding: binary\nContent-ID: <5e1f+%d>\n\n%s\n", i, p)
	}
	body.WriteString("--xyz--\n")
	req, err := http.NewRequest(http.MethodPost, url+batchPath, strings.NewReader(body.String()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", `multipart/mixed; boundary="xyz"`)
	return req
}

// partResponse is one response of a batch's answer.
type partResponse struct {
	contentID string
	status    int
	body      map[string]any
}

func readBatchResponse(t *testing.T, resp *http.Response) []partResponse {
	t.Helper()
	media, params, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if err != nil || media != "multipart/mixed" {
		t.Fatalf("batch answered %d with Content-Type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var out []partResponse
	mr := multipart.NewReader(resp.Body, params["boundary"])
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if ct := part.Header.Get("Content-Type"); ct != "application/http" {
			t.Errorf("part Content-Type %q", ct)
		}
		r, err := http.ReadResponse(bufio.NewReader(part), nil)
		if err != nil {
			t.Fatal(err)
		}
		var body map[string]any
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			t.Fatal(err)
		}
		out = append(out, partResponse{contentID: part.Header.Get("Content-ID"), status: r.StatusCode, body: body})
	}
}

// A batch's parts are served as calls of their own, each answered in its
// part with the Content-ID it came with.
func TestBatch(t *testing.T) {
	f := newFixture(t, sim.Config{}, Options{})
	host := strings.TrimPrefix(f.url, "http://")
	insert := func(name string) string {
		body := `{"name":"` + name + `","machineType":"zones/us-central1-a/machineTypes/g2-standard-4","disks":[{"boot":true,"initializeParams":{"sourceImage":"projects/debian-cloud/global/images/family/debian-12"}}]}`
		return fmt.Sprintf("POST /compute/v1/projects/gpufleet-test/zones/us-central1-a/instances?alt=json HTTP/1.1\nContent-Type: application/json\ncontent-length: %d\nHost: %s\n\n%s", len(body), host, body)
	}
	get := func(path string) string {
		return "GET " + path + " HTTP/1.1\nHost: " + host + "\n\n"
	}
	resp, err := http.DefaultClient.Do(batchRequest(t, f.url, []string{
		insert("one"),
		insert("two"),
		get("/compute/v1/projects/gpufleet-test/zones/us-central1-a/instances/nobody"),
		get("/compute/v1/projects/gpufleet-test/zones/us-central1-a"),
		"POST " + batchPath + " HTTP/1.1\nHost: " + host + "\n\n",
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("batch answered %d", resp.StatusCode)
	}
	parts := readBatchResponse(t, resp)
	if len(parts) != 5 {
		t.Fatalf("%d parts answered, want 5", len(parts))
	}
	for i, p := range parts {
		if want := fmt.Sprintf("<response-5e1f+%d>", i); p.contentID != want {
			t.Errorf("part %d Content-ID %q, want %q", i, p.contentID, want)
		}
	}
	for i, want := range []struct {
		status int
		field  string
		value  any
	}{
		{200, "operationType", "insert"},
		{200, "operationType", "insert"},
		{404, "error", nil},
		{200, "selfLink", f.zoneLink()},
		{404, "error", nil},
	} {
		if parts[i].status != want.status || (want.value != nil && parts[i].body[want.field] != want.value) || (want.value == nil && parts[i].body[want.field] == nil) {
			t.Errorf("part %d answered %d %v, want %d with %s %v", i, parts[i].status, parts[i].body, want.status, want.field, want.value)
		}
	}
	for _, name := range []string{"one", "two"} {
		if _, ok := f.world.ByName(cloud, scope(project, zone), name); !ok {
			t.Errorf("the batch did not make %s", name)
		}
	}
	if n := f.calls(OpInsert); n != 2 {
		t.Errorf("%d inserts counted, want one a part", n)
	}
}

// What is not a batch is refused whole.
func TestBatchRefusals(t *testing.T) {
	f := newFixture(t, sim.Config{}, Options{})
	tests := []struct {
		name, contentType, body string
		method                  string
		status                  int
	}{
		{"not multipart", "application/json", "{}", http.MethodPost, 400},
		{"no parts", `multipart/mixed; boundary="xyz"`, "--xyz--\n", http.MethodPost, 400},
		{"a part that is not a request", `multipart/mixed; boundary="xyz"`, "--xyz\nContent-Type: application/http\n\nhello\n--xyz--\n", http.MethodPost, 400},
		{"a GET", "", "", http.MethodGet, 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(tt.method, f.url+batchPath, bytes.NewReader([]byte(tt.body)))
			if err != nil {
				t.Fatal(err)
			}
			if tt.contentType != "" {
				req.Header.Set("Content-Type", tt.contentType)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var body errorEnvelope
			if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || resp.StatusCode != tt.status || body.Error.Code != tt.status {
				t.Errorf("answered %d %+v (%v), want %d in GCE's envelope", resp.StatusCode, body, err, tt.status)
			}
		})
	}
}
