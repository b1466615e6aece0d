// SPDX-License-Identifier: Apache-2.0

package notify

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/schema"
)

// receiver is a loopback endpoint that checks each delivery's signature
// itself, with crypto/hmac, and keeps what it was sent.
type receiver struct {
	mu       sync.Mutex
	key      []byte
	bodies   []string
	bad      int
	failNext int
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.failNext > 0 {
		rc.failNext--
		http.Error(w, "busy", http.StatusServiceUnavailable)
		return
	}
	if rc.key != nil {
		mac := hmac.New(sha256.New, rc.key)
		mac.Write(body)
		if r.Header.Get(SignatureHeader) != "sha256="+hex.EncodeToString(mac.Sum(nil)) {
			rc.bad++
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
	}
	rc.bodies = append(rc.bodies, string(body))
}

func (rc *receiver) got() []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]string(nil), rc.bodies...)
}

func setup(t *testing.T) (*Notifier, *receiver, *receiver, *schema.Notifications, *time.Time) {
	t.Helper()
	hook := &receiver{key: []byte("hook-secret")}
	slack := &receiver{}
	hookSrv, slackSrv := httptest.NewServer(hook), httptest.NewServer(slack)
	t.Cleanup(hookSrv.Close)
	t.Cleanup(slackSrv.Close)
	env := map[string]string{"HOOK": hookSrv.URL, "HOOK_KEY": "hook-secret", "SLACK": slackSrv.URL}
	n := New(func(k string) string { return env[k] })
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	n.Now = func() time.Time { return now }
	cfg := &schema.Notifications{
		Slack:   &schema.SlackNotification{URLEnv: "SLACK"},
		Webhook: &schema.WebhookNotification{URLEnv: "HOOK", SecretEnv: "HOOK_KEY"},
		On:      []string{Changed, Failed, NotConverged},
	}
	return n, hook, slack, cfg, &now
}

// Each event reaches both destinations once, signed; the same failure
// repeated by later runs is not told again, until a run converges.
func TestEventsAreDeliveredOnceAndSigned(t *testing.T) {
	n, hook, slack, cfg, now := setup(t)
	ctx := context.Background()
	failed := Event{Kind: Failed, Repository: "https://git.example/fleets", Revision: "abc123", Reasons: []string{"observe: could not list aws"}}
	for range 3 {
		*now = now.Add(5 * time.Minute)
		if err := n.Notify(ctx, cfg, failed); err != nil {
			t.Fatal(err)
		}
	}
	if got := hook.got(); len(got) != 1 || hook.bad != 0 {
		t.Fatalf("webhook got %d deliveries (%d badly signed), want 1", len(got), hook.bad)
	}
	var ev Event
	if err := json.Unmarshal([]byte(hook.got()[0]), &ev); err != nil || ev.Kind != Failed || ev.FormatVersion != 1 || ev.Reasons[0] != "observe: could not list aws" {
		t.Errorf("webhook body %s: %v", hook.got()[0], err)
	}
	var msg struct{ Text string }
	if json.Unmarshal([]byte(slack.got()[0]), &msg); !strings.Contains(msg.Text, "could not reconcile https://git.example/fleets at abc123") {
		t.Errorf("slack message %q", msg.Text)
	}
	// A converged run clears the memory: the same failure is news again.
	n.Notify(ctx, cfg, Event{Repository: failed.Repository})
	n.Notify(ctx, cfg, failed)
	if got := len(hook.got()); got != 2 {
		t.Errorf("after converging, the failure again: %d deliveries, want 2", got)
	}
	// Another failure is another event.
	other := failed
	other.Reasons = []string{"plan: no valid offer for gcp"}
	n.Notify(ctx, cfg, other)
	if got := len(slack.got()); got != 3 {
		t.Errorf("a different failure: %d slack messages, want 3", got)
	}
}

func TestOnlyWhatIsAskedForIsTold(t *testing.T) {
	n, hook, _, cfg, _ := setup(t)
	cfg.On = []string{Failed}
	n.Notify(context.Background(), cfg, Event{Kind: Changed, Repository: "r", Revision: "a", Commit: "c1"})
	n.Notify(context.Background(), cfg, Event{Kind: NotConverged, Repository: "r", Revision: "a"})
	if got := hook.got(); len(got) != 0 {
		t.Errorf("told %d events nobody asked for", len(got))
	}
}

// A destination takes five at once, then one every twelve seconds.
func TestDestinationsAreRateLimited(t *testing.T) {
	n, hook, _, cfg, now := setup(t)
	for i := range 20 {
		n.Notify(context.Background(), cfg, Event{Kind: Changed, Repository: "r", Revision: "a", Commit: string(rune('a' + i))})
	}
	if got := len(hook.got()); got != burst {
		t.Errorf("20 events at once: %d delivered, want %d", got, burst)
	}
	*now = now.Add(refill)
	n.Notify(context.Background(), cfg, Event{Kind: Changed, Repository: "r", Revision: "a", Commit: "later"})
	if got := len(hook.got()); got != burst+1 {
		t.Errorf("after a refill: %d delivered, want %d", got, burst+1)
	}
	if n.Dropped() != 2*15 {
		t.Errorf("dropped %d, want 30 (15 for each destination)", n.Dropped())
	}
}

// A receiver that fails for a moment gets the event on a retry; a
// destination not configured in the environment is an error naming the
// variable, and an unsigned webhook is never sent.
func TestDeliveryRetriesAndRefusals(t *testing.T) {
	n, hook, _, cfg, _ := setup(t)
	hook.failNext = 2
	if err := n.Notify(context.Background(), cfg, Event{Kind: Failed, Repository: "r", Revision: "a"}); err != nil {
		t.Fatalf("with two 503s first: %v", err)
	}
	if len(hook.got()) != 1 {
		t.Error("the event did not get through on a retry")
	}
	n2 := New(func(k string) string { return map[string]string{"HOOK": "http://127.0.0.1:1"}[k] })
	err := n2.Notify(context.Background(), &schema.Notifications{Webhook: cfg.Webhook, On: cfg.On}, Event{Kind: Failed, Repository: "r", Revision: "b"})
	if err == nil || !strings.Contains(err.Error(), "HOOK_KEY is not set") {
		t.Errorf("a webhook without its key: %v", err)
	}
}

func TestScrubHidesCredentials(t *testing.T) {
	got := Scrub("cloning https://x-access-token:ghs_abc123@github.com/acme/fleets.git failed; key sekret-value", "sekret-value")
	if strings.Contains(got, "ghs_abc123") || strings.Contains(got, "sekret-value") || !strings.Contains(got, "https://***@github.com/acme/fleets.git") {
		t.Errorf("scrubbed: %q", got)
	}
}
