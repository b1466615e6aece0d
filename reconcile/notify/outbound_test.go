// SPDX-License-Identifier: Apache-2.0

package notify

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/schema"
)

// catcher records every request that reaches it.
type catcher struct {
	mu       sync.Mutex
	requests []string
}

func (c *catcher) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.requests = append(c.requests, r.Method+" "+r.Header.Get(SignatureHeader)+" "+string(body))
}

func (c *catcher) seen() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.requests...)
}

func webhookOnly(urlEnv string) *schema.Notifications {
	return &schema.Notifications{
		Webhook: &schema.WebhookNotification{URLEnv: urlEnv, SecretEnv: "HOOK_KEY"},
		On:      []string{Changed, Failed, NotConverged},
	}
}

// A receiver that answers with a redirect, to another host or its own, is
// not followed: the body and its signature go to the URL configured and
// nowhere else, and the delivery fails saying why, once.
func TestARedirectIsNotFollowed(t *testing.T) {
	for _, code := range []int{http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		t.Run(http.StatusText(code), func(t *testing.T) {
			other := &catcher{}
			otherSrv := httptest.NewServer(other)
			defer otherSrv.Close()
			u, _ := url.Parse(otherSrv.URL)
			var mu sync.Mutex
			asked := 0
			hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				asked++
				mu.Unlock()
				http.Redirect(w, r, "http://localhost:"+u.Port()+"/elsewhere", code)
			}))
			defer hook.Close()
			env := map[string]string{"HOOK": hook.URL + "/hook", "HOOK_KEY": "hook-secret"}
			n := New(func(k string) string { return env[k] })
			err := n.Notify(context.Background(), webhookOnly("HOOK"), Event{Kind: Failed, Repository: "r", Revision: "a"})
			for _, r := range other.seen() {
				t.Errorf("the redirect's target was sent %q", r)
			}
			if err == nil || !strings.Contains(err.Error(), "webhook: delivery failed, the receiver answered with a redirect") {
				t.Fatalf("err = %v, want the redirect refused", err)
			}
			if strings.Contains(err.Error(), hook.URL) || strings.Contains(err.Error(), "localhost") {
				t.Errorf("the error names a URL: %v", err)
			}
			mu.Lock()
			defer mu.Unlock()
			if asked != 1 {
				t.Errorf("the receiver was asked %d times, want 1: a refused redirect is not retried", asked)
			}
		})
	}
}

// A receiver that accepts and never answers holds a delivery no longer
// than GPUFLEET_NOTIFY_TIMEOUT, retries included; a cancelled context ends
// it at once.
func TestAReceiverThatNeverAnswersIsGivenUp(t *testing.T) {
	release := make(chan struct{})
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer hook.Close()
	defer close(release)
	env := map[string]string{"HOOK": hook.URL, "HOOK_KEY": "hook-secret", TimeoutEnv: "100ms"}
	n := New(func(k string) string { return env[k] })

	notify := func(ctx context.Context, revision string) chan error {
		done := make(chan error, 1)
		go func() {
			done <- n.Notify(ctx, webhookOnly("HOOK"), Event{Kind: Failed, Repository: "r", Revision: revision})
		}()
		return done
	}
	// The bound below only tells a hang from an answer.
	select {
	case err := <-notify(context.Background(), "a"):
		if err == nil || !strings.Contains(err.Error(), "webhook: delivery failed, no answer within GPUFLEET_NOTIFY_TIMEOUT's bound") {
			t.Errorf("err = %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the delivery was still waiting a minute later")
	}

	env[TimeoutEnv] = "1h"
	ctx, cancel := context.WithCancel(context.Background())
	done := notify(ctx, "b")
	cancel()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "the run was interrupted") {
			t.Errorf("cancelled: err = %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the cancelled delivery was still waiting a minute later")
	}
}

// A Slack that hangs does not keep the webhook from being told: both are
// sent at once. The hanging Slack is let go once the webhook has its
// delivery, or after a minute, which only a Notifier telling them one
// after the other would need.
func TestOneHangingDestinationDoesNotStarveTheOther(t *testing.T) {
	webhookGot := make(chan struct{})
	var once sync.Once
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() { close(webhookGot) })
	}))
	defer hook.Close()
	releasedByWebhook := make(chan bool, 1)
	slack := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-webhookGot:
			releasedByWebhook <- true
		case <-time.After(time.Minute):
			releasedByWebhook <- false
		}
	}))
	defer slack.Close()
	env := map[string]string{"HOOK": hook.URL, "HOOK_KEY": "hook-secret", "SLACK": slack.URL, TimeoutEnv: "10m"}
	n := New(func(k string) string { return env[k] })
	cfg := webhookOnly("HOOK")
	cfg.Slack = &schema.SlackNotification{URLEnv: "SLACK"}
	if err := n.Notify(context.Background(), cfg, Event{Kind: Failed, Repository: "r", Revision: "a"}); err != nil {
		t.Fatal(err)
	}
	if !<-releasedByWebhook {
		t.Error("the webhook was told only after Slack gave up")
	}
}

// recorder is a transport that answers every request itself, so that a
// test can tell what would have gone out to a host beyond loopback.
type recorder struct {
	mu   sync.Mutex
	urls []string
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	r.urls = append(r.urls, req.URL.String())
	r.mu.Unlock()
	return &http.Response{StatusCode: http.StatusOK, Status: "200 OK", Body: http.NoBody, Header: http.Header{}, Request: req}, nil
}

// The body and the URL, a secret of its own, cross the network only over
// https: a plain http URL beyond loopback is refused, naming the variable
// that holds it and not its value, unless GPUFLEET_ALLOW_HTTP=true.
func TestAPlainHTTPReceiverIsRefused(t *testing.T) {
	for _, tt := range []struct {
		url, allow string
		sent       bool
	}{
		{"http://hooks.example.test/T000/B000/secretpath", "", false},
		{"http://hooks.example.test/T000/B000/secretpath", "true", true},
		{"https://hooks.example.test/T000/B000/secretpath", "", true},
		{"http://127.0.0.1:9/hook", "", true},
		{"hooks.example.test/hook", "", false},
	} {
		env := map[string]string{"HOOK": tt.url, "HOOK_KEY": "hook-secret", "GPUFLEET_ALLOW_HTTP": tt.allow}
		n := New(func(k string) string { return env[k] })
		rec := &recorder{}
		n.Client = &http.Client{Transport: rec}
		err := n.Notify(context.Background(), webhookOnly("HOOK"), Event{Kind: Failed, Repository: "r", Revision: "a"})
		sent := len(rec.urls) > 0
		switch {
		case sent != tt.sent:
			t.Errorf("%s (GPUFLEET_ALLOW_HTTP=%q): sent %v, want %v (err %v)", tt.url, tt.allow, sent, tt.sent, err)
		case !tt.sent && (err == nil || !strings.Contains(err.Error(), "webhook: the URL in HOOK ")):
			t.Errorf("%s: err = %v, want the URL in HOOK refused", tt.url, err)
		case err != nil && strings.Contains(err.Error(), "secretpath"):
			t.Errorf("the error shows the URL: %v", err)
		case tt.sent && err != nil:
			t.Errorf("%s: %v", tt.url, err)
		}
	}
}

// A bound that is not a duration is an error of its own, and the event
// still goes out within the default.
func TestABadTimeoutIsReported(t *testing.T) {
	env := map[string]string{"HOOK": "https://hooks.example.test/x", "HOOK_KEY": "hook-secret", TimeoutEnv: "soon"}
	n := New(func(k string) string { return env[k] })
	rec := &recorder{}
	n.Client = &http.Client{Transport: rec}
	err := n.Notify(context.Background(), webhookOnly("HOOK"), Event{Kind: Failed, Repository: "r", Revision: "a"})
	if err == nil || !strings.Contains(err.Error(), `GPUFLEET_NOTIFY_TIMEOUT="soon" is not a positive duration`) || len(rec.urls) != 1 {
		t.Errorf("err = %v, %d sent", err, len(rec.urls))
	}
	if errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("the delivery timed out: %v", err)
	}
}
