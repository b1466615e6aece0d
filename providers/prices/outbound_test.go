// SPDX-License-Identifier: Apache-2.0

package prices

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/providers/outbound"
)

// A billing API that redirects elsewhere, query and all, does not get its
// API key sent there: the loader fails naming the redirect, and retries
// nothing.
func TestTheKeyGoesOnlyToTheEndpoint(t *testing.T) {
	var mu sync.Mutex
	var leaked []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		leaked = append(leaked, r.URL.RawQuery)
		mu.Unlock()
		w.Write([]byte(`{"skus": []}`))
	}))
	defer other.Close()
	asked := 0
	billing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked++
		mu.Unlock()
		http.Redirect(w, r, other.URL+r.URL.RequestURI(), http.StatusFound)
	}))
	defer billing.Close()
	loader, err := NewGCP(GCPOptions{Options: Options{Regions: []string{"us-central1"}, Endpoint: billing.URL, Retry: Retry{Max: 3, MinWait: time.Millisecond}}, APIKey: fixtureKey})
	if err != nil {
		t.Fatal(err)
	}
	_, err = loader.Load(context.Background())
	if !errors.Is(err, outbound.ErrRefused) || strings.Contains(err.Error(), fixtureKey) {
		t.Errorf("err = %v, want the redirect refused, without the key", err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, q := range leaked {
		t.Errorf("the redirect's target was sent %q", q)
	}
	if asked != 1 {
		t.Errorf("the endpoint was asked %d times, want 1: a refused redirect is not retried", asked)
	}
}

// A price API that accepts and never answers holds a refresh no longer
// than the loader's timeout, each retry's included. The bound checked only
// tells a hang from an end.
func TestAPriceAPIThatNeverAnswersTimesOut(t *testing.T) {
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	defer srv.Close()
	defer close(stop)
	loader, err := NewAzure(Options{Regions: []string{"eastus"}, Endpoint: srv.URL, Timeout: 50 * time.Millisecond, Retry: Retry{Max: 1, MinWait: time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := loader.Load(context.Background())
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "after 2 attempts") {
			t.Errorf("err = %v, want both attempts timed out", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the refresh was still waiting a minute later")
	}
}

// The key, and the prices, cross the network only over https: a plain
// http endpoint beyond loopback is refused unless it is allowed.
func TestAPlainHTTPEndpointIsRefused(t *testing.T) {
	for _, tt := range []struct {
		endpoint string
		allow    bool
		ok       bool
	}{
		{"http://billing.example.test", false, false},
		{"http://billing.example.test", true, true},
		{"https://billing.example.test", false, true},
		{"http://127.0.0.1:9", false, true},
		{"", false, true},
		{"billing.example.test", false, false},
	} {
		_, gcpErr := NewGCP(GCPOptions{Options: Options{Endpoint: tt.endpoint, AllowHTTP: tt.allow}, APIKey: fixtureKey})
		_, azureErr := NewAzure(Options{Endpoint: tt.endpoint, AllowHTTP: tt.allow})
		for cloud, err := range map[string]error{"gcp": gcpErr, "azure": azureErr} {
			if (err == nil) != tt.ok {
				t.Errorf("%s, endpoint %q (allow http %v): err = %v", cloud, tt.endpoint, tt.allow, err)
			}
		}
	}
}
