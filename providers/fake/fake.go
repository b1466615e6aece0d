// SPDX-License-Identifier: Apache-2.0

package fake

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

var _ providers.Provider = (*Provider)(nil)

// Provider is one fake cloud. Its zero value is not usable: build it with
// New or NewWithOffers. Every method is safe for concurrent use, as the
// reconciler creates and deletes in parallel.
type Provider struct {
	cloud string

	mu     sync.Mutex
	offers []planner.Offer
	// instances by id; deleted ones are removed, their tokens kept in spent.
	instances map[string]*planner.Instance
	byToken   map[string]string
	spent     map[string]bool
	// launchState is the state a new instance starts in.
	launchState planner.State
	seq         int

	calls        []*Call
	createErrs   []error
	deleteErrs   []error
	listErrs     []error
	offersErrs   []error
	offerFailure map[planner.OfferKey]*offerFailure
	hold         *Hold
	capacity     providers.Capacity
}

// New is a fake cloud selling what the embedded price catalog lists for it
// in the given regions, as a provider with no live signals would.
func New(cloud string, regions ...string) *Provider {
	return NewWithOffers(cloud, planner.Expand(catalog.Default(), map[string][]string{cloud: regions}))
}

// NewWithOffers is a fake cloud selling exactly offers; those of other
// clouds are dropped.
func NewWithOffers(cloud string, offers []planner.Offer) *Provider {
	p := &Provider{
		cloud:        cloud,
		instances:    map[string]*planner.Instance{},
		byToken:      map[string]string{},
		spent:        map[string]bool{},
		launchState:  planner.StateRunning,
		offerFailure: map[planner.OfferKey]*offerFailure{},
	}
	p.SetOffers(offers)
	return p
}

// SetOffers replaces what the cloud sells. Creates on an offer it does not
// sell fail as invalid.
func (p *Provider) SetOffers(offers []planner.Offer) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.offers = slices.DeleteFunc(slices.Clone(offers), func(o planner.Offer) bool { return o.Cloud != p.cloud })
}

// SetLaunchState sets the state new instances start in; running unless
// set, so that a run that creates everything converges at once.
func (p *Provider) SetLaunchState(s planner.State) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.launchState = s
}

// Name is the cloud the fake stands for.
func (p *Provider) Name() string { return p.cloud }

// Offers returns the offers the fake sells, sorted by key.
func (p *Provider) Offers(ctx context.Context) ([]planner.Offer, error) {
	i := p.record(Call{Method: MethodOffers})
	if err := p.callErr(ctx, &p.offersErrs, "offers", planner.OfferKey{}); err != nil {
		return nil, p.done(i, "", err)
	}
	p.mu.Lock()
	out := slices.Clone(p.offers)
	p.mu.Unlock()
	slices.SortFunc(out, func(a, b planner.Offer) int { return a.Compare(b.OfferKey) })
	return out, p.done(i, "", nil)
}

// List returns the owned instances the selector matches, sorted by id.
// Instances without a fleet and a workload are someone else's and never
// listed.
func (p *Provider) List(ctx context.Context, sel providers.Selector) ([]providers.Instance, error) {
	i := p.record(Call{Method: MethodList, Fleet: sel.Fleet})
	if err := p.callErr(ctx, &p.listErrs, "list", planner.OfferKey{}); err != nil {
		return nil, p.done(i, "", err)
	}
	p.mu.Lock()
	var out []providers.Instance
	for _, id := range slices.Sorted(maps.Keys(p.instances)) {
		inst := *p.instances[id]
		if owned(inst) && sel.Matches(inst) {
			out = append(out, inst)
		}
	}
	p.mu.Unlock()
	return out, p.done(i, "", nil)
}

// Create launches an instance on req.Offer, or fails as injected. A repeat
// of a token whose instance is live returns that instance; a token whose
// instance was deleted or no longer works is spent, as EC2 and GCE answer
// one.
func (p *Provider) Create(ctx context.Context, req providers.CreateRequest) (providers.Instance, error) {
	i := p.record(Call{Method: MethodCreate, Offer: req.Offer, Token: req.Token, Fleet: req.Fleet, Workload: req.Workload, Labels: maps.Clone(req.Labels)})
	if err := p.wait(ctx, req); err != nil {
		return providers.Instance{}, p.done(i, "", err)
	}
	if err := p.callErr(ctx, &p.createErrs, "create", req.Offer); err != nil {
		return providers.Instance{}, p.done(i, "", err)
	}
	p.mu.Lock()
	inst, err := p.create(req)
	p.mu.Unlock()
	return inst, p.done(i, inst.ID, err)
}

// create is Create once the call is past its injected errors. The caller
// holds p.mu.
func (p *Provider) create(req providers.CreateRequest) (providers.Instance, error) {
	if err := p.offerErr(req.Offer); err != nil {
		return providers.Instance{}, err
	}
	if req.Token == "" || req.Fleet == "" || req.Workload == "" {
		return providers.Instance{}, p.fail(providers.KindInvalid, "create", req.Offer, "a create needs a token, a fleet and a workload")
	}
	if !slices.ContainsFunc(p.offers, func(o planner.Offer) bool { return o.OfferKey == req.Offer }) {
		return providers.Instance{}, p.fail(providers.KindInvalid, "create", req.Offer, "the cloud does not sell "+req.Offer.String())
	}
	if id, ok := p.byToken[req.Token]; ok {
		inst := p.instances[id]
		if inst.State.Live() {
			return *inst, nil
		}
		return providers.Instance{}, p.fail(providers.KindTokenSpent, "create", req.Offer, fmt.Sprintf("token %s already launched %s, which is %s", req.Token, id, inst.State))
	}
	if p.spent[req.Token] {
		return providers.Instance{}, p.fail(providers.KindTokenSpent, "create", req.Offer, fmt.Sprintf("token %s already launched an instance, which is gone", req.Token))
	}
	inst := &planner.Instance{
		// Named after the token, as GCE and Azure name theirs: creates run
		// in parallel, and a sequence number would depend on their order.
		ID:       providers.InstanceName(req.Fleet, req.Workload, req.Token),
		OfferKey: req.Offer,
		Fleet:    req.Fleet,
		Workload: req.Workload,
		Token:    req.Token,
		State:    p.launchState,
	}
	p.instances[inst.ID] = inst
	p.byToken[inst.Token] = inst.ID
	return *inst, nil
}

// Delete removes an owned instance. One already gone is a success; one the
// fake holds without a fleet and a workload, or of another fleet than inst
// says, is refused as invalid, as the real providers refuse what gpufleet
// does not own.
func (p *Provider) Delete(ctx context.Context, inst providers.Instance) error {
	i := p.record(Call{Method: MethodDelete, Offer: inst.OfferKey, Instance: inst.ID, Fleet: inst.Fleet, Workload: inst.Workload, Token: inst.Token})
	if err := p.callErr(ctx, &p.deleteErrs, "delete", inst.OfferKey); err != nil {
		return p.done(i, inst.ID, err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	current, ok := p.instances[inst.ID]
	switch {
	case !ok:
		return p.doneLocked(i, inst.ID, nil)
	case !owned(*current):
		return p.doneLocked(i, inst.ID, p.fail(providers.KindInvalid, "delete", inst.OfferKey, "instance "+inst.ID+" is not owned by gpufleet"))
	case inst.Fleet != "" && current.Fleet != inst.Fleet:
		return p.doneLocked(i, inst.ID, p.fail(providers.KindInvalid, "delete", inst.OfferKey, fmt.Sprintf("instance %s belongs to fleet %q, not %q", inst.ID, current.Fleet, inst.Fleet)))
	}
	p.remove(current.ID)
	return p.doneLocked(i, inst.ID, nil)
}

// remove forgets an instance and spends its token. The caller holds p.mu.
func (p *Provider) remove(id string) {
	inst := p.instances[id]
	delete(p.instances, id)
	if inst.Token != "" {
		delete(p.byToken, inst.Token)
		p.spent[inst.Token] = true
	}
}

func owned(inst planner.Instance) bool { return inst.Fleet != "" && inst.Workload != "" }

// fail builds a classified error of this cloud.
func (p *Provider) fail(kind providers.Kind, op string, offer planner.OfferKey, msg string) error {
	return &providers.Error{Kind: kind, Cloud: p.cloud, Op: op, Offer: offer, Code: "fake-" + string(kind), Message: msg}
}
