// SPDX-License-Identifier: Apache-2.0

package outbound

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestCheckURL(t *testing.T) {
	for _, tt := range []struct {
		url   string
		allow bool
		want  error
	}{
		{"https://api.example.com/v4", false, nil},
		{"HTTPS://api.example.com", false, nil},
		{"http://127.0.0.1:8080/hook", false, nil},
		{"http://127.1.2.3/hook", false, nil},
		{"http://localhost:9/", false, nil},
		{"http://LocalHost/", false, nil},
		{"http://[::1]:8080/", false, nil},
		{"http://api.example.com/v4", false, ErrPlainHTTP},
		{"http://api.example.com/v4", true, nil},
		{"http://localhost.example.com/", false, ErrPlainHTTP},
		{"http://10.0.0.1/", false, ErrPlainHTTP},
		{"http://[::ffff:10.0.0.1]/", false, ErrPlainHTTP},
		{"ftp://api.example.com/", true, ErrNotHTTP},
		{"api.example.com/v4", false, ErrNotHTTP},
		{"https://", false, ErrNotHTTP},
		{"https://:443/", false, ErrNotHTTP},
		{"://nothing", false, ErrNotHTTP},
		{"", false, ErrNotHTTP},
	} {
		_, err := CheckURL(tt.url, tt.allow)
		if !errors.Is(err, tt.want) || (tt.want == nil && err != nil) {
			t.Errorf("CheckURL(%q, %v) = %v, want %v", tt.url, tt.allow, err, tt.want)
		}
	}
}

func TestSameOrigin(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		same bool
	}{
		{"https://a.example/x", "https://a.example/y?q=1", true},
		{"https://a.example/", "https://A.example:443/", true},
		{"http://a.example/", "http://a.example:80/", true},
		{"https://a.example/", "http://a.example/", false},
		{"https://a.example/", "https://a.example:8443/", false},
		{"https://a.example/", "https://b.a.example/", false},
		{"http://127.0.0.1:1/", "http://localhost:1/", false},
	} {
		a, _ := url.Parse(tt.a)
		b, _ := url.Parse(tt.b)
		if got := SameOrigin(a, b); got != tt.same {
			t.Errorf("SameOrigin(%s, %s) = %v", tt.a, tt.b, got)
		}
	}
}

// counter is a server that counts what reaches it and answers 200.
type counter struct{ n atomic.Int32 }

func (c *counter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.n.Add(1)
	io.WriteString(w, "here")
}

// A pinned client follows redirects within its origin and refuses, before
// sending, any request or redirect beyond it; a client without an origin
// follows no redirect. Each refusal is ErrRefused and names origins only.
func TestRedirects(t *testing.T) {
	other := &counter{}
	otherSrv := httptest.NewServer(other)
	defer otherSrv.Close()
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/away":
			http.Redirect(w, r, otherSrv.URL+"/secret-path?key=k", http.StatusTemporaryRedirect)
		case "/moved":
			http.Redirect(w, r, "/here", http.StatusMovedPermanently)
		default:
			io.WriteString(w, "here")
		}
	}))
	defer api.Close()
	origin, _ := url.Parse(api.URL)
	pinned := NewClient(Policy{Origin: origin})
	unpinned := NewClient(Policy{})

	for _, tt := range []struct {
		name    string
		client  *http.Client
		url     string
		refused bool
	}{
		{"pinned, within the origin", pinned, api.URL + "/moved", false},
		{"pinned, a redirect away", pinned, api.URL + "/away", true},
		{"pinned, a request away", pinned, otherSrv.URL + "/x", true},
		{"unpinned, a plain request", unpinned, api.URL + "/here", false},
		{"unpinned, a redirect within the origin", unpinned, api.URL + "/moved", true},
		{"unpinned, a redirect away", unpinned, api.URL + "/away", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := tt.client.Post(tt.url, "text/plain", strings.NewReader("signed body"))
			if resp != nil {
				resp.Body.Close()
			}
			if tt.refused != errors.Is(err, ErrRefused) {
				t.Fatalf("err = %v, refused %v", err, tt.refused)
			}
			if err == nil && resp.StatusCode != http.StatusOK {
				t.Errorf("status %s", resp.Status)
			}
			if err != nil {
				var urlErr *url.Error
				if errors.As(err, &urlErr) {
					err = urlErr.Err
				}
				if strings.Contains(err.Error(), "secret-path") || strings.Contains(err.Error(), "key=k") {
					t.Errorf("the refusal shows more than the origin: %v", err)
				}
			}
		})
	}
	if n := other.n.Load(); n != 0 {
		t.Errorf("the other origin was sent %d requests", n)
	}
}

// A refused request is not retried; a failed one is.
func TestCheckRetry(t *testing.T) {
	refused := &url.Error{Op: "Get", URL: "https://x", Err: ErrRefused}
	if retry, err := CheckRetry(context.Background(), nil, refused); retry || err == nil {
		t.Errorf("a refusal: retry %v, %v", retry, err)
	}
	if retry, _ := CheckRetry(context.Background(), &http.Response{StatusCode: http.StatusBadGateway}, nil); !retry {
		t.Error("a 502 is not retried")
	}
}

// An attempt ends at its timeout, a server that never answers
// notwithstanding. The bound checked only tells a hang from an end.
func TestAnAttemptEndsAtItsTimeout(t *testing.T) {
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	defer srv.Close()
	defer close(stop)
	done := make(chan error, 1)
	go func() {
		resp, err := NewClient(Policy{Timeout: 50 * time.Millisecond}).Get(srv.URL)
		if resp != nil {
			resp.Body.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		var timeout interface{ Timeout() bool }
		if !errors.As(err, &timeout) || !timeout.Timeout() {
			t.Errorf("err = %v, want a timeout", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the attempt was still waiting a minute later")
	}
}
