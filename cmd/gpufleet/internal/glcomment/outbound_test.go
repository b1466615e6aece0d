// SPDX-License-Identifier: Apache-2.0

package glcomment

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gpufleet/gpufleet/cmd/gpufleet/internal/glcomment/glfake"
	"github.com/gpufleet/gpufleet/providers/outbound"
)

// elsewhere is a server on another origin that records what reaches it.
type elsewhere struct {
	mu      sync.Mutex
	headers []http.Header
}

func (e *elsewhere) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	e.headers = append(e.headers, r.Header.Clone())
	e.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprint(w, "[]")
}

func (e *elsewhere) seen() []http.Header {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.headers
}

// A GitLab whose answer redirects elsewhere — another host name, another
// port — does not get the token sent there, whichever header carries it
// and whatever the redirect: the call fails naming the redirect, and is
// not retried.
func TestTheTokenGoesOnlyToTheAPIsHost(t *testing.T) {
	for _, tt := range []struct {
		name   string
		token  Token
		method string
		code   int
	}{
		{"an access token, the listing redirected", Token{value: testToken, Source: EnvToken}, http.MethodGet, http.StatusFound},
		{"a job token, the listing redirected", Token{value: testToken, Source: EnvJobToken, Job: true}, http.MethodGet, http.StatusTemporaryRedirect},
		{"an access token, the create redirected with its body", Token{value: testToken, Source: EnvToken}, http.MethodPost, http.StatusPermanentRedirect},
	} {
		t.Run(tt.name, func(t *testing.T) {
			other := &elsewhere{}
			otherSrv := httptest.NewServer(other)
			defer otherSrv.Close()
			u, _ := url.Parse(otherSrv.URL)
			// The same machine under another name: another host to a client.
			target := "http://localhost:" + u.Port()

			f := glfake.New(testToken)
			f.MaxLength = MaxLength
			f.Tokens = map[string]string{"PRIVATE-TOKEN": testToken, "JOB-TOKEN": testToken}
			var redirects atomic.Int32
			front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == tt.method {
					redirects.Add(1)
					http.Redirect(w, r, target+r.URL.RequestURI(), tt.code)
					return
				}
				f.ServeHTTP(w, r)
			}))
			defer front.Close()

			_, err := client(t, front.URL+"/api/v4", tt.token).Post(context.Background(), mr, marker, marker+"\nplan\n")
			for _, h := range other.seen() {
				t.Errorf("the other host was sent a request, with PRIVATE-TOKEN %q and JOB-TOKEN %q", h.Get("PRIVATE-TOKEN"), h.Get("JOB-TOKEN"))
			}
			if !errors.Is(err, outbound.ErrRefused) || !strings.Contains(err.Error(), "not following a redirect") {
				t.Fatalf("err = %v, want the redirect refused", err)
			}
			if strings.Contains(err.Error(), testToken) {
				t.Errorf("the error shows the token: %v", err)
			}
			if n := redirects.Load(); n != 1 {
				t.Errorf("%d redirects answered, want 1: a refused redirect is not retried", n)
			}
		})
	}
}

// The token crosses the network only over https: a plain http API URL is
// refused unless it is loopback, or plain http is allowed outright.
func TestAPlainHTTPAPIIsRefused(t *testing.T) {
	tok := Token{value: testToken, Source: EnvToken}
	for _, tt := range []struct {
		url   string
		allow bool
		ok    bool
	}{
		{"http://gitlab.example.com/api/v4", false, false},
		{"HTTP://gitlab.example.com/api/v4", false, false},
		{"http://10.0.0.7:8080/api/v4", false, false},
		{"http://gitlab.example.com/api/v4", true, true},
		{"https://gitlab.example.com/api/v4", false, true},
		{"http://127.0.0.1:8080/api/v4", false, true},
		{"http://localhost/api/v4", false, true},
		{"http://[::1]:8080/api/v4", false, true},
	} {
		_, err := NewClient(tok, tt.url, Options{AllowHTTP: tt.allow})
		switch {
		case tt.ok && err != nil:
			t.Errorf("%s (allow http %v): %v", tt.url, tt.allow, err)
		case !tt.ok && (err == nil || !strings.Contains(err.Error(), "GPUFLEET_ALLOW_HTTP=true")):
			t.Errorf("%s (allow http %v): err = %v, want plain http refused", tt.url, tt.allow, err)
		}
	}
}
