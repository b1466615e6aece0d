// SPDX-License-Identifier: Apache-2.0

package fake

import (
	"maps"
	"slices"
	"sync/atomic"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
)

// Method names a method of providers.Provider in the record.
type Method string

const (
	MethodOffers   Method = "Offers"
	MethodList     Method = "List"
	MethodCreate   Method = "Create"
	MethodDelete   Method = "Delete"
	MethodCapacity Method = "Capacity"
)

// Call is one call the fake received, with what it was asked and how it
// ended.
type Call struct {
	// Seq orders calls across every fake of the process, so a test can
	// tell whether a delete in one cloud came after a create in another.
	Seq    int64
	Method Method
	// Offer is what a create asked for, or the offer of the instance a
	// delete named.
	Offer planner.OfferKey
	// Token, Fleet, Workload and Labels are a create's request; a delete
	// carries the fleet, workload and token of the instance it was given,
	// a list its selector's fleet.
	Token, Fleet, Workload string
	Labels                 map[string]string
	// Instance is the id a delete named or a create returned.
	Instance string
	// Done is set once the call returned, with Err what it returned.
	Done bool
	Err  error
}

// Calls returns every call since New or ResetCalls, in the order they
// arrived. Parallel calls arrive in whatever order the caller's goroutines
// run.
func (p *Provider) Calls() []Call {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]Call, len(p.calls))
	for i, c := range p.calls {
		out[i] = *c
		out[i].Labels = maps.Clone(c.Labels)
	}
	return out
}

// CallsTo returns the calls to one method, in order.
func (p *Provider) CallsTo(m Method) []Call {
	return slices.DeleteFunc(p.Calls(), func(c Call) bool { return c.Method != m })
}

// Count returns how many calls a method received.
func (p *Provider) Count(m Method) int { return len(p.CallsTo(m)) }

// Requests returns the requests of every create, in order.
func (p *Provider) Requests() []providers.CreateRequest {
	var out []providers.CreateRequest
	for _, c := range p.CallsTo(MethodCreate) {
		out = append(out, providers.CreateRequest{Token: c.Token, Offer: c.Offer, Fleet: c.Fleet, Workload: c.Workload, Labels: c.Labels})
	}
	return out
}

// ResetCalls forgets the calls so far, so a test can look at one run's
// alone. Instances and injected errors stay.
func (p *Provider) ResetCalls() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = nil
}

// seq numbers the calls of every fake.
var seq atomic.Int64

// record appends a call and returns it, for done to complete.
func (p *Provider) record(c Call) *Call {
	p.mu.Lock()
	defer p.mu.Unlock()
	c.Seq = seq.Add(1)
	rec := &c
	p.calls = append(p.calls, rec)
	return rec
}

// done completes a recorded call and returns its error.
func (p *Provider) done(c *Call, instance string, err error) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.doneLocked(c, instance, err)
}

// doneLocked is done for a caller that holds p.mu.
func (p *Provider) doneLocked(c *Call, instance string, err error) error {
	if instance != "" {
		c.Instance = instance
	}
	c.Done, c.Err = true, err
	return err
}
