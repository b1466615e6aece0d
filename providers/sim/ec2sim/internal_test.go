// SPDX-License-Identifier: Apache-2.0

package ec2sim

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gpufleet/gpufleet/providers/sim"
)

// TestPanicGuard proves the last line of defence answers in EC2's 500
// shape; TestRandomQueries and FuzzQuery show that no input reaches it.
func TestPanicGuard(t *testing.T) {
	world, err := sim.New(sim.Config{})
	if err != nil {
		t.Fatal(err)
	}
	actions["Explode"] = func(*Server, *request) (any, *apiError) { panic("boom") }
	t.Cleanup(func() { delete(actions, "Explode") })

	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader("Action=Explode&Version=2016-11-15"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	New(world, Options{}).ServeHTTP(rec, req)

	body := rec.Body.String()
	if rec.Code != http.StatusInternalServerError || !strings.Contains(body, "<Code>InternalError</Code>") || !strings.Contains(body, "<RequestID>") {
		t.Errorf("got %d %s", rec.Code, body)
	}
}

// TestJSONPanicGuard is the same defence for Service Quotas: a 500 in the
// JSON protocol's shape.
func TestJSONPanicGuard(t *testing.T) {
	world, err := sim.New(sim.Config{})
	if err != nil {
		t.Fatal(err)
	}
	quotaOperations["Explode"] = func(*Server, *request, []byte) (any, *apiError) { panic("boom") }
	t.Cleanup(func() { delete(quotaOperations, "Explode") })

	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader("{}"))
	req.Header.Set("X-Amz-Target", "ServiceQuotasV20190624.Explode")
	req.Header.Set("Content-Type", "application/x-amz-json-1.1")
	New(world, Options{}).ServeHTTP(rec, req)

	if rec.Code != http.StatusInternalServerError || rec.Header().Get("X-Amzn-ErrorType") != "ServiceException" || !strings.Contains(rec.Body.String(), `"__type"`) {
		t.Errorf("got %d %v %s", rec.Code, rec.Header(), rec.Body)
	}
}

func TestGlob(t *testing.T) {
	tests := []struct {
		pattern, s string
		want       bool
	}{
		{"ml", "ml", true},
		{"ml", "mlops", false},
		{"ml*", "mlops", true},
		{"*ops", "mlops", true},
		{"m?ops", "mlops", true},
		{"m?ops", "mops", false},
		{"*", "", true},
		{"a*b*c", "aXXbYYc", true},
		{"a*b*c", "aXXbYY", false},
		{`\*`, "*", true},
		{`\*`, "x", false},
		{`a\?`, "a?", true},
		{`a\?`, "ab", false},
		{"", "", true},
		{"", "x", false},
		{`x\`, `x\`, true},
		{"ü*", "über", true},
	}
	for _, tt := range tests {
		t.Run(tt.pattern+" "+tt.s, func(t *testing.T) {
			if got := glob(tt.pattern, tt.s); got != tt.want {
				t.Errorf("glob(%q, %q) = %v, want %v", tt.pattern, tt.s, got, tt.want)
			}
		})
	}
}
