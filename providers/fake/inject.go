// SPDX-License-Identifier: Apache-2.0

package fake

import (
	"context"
	"sync"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
)

// Always, as a count of failures, fails every create on the offer until
// ClearFailures.
const Always = -1

// Err is a classified error of the given kind to inject. The fake fills in
// its cloud, the operation and the offer of the call it fails, as a real
// provider's errors carry them.
func Err(kind providers.Kind) *providers.Error {
	return &providers.Error{Kind: kind, Code: "fake-" + string(kind), Message: "injected by the test"}
}

type offerFailure struct {
	left int
	err  error
}

// FailCreates makes the next n creates on offer fail with err (n Always:
// every one). It stacks with the generic queue, which is consulted first.
func (p *Provider) FailCreates(offer planner.OfferKey, n int, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.offerFailure[offer] = &offerFailure{left: n, err: err}
}

// ClearFailures drops every injected error, queued or per offer.
func (p *Provider) ClearFailures() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.createErrs, p.deleteErrs, p.listErrs, p.offersErrs = nil, nil, nil, nil
	clear(p.offerFailure)
}

// NextCreateErr queues errors for the next creates, one each, whatever
// their offer; a nil in the queue lets that create through.
func (p *Provider) NextCreateErr(errs ...error) { p.queue(&p.createErrs, errs) }

// NextDeleteErr queues errors for the next deletes.
func (p *Provider) NextDeleteErr(errs ...error) { p.queue(&p.deleteErrs, errs) }

// NextListErr queues errors for the next lists.
func (p *Provider) NextListErr(errs ...error) { p.queue(&p.listErrs, errs) }

// NextOffersErr queues errors for the next reads of the offers.
func (p *Provider) NextOffersErr(errs ...error) { p.queue(&p.offersErrs, errs) }

func (p *Provider) queue(q *[]error, errs []error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	*q = append(*q, errs...)
}

// callErr is what a call returns before it does anything: the context's
// error, as a real SDK fails a call whose context ended, or the next queued
// error.
func (p *Provider) callErr(ctx context.Context, q *[]error, op string, offer planner.OfferKey) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(*q) == 0 {
		return nil
	}
	err := (*q)[0]
	*q = (*q)[1:]
	return p.fill(err, op, offer)
}

// offerErr is the injected failure of a create on offer, if any. The
// caller holds p.mu.
func (p *Provider) offerErr(offer planner.OfferKey) error {
	f := p.offerFailure[offer]
	if f == nil || f.left == 0 {
		return nil
	}
	if f.left > 0 {
		f.left--
	}
	return p.fill(f.err, "create", offer)
}

// fill completes an injected classified error with where it happened; any
// other error is returned as it is.
func (p *Provider) fill(err error, op string, offer planner.OfferKey) error {
	pe, ok := err.(*providers.Error)
	if !ok {
		return err
	}
	filled := *pe
	if filled.Cloud == "" {
		filled.Cloud = p.cloud
	}
	if filled.Op == "" {
		filled.Op = op
	}
	if filled.Offer == (planner.OfferKey{}) {
		filled.Offer = offer
	}
	return &filled
}

// Hold keeps creates waiting, for a test to act while they are in flight.
type Hold struct {
	p        *Provider
	arrived  chan providers.CreateRequest
	released chan struct{}
	once     sync.Once
}

// holdBacklog bounds the announcements of held creates nobody has read;
// more are held all the same, unannounced.
const holdBacklog = 1024

// HoldCreates makes every create from now on wait, once recorded, until
// the hold is released or the create's context ends, when it returns the
// context's error.
func (p *Provider) HoldCreates() *Hold {
	h := &Hold{p: p, arrived: make(chan providers.CreateRequest, holdBacklog), released: make(chan struct{})}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hold = h
	return h
}

// Arrived receives the request of each create as it starts to wait.
func (h *Hold) Arrived() <-chan providers.CreateRequest { return h.arrived }

// Release lets the held creates, and every later one, go on.
func (h *Hold) Release() {
	h.once.Do(func() {
		h.p.mu.Lock()
		if h.p.hold == h {
			h.p.hold = nil
		}
		h.p.mu.Unlock()
		close(h.released)
	})
}

// wait holds a create while a hold is on.
func (p *Provider) wait(ctx context.Context, req providers.CreateRequest) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p.mu.Lock()
	h := p.hold
	p.mu.Unlock()
	if h == nil {
		return nil
	}
	select {
	case h.arrived <- req:
	default:
	}
	select {
	case <-h.released:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
