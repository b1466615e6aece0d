// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// deliver hands a GitHub delivery to an agent's handler.
func deliver(h http.Handler, header http.Header, payload []byte) (int, string) {
	req := httptest.NewRequest(http.MethodPost, "/webhook/github", bytes.NewReader(payload))
	req.Header = header
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code, rec.Body.String()
}

// webhookAgent is an agent that reconciles acme/fleets's main branch and
// takes webhooks, not running: triggers only count.
func webhookAgent(t *testing.T) (*Agent, *worker) {
	t.Helper()
	log, _ := testLog(t)
	a, err := New(Options{Repos: []Repo{{URL: "https://github.com/acme/fleets", Branch: "main"}}, Secret: secret, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	return a, a.workers[0]
}

// One signed delivery replayed 200 times, all at once, starts one run; a
// delivery with another id starts another, and one without an id is
// handled as it always was.
func TestReplayedDeliveryTriggersOnce(t *testing.T) {
	a, w := webhookAgent(t)
	h := a.Handler()
	payload := pushPayload("https://github.com/acme/fleets.git", "refs/heads/main")
	header := githubHeader("push", payload, "", "5ad1e3a0-1e55-11f0-8a5b-0a58a9feac02")

	codes := make(chan int, 200)
	var wg sync.WaitGroup
	for range 200 {
		wg.Go(func() {
			code, body := deliver(h, header.Clone(), payload)
			if code == http.StatusOK && !strings.Contains(body, `"duplicate"`) {
				t.Errorf("a replay answered %s", body)
			}
			codes <- code
		})
	}
	wg.Wait()
	close(codes)
	count := map[int]int{}
	for code := range codes {
		count[code]++
	}
	if count[http.StatusAccepted] != 1 || count[http.StatusOK] != 199 {
		t.Errorf("answers %v, want one 202 and 199 200s", count)
	}
	if n := w.triggered.Load(); n != 1 {
		t.Errorf("200 copies of one delivery triggered %d runs, want 1", n)
	}

	for _, tt := range []struct {
		name, delivery string
		triggers       int64
	}{
		{"another delivery", "5ad1e3a0-1e55-11f0-8a5b-0a58a9feac03", 1},
		{"the first again", "5ad1e3a0-1e55-11f0-8a5b-0a58a9feac02", 0},
		{"no delivery id", "", 1},
		{"no delivery id again", "", 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := w.triggered.Load()
			code, body := deliver(h, githubHeader("push", payload, "", tt.delivery), payload)
			if got := w.triggered.Load() - before; got != tt.triggers {
				t.Errorf("%d triggers, want %d (%d %s)", got, tt.triggers, code, body)
			}
		})
	}
}

// A delivery id is remembered only once its signature checks out: a
// forged request naming the id of a delivery yet to come cannot make the
// agent ignore the genuine one.
func TestUnsignedDeliveryDoesNotPoisonItsID(t *testing.T) {
	a, w := webhookAgent(t)
	h := a.Handler()
	payload := pushPayload("https://github.com/acme/fleets.git", "refs/heads/main")
	const id = "5ad1e3a0-1e55-11f0-8a5b-0a58a9feac04"
	for _, sig := range []string{noSignature, Sign([]byte("not-the-secret"), payload)} {
		if code, body := deliver(h, githubHeader("push", payload, sig, id), payload); code != http.StatusUnauthorized {
			t.Fatalf("forged delivery: %d %s", code, body)
		}
	}
	if code, body := deliver(h, githubHeader("push", payload, "", id), payload); code != http.StatusAccepted || w.triggered.Load() != 1 {
		t.Errorf("the genuine delivery after forged ones with its id: %d %s, %d triggers", code, body, w.triggered.Load())
	}
}

// A delivery id is forgotten an hour after it was accepted.
func TestDeliveryIDsExpire(t *testing.T) {
	a, w := webhookAgent(t)
	start := time.Date(2026, 4, 1, 12, 0, 0, 0, time.UTC)
	now := start
	a.deliveries.now = func() time.Time { return now }
	h := a.Handler()
	payload := pushPayload("https://github.com/acme/fleets.git", "refs/heads/main")
	header := githubHeader("push", payload, "", "5ad1e3a0-1e55-11f0-8a5b-0a58a9feac05")
	for _, tt := range []struct {
		name string
		// at is how long after the first delivery this one comes.
		at       time.Duration
		triggers int64
	}{
		{"first", 0, 1},
		{"a minute later", time.Minute, 0},
		{"just within the hour", time.Hour - time.Second, 0},
		{"an hour after it was accepted", time.Hour, 1},
		{"again at once", time.Hour, 0},
		{"within the hour of the second", 2*time.Hour - time.Second, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			now = start.Add(tt.at)
			before := w.triggered.Load()
			code, body := deliver(h, header.Clone(), payload)
			if got := w.triggered.Load() - before; got != tt.triggers {
				t.Errorf("%d triggers, want %d (%d %s)", got, tt.triggers, code, body)
			}
		})
	}
}

// However many deliveries arrive, at most the bound are remembered, the
// oldest forgotten first.
func TestDeliveriesForgetTheOldestBeyondTheBound(t *testing.T) {
	now := time.Date(2026, 4, 1, 12, 0, 0, 0, time.UTC)
	d := newDeliveries(time.Hour, 3, func() time.Time { return now })
	for i := range 10 {
		if !first(d, fmt.Sprint("id-", i)) {
			t.Fatalf("id-%d is new but not first", i)
		}
		now = now.Add(time.Second)
	}
	if n := d.size(); n != 3 {
		t.Errorf("%d ids remembered, want the bound, 3", n)
	}
	for _, tt := range []struct {
		id    string
		first bool
	}{
		{"id-9", false},
		{"id-8", false},
		{"id-6", true}, // forgotten: it was the oldest when id-9 came
	} {
		if got := first(d, tt.id); got != tt.first {
			t.Errorf("first(%s) = %v, want %v", tt.id, got, tt.first)
		}
	}
	if n := d.size(); n != 3 {
		t.Errorf("%d ids remembered, want 3", n)
	}
}

// A copy of a delivery that comes while the first is being handled waits
// for its outcome: it is a duplicate once the first was handled, and is
// handled itself when the first failed. An id that failed is not
// remembered.
func TestDeliveryCopiesWaitForTheFirstsOutcome(t *testing.T) {
	now := time.Date(2026, 4, 1, 12, 0, 0, 0, time.UTC)
	d := newDeliveries(time.Hour, 10, func() time.Time { return now })
	ctx := context.Background()
	for _, tt := range []struct {
		name    string
		handled bool
		// copyFirst is whether the copy that waited is handled in the
		// first one's place.
		copyFirst bool
	}{
		{"the first failed", false, true},
		{"the first was handled", true, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			id := "d-" + tt.name
			settle, first, err := d.claim(ctx, id)
			if err != nil || !first {
				t.Fatalf("a new id: first %v, %v", first, err)
			}
			type outcome struct {
				settle func(bool)
				first  bool
				err    error
			}
			copied := make(chan outcome, 1)
			go func() {
				s, f, err := d.claim(ctx, id)
				copied <- outcome{s, f, err}
			}()
			settle(tt.handled)
			got := <-copied
			if got.err != nil || got.first != tt.copyFirst {
				t.Errorf("the copy: first %v, %v; want first %v", got.first, got.err, tt.copyFirst)
			}
			if got.first {
				got.settle(true)
			}
			if _, first, _ := d.claim(ctx, id); first {
				t.Error("a third copy after one was handled is first")
			}
		})
	}
	// A copy waiting on a claim that is never settled gives up with its
	// context.
	if _, first, _ := d.claim(ctx, "held"); !first {
		t.Fatal("held: not first")
	}
	gone, cancel := context.WithCancel(ctx)
	cancel()
	if _, first, err := d.claim(gone, "held"); first || err == nil {
		t.Errorf("a copy whose request ended: first %v, %v", first, err)
	}
}

// first claims id and, when it is new, settles it as handled.
func first(d *deliveries, id string) bool {
	settle, first, err := d.claim(context.Background(), id)
	if first && err == nil {
		settle(true)
	}
	return first
}
