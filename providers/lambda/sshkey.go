// SPDX-License-Identifier: Apache-2.0

package lambda

import (
	"context"
	"fmt"
	"net/http"
	"slices"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
)

// sshKeySetting is where the SSH key launches name is configured.
const sshKeySetting = "clouds.lambda.launch.sshKeyName"

// checkSSHKey makes sure the account has the SSH key launches name, which
// Lambda requires exactly one of: an unset or unknown key is an invalid
// error naming the setting, rather than Lambda's refusal of every launch.
// When the account lacks it and clouds.lambda.launch.sshPublicKey gives
// the key, add says whether to add it under that name: a create does, a
// preflight, which changes nothing, does not, and passes. The account is
// asked once; a key found or added stays found, and a failed look is made
// again next time.
func (p *Provider) checkSSHKey(ctx context.Context, op string, offer planner.OfferKey, add bool) error {
	name := p.cfg.Launch.SSHKeyName
	if name == "" {
		return &providers.Error{Kind: providers.KindInvalid, Cloud: Name, Op: op, Offer: offer,
			Message: fmt.Sprintf("no SSH key configured (%s): Lambda Cloud launches need exactly one of the account's keys", sshKeySetting)}
	}
	p.keyMu.Lock()
	defer p.keyMu.Unlock()
	p.mu.Lock()
	checked := p.sshKeyChecked
	p.mu.Unlock()
	if checked {
		return nil
	}
	var keys []apiSSHKey
	if err := p.call(ctx, op, http.MethodGet, "/ssh-keys", nil, &keys); err != nil {
		return withOffer(err, offer)
	}
	found := slices.ContainsFunc(keys, func(k apiSSHKey) bool { return k.Name == name })
	public := p.cfg.Launch.SSHPublicKey
	switch {
	case !found && public == "":
		return &providers.Error{Kind: providers.KindInvalid, Cloud: Name, Op: op, Offer: offer,
			Message: fmt.Sprintf("the account has no SSH key named %q (%s): add it in the Lambda Cloud console, name one it has, or give its public half in clouds.lambda.launch.sshPublicKey", name, sshKeySetting)}
	case !found && !add:
		// The create will add it.
		return nil
	case !found:
		var added apiSSHKey
		if err := p.call(ctx, op, http.MethodPost, "/ssh-keys", addSSHKeyRequest{Name: name, PublicKey: public}, &added); err != nil {
			return withOffer(err, offer)
		}
	}
	p.mu.Lock()
	p.sshKeyChecked = true
	p.mu.Unlock()
	return nil
}

// Preflight checks what a launch on offer would be refused for without
// launching: the request itself, the SSH key, and that Lambda lists the
// type. Whether there is room is not checked.
func (p *Provider) Preflight(ctx context.Context, offer planner.OfferKey) error {
	if err := p.checkOffer("preflight", offer); err != nil {
		return err
	}
	if err := p.checkSSHKey(ctx, "preflight", offer, false); err != nil {
		return err
	}
	types, err := p.instanceTypes(ctx, "preflight")
	if err != nil {
		return withOffer(err, offer)
	}
	if !types.listed(offer.InstanceType) {
		return &providers.Error{Kind: providers.KindCapacity, Cloud: Name, Op: "preflight", Offer: offer,
			Message: fmt.Sprintf("Lambda Cloud does not list instance type %s", offer.InstanceType)}
	}
	return nil
}

// withOffer names the offer on a classified error.
func withOffer(err error, o planner.OfferKey) error {
	if e, ok := err.(*providers.Error); ok {
		e.Offer = o
	}
	return err
}
