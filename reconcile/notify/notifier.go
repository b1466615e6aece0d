// SPDX-License-Identifier: Apache-2.0

package notify

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/gpufleet/gpufleet/providers/outbound"
	"github.com/gpufleet/gpufleet/schema"
)

// Headers of a webhook delivery.
const (
	SignatureHeader = "X-Gpufleet-Signature"
	EventHeader     = "X-Gpufleet-Event"
	DeliveryHeader  = "X-Gpufleet-Delivery"
)

// remember is how long an event sent is not sent again; a run that
// converges forgets its repository's earlier events at once.
const remember = 24 * time.Hour

// A destination takes at most burst messages at once and one more every
// refill after that; what comes faster is dropped and counted.
const (
	burst  = 5
	refill = 12 * time.Second
)

// TimeoutEnv names the variable that bounds how long telling of one run
// may take, every destination and retry included: a duration such as
// "30s"; DefaultTimeout when unset.
const TimeoutEnv = "GPUFLEET_NOTIFY_TIMEOUT"

// DefaultTimeout bounds telling of one run: a receiver that never answers
// costs a run this much at most.
const DefaultTimeout = 30 * time.Second

// attemptTimeout bounds one delivery attempt, so that a receiver that
// hangs once leaves time for a retry.
const attemptTimeout = 10 * time.Second

// Notifier sends events. One serves every run of a process, so that what
// it remembers spans them. Safe for concurrent use.
type Notifier struct {
	Getenv func(string) string
	Client *http.Client
	Now    func() time.Time

	mu      sync.Mutex
	sent    map[string]time.Time // event id → when
	byRepo  map[string][]string  // repository → ids sent
	buckets map[string]*bucket   // destination URL → tokens
	dropped int
}

type bucket struct {
	tokens float64
	at     time.Time
}

// New is a Notifier reading the environment through getenv, with an HTTP
// client that retries what fails with a short backoff, bounds each attempt
// and follows no redirect: a receiver that points elsewhere would have the
// body and its signature sent to a host nobody configured.
func New(getenv func(string) string) *Notifier {
	rc := outbound.Retrying(outbound.Policy{Timeout: attemptTimeout})
	rc.RetryMax = 3
	rc.RetryWaitMin = 200 * time.Millisecond
	rc.RetryWaitMax = 2 * time.Second
	return &Notifier{Getenv: getenv, Client: rc.StandardClient(), Now: time.Now}
}

// Dropped counts the messages the rate limit dropped.
func (n *Notifier) Dropped() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.dropped
}

// Notify sends an event where cfg says, if cfg asks for its kind and it
// was not sent already. A converged run with nothing changed sends
// nothing and clears what was remembered of its repository, so that its
// next failure is told. What cannot be delivered is returned, joined.
// The destinations are told at once, within TimeoutEnv's bound, and not
// past ctx's end.
func (n *Notifier) Notify(ctx context.Context, cfg *schema.Notifications, ev Event) error {
	if cfg == nil {
		return nil
	}
	n.mu.Lock()
	if n.sent == nil {
		n.sent, n.byRepo, n.buckets = map[string]time.Time{}, map[string][]string{}, map[string]*bucket{}
	}
	now := n.Now()
	if ev.Kind == "" {
		for _, id := range n.byRepo[ev.Repository] {
			delete(n.sent, id)
		}
		delete(n.byRepo, ev.Repository)
		n.mu.Unlock()
		return nil
	}
	id := ev.ID()
	if at, ok := n.sent[id]; (ok && now.Sub(at) < remember) || !slices.Contains(cfg.On, ev.Kind) {
		n.mu.Unlock()
		return nil
	}
	n.sent[id] = now
	n.byRepo[ev.Repository] = append(n.byRepo[ev.Repository], id)
	n.mu.Unlock()

	ev.FormatVersion = 1
	timeout, err := n.timeout()
	errs := []error{err}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var sends []func() error
	if cfg.Slack != nil {
		if url := n.Getenv(cfg.Slack.URLEnv); url == "" {
			errs = append(errs, fmt.Errorf("slack: %s is not set", cfg.Slack.URLEnv))
		} else if n.admit(url, now) {
			body, _ := json.Marshal(map[string]string{"text": ev.Text()})
			sends = append(sends, func() error { return n.post(ctx, "slack", cfg.Slack.URLEnv, url, body, nil) })
		}
	}
	if cfg.Webhook != nil {
		url, secret := n.Getenv(cfg.Webhook.URLEnv), n.Getenv(cfg.Webhook.SecretEnv)
		switch {
		case url == "":
			errs = append(errs, fmt.Errorf("webhook: %s is not set", cfg.Webhook.URLEnv))
		case secret == "":
			errs = append(errs, fmt.Errorf("webhook: %s is not set; gpufleet sends no unsigned webhook", cfg.Webhook.SecretEnv))
		case n.admit(url, now):
			body, _ := json.Marshal(ev)
			headers := map[string]string{SignatureHeader: Sign([]byte(secret), body), EventHeader: ev.Kind, DeliveryHeader: id}
			sends = append(sends, func() error { return n.post(ctx, "webhook", cfg.Webhook.URLEnv, url, body, headers) })
		}
	}
	// At once, so that a receiver that hangs does not starve the other.
	sent := make([]error, len(sends))
	var wg sync.WaitGroup
	for i, send := range sends {
		wg.Go(func() { sent[i] = send() })
	}
	wg.Wait()
	return errors.Join(append(errs, sent...)...)
}

// timeout is TimeoutEnv's bound, or DefaultTimeout when it is unset or not
// a positive duration, which is then an error of its own.
func (n *Notifier) timeout() (time.Duration, error) {
	v := n.Getenv(TimeoutEnv)
	if v == "" {
		return DefaultTimeout, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return DefaultTimeout, fmt.Errorf("%s=%q is not a positive duration such as 30s; the default, %s, applies", TimeoutEnv, v, DefaultTimeout)
	}
	return d, nil
}

// Sign is the X-Gpufleet-Signature of a body: "sha256=" and the hex
// HMAC-SHA256 of the body under the key, as a receiver checks it.
func Sign(key, body []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// admit takes a token from a destination's bucket.
func (n *Notifier) admit(url string, now time.Time) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	b := n.buckets[url]
	if b == nil {
		b = &bucket{tokens: burst, at: now}
		n.buckets[url] = b
	}
	b.tokens = min(burst, b.tokens+now.Sub(b.at).Seconds()/refill.Seconds())
	b.at = now
	if b.tokens < 1 {
		n.dropped++
		return false
	}
	b.tokens--
	return true
}

// post delivers a body; what fails says which destination, never its URL,
// which is a secret. The URL must be https, unless it is loopback or
// outbound.AllowHTTPEnv allows plain http: it and the body would cross
// the network in clear text.
func (n *Notifier) post(ctx context.Context, dest, urlEnv, url string, body []byte, headers map[string]string) error {
	if _, err := outbound.CheckURL(url, outbound.AllowHTTP(n.Getenv)); err != nil {
		return fmt.Errorf("%s: the URL in %s %w", dest, urlEnv, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%s: the URL in %s is not valid", dest, urlEnv)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "gpufleet")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := n.Client.Do(req)
	if err != nil {
		return fmt.Errorf("%s: delivery failed, %s", dest, failure(ctx, err))
	}
	resp.Body.Close()
	if resp.StatusCode >= 300 {
		return fmt.Errorf("%s: the receiver answered %s", dest, resp.Status)
	}
	return nil
}

// failure says why a delivery failed in words of its own: the client's
// error quotes the URL.
func failure(ctx context.Context, err error) string {
	var timeout interface{ Timeout() bool }
	switch {
	case errors.Is(err, outbound.ErrRefused):
		return "the receiver answered with a redirect, which notifications do not follow"
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return "no answer within " + TimeoutEnv + "'s bound"
	case errors.Is(ctx.Err(), context.Canceled):
		return "the run was interrupted"
	case errors.As(err, &timeout) && timeout.Timeout():
		return "no answer in time"
	}
	return "the receiver could not be reached"
}
