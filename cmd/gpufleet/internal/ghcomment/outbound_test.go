// SPDX-License-Identifier: Apache-2.0

package ghcomment

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/providers/outbound"
)

// tokenCatcher is a server on another origin that records the
// Authorization headers it is sent.
type tokenCatcher struct {
	mu   sync.Mutex
	seen []string
}

func (c *tokenCatcher) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	c.seen = append(c.seen, r.Method+" "+r.Header.Get("Authorization"))
	c.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.Write([]byte("[]"))
}

func (c *tokenCatcher) requests() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seen
}

// A GitHub API whose answer redirects to another origin does not get the
// token sent there. Go's client drops Authorization only for another host
// name: it keeps it for the same name on another port, or over plain http
// after https, and so gpufleet refuses those redirects itself — for the
// comment's calls and the check run's alike — without retrying them.
func TestTheTokenGoesOnlyToTheAPIsOrigin(t *testing.T) {
	for _, tt := range []struct {
		name string
		tls  bool
		call func(context.Context, *testing.T, string, Options) error
	}{
		{name: "a comment, to another port", call: postComment},
		{name: "a comment, from https to http", tls: true, call: postComment},
		{name: "a check run, to another port", call: postCheck},
	} {
		t.Run(tt.name, func(t *testing.T) {
			catcher := &tokenCatcher{}
			other := httptest.NewServer(catcher)
			defer other.Close()
			var redirects atomic.Int32
			redirect := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				redirects.Add(1)
				http.Redirect(w, r, other.URL+r.URL.RequestURI(), http.StatusTemporaryRedirect)
			})
			var front *httptest.Server
			opts := Options{}
			if tt.tls {
				front = httptest.NewTLSServer(redirect)
				opts.Transport = front.Client().Transport
			} else {
				front = httptest.NewServer(redirect)
			}
			defer front.Close()
			a, _ := url.Parse(front.URL)
			b, _ := url.Parse(other.URL)
			if a.Hostname() != b.Hostname() {
				t.Fatalf("the servers are on %s and %s: the test needs one host name", a.Hostname(), b.Hostname())
			}

			err := tt.call(context.Background(), t, front.URL+"/", opts)
			for _, r := range catcher.requests() {
				t.Errorf("the other origin was sent %q", r)
			}
			if !errors.Is(err, outbound.ErrRefused) {
				t.Fatalf("err = %v, want the redirect refused", err)
			}
			if strings.Contains(err.Error(), "ghs_test") {
				t.Errorf("the error shows the token: %v", err)
			}
			if n := redirects.Load(); n != 1 {
				t.Errorf("%d redirects answered, want 1: a refused redirect is not retried", n)
			}
		})
	}
}

func postComment(ctx context.Context, t *testing.T, api string, opts Options) error {
	gh, err := NewClient("ghs_test", api, opts)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Post(ctx, gh, "acme", "fleets", 42, marker, marker+"\nplan\n")
	return err
}

func postCheck(ctx context.Context, t *testing.T, api string, opts Options) error {
	gh, err := NewClient("ghs_test", api, opts)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = PostCheck(ctx, gh, "acme", "fleets", Check{SHA: "0123abc", Conclusion: Success, Title: "Plan"}, time.Now())
	return err
}

// The token crosses the network only over https: a plain http API URL
// (GITHUB_API_URL) is refused unless it is loopback, or plain http is
// allowed outright.
func TestAPlainHTTPAPIIsRefused(t *testing.T) {
	for _, tt := range []struct {
		url   string
		allow bool
		ok    bool
	}{
		{"http://github.example.com/api/v3/", false, false},
		{"http://github.example.com/api/v3/", true, true},
		{"https://github.example.com/api/v3/", false, true},
		{"http://127.0.0.1:8080/", false, true},
		{"github.example.com/api/v3/", false, false},
		{"", false, true},
	} {
		_, err := NewClient("ghs_test", tt.url, Options{AllowHTTP: tt.allow})
		if (err == nil) != tt.ok {
			t.Errorf("%q (allow http %v): err = %v", tt.url, tt.allow, err)
		}
	}
}
