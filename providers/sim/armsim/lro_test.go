// SPDX-License-Identifier: Apache-2.0

package armsim

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/providers/sim"
)

// A create or delete that takes time is answered 201 or 202 with
// Azure-AsyncOperation and a Retry-After of the time it has left, its
// operation reads InProgress then Succeeded, and the VM Creating, then
// Succeeded, then Deleting; one that takes none is answered the same way
// but without Retry-After, its operation already Succeeded, so that no
// client waits to poll it.
func TestLongRunningAnswers(t *testing.T) {
	q := "?api-version=2022-08-01"
	tests := []struct {
		name      string
		opTime    time.Duration
		wantRetry string
	}{
		{name: "taking time", opTime: 90 * time.Second, wantRetry: "90"},
		{name: "at once"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFront(t, frontConfig{manual: true, world: sim.Config{OperationTime: tt.opTime}})
			url := f.url + vmPath + "lro" + q
			resp := rawRequest(t, http.MethodPut, url, body(t, mutate()), http.Header{"Content-Type": {"application/json"}})
			op := resp.Header.Get("Azure-AsyncOperation")
			if resp.StatusCode != http.StatusCreated || op == "" || resp.Header.Get("Retry-After") != tt.wantRetry {
				t.Fatalf("PUT: %s, Azure-AsyncOperation %q, Retry-After %q; want 201, an operation and %q",
					resp.Status, op, resp.Header.Get("Retry-After"), tt.wantRetry)
			}
			if got := provisioningState(t, resp); got != "Creating" {
				t.Fatalf("PUT answered provisioningState %s", got)
			}
			if tt.opTime > 0 {
				if got, retry := pollStatus(t, op); got != "InProgress" || retry != tt.wantRetry {
					t.Fatalf("operation %s, Retry-After %q while running", got, retry)
				}
				if got := provisioningState(t, rawRequest(t, http.MethodGet, url, nil, nil)); got != "Creating" {
					t.Fatalf("GET while creating: %s", got)
				}
				f.clock.Advance(tt.opTime)
			}
			if got, retry := pollStatus(t, op); got != "Succeeded" || retry != "" {
				t.Fatalf("operation %s, Retry-After %q after its time", got, retry)
			}
			if got := provisioningState(t, rawRequest(t, http.MethodGet, url, nil, nil)); got != "Succeeded" {
				t.Fatalf("GET after the create: %s", got)
			}

			resp = rawRequest(t, http.MethodDelete, url, nil, nil)
			if resp.StatusCode != http.StatusAccepted || resp.Header.Get("Azure-AsyncOperation") == "" || resp.Header.Get("Location") == "" ||
				resp.Header.Get("Retry-After") != tt.wantRetry {
				t.Fatalf("DELETE: %s %v", resp.Status, resp.Header)
			}
			if tt.opTime > 0 {
				if got := provisioningState(t, rawRequest(t, http.MethodGet, url, nil, nil)); got != "Deleting" {
					t.Fatalf("GET while deleting: %s", got)
				}
				f.clock.Advance(tt.opTime)
			}
			if resp := rawRequest(t, http.MethodGet, url, nil, nil); resp.StatusCode != http.StatusNotFound {
				t.Fatalf("GET after the delete: %s", resp.Status)
			}
			if resp := rawRequest(t, http.MethodDelete, url, nil, nil); resp.StatusCode != http.StatusNoContent {
				t.Fatalf("DELETE of a deleted VM: %s", resp.Status)
			}
		})
	}
}

// pollStatus polls an Azure-AsyncOperation: its status and Retry-After.
func pollStatus(t *testing.T, url string) (string, string) {
	t.Helper()
	resp := rawRequest(t, http.MethodGet, url, nil, nil)
	var st operationStatus
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st.Status, resp.Header.Get("Retry-After")
}

func provisioningState(t *testing.T, resp *http.Response) string {
	t.Helper()
	raw, _ := io.ReadAll(resp.Body)
	var vm struct {
		Properties struct {
			ProvisioningState string `json:"provisioningState"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(raw, &vm); err != nil {
		t.Fatalf("%v: %s", err, raw)
	}
	return vm.Properties.ProvisioningState
}
