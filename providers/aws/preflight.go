// SPDX-License-Identifier: Apache-2.0

package aws

import (
	"context"
	"errors"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/smithy-go"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

var _ providers.Preflighter = (*Provider)(nil)

// preflightToken stands in for a create's token in a dry run, which
// launches nothing for it to name.
const preflightToken = "gpufleet-preflight"

// Preflight sends the RunInstances a create of one node on offer would
// send, as a dry run: EC2 checks the call as it would check the launch
// (permission, image, instance profile, subnet and groups, the type in
// the zone) and answers DryRunOperation where it would go ahead. The
// bootstrap file is left out: it holds secrets, and EC2 checks only its
// size, which a create checks before sending it.
func (p *Provider) Preflight(ctx context.Context, offer planner.OfferKey) error {
	client, err := p.client("preflight", offer.Region)
	if err != nil {
		return err
	}
	var root string
	if p.cfg.Launch.DiskGB > 0 {
		image, err := p.image(offer.Region)
		if err != nil {
			return &providers.Error{Kind: providers.KindInvalid, Cloud: catalog.AWS, Op: "preflight", Offer: offer, Message: err.Error()}
		}
		if root, err = p.rootDevice(ctx, client, offer, image); err != nil {
			return err
		}
	}
	req := providers.CreateRequest{Offer: offer, Token: preflightToken, Fleet: preflightToken, Workload: preflightToken}
	in, err := p.runInput(req, 1, root)
	if err != nil {
		return &providers.Error{Kind: providers.KindInvalid, Cloud: catalog.AWS, Op: "preflight", Offer: offer, Message: err.Error()}
	}
	in.DryRun = awssdk.Bool(true)
	in.ClientToken = nil
	callCtx, cancel := p.call(ctx)
	defer cancel()
	_, err = client.RunInstances(callCtx, in)
	if apiErr, ok := errors.AsType[smithy.APIError](err); ok && apiErr.ErrorCode() == "DryRunOperation" {
		return nil
	}
	if err == nil {
		// A dry run that succeeds launches nothing and answers an error;
		// one that answered instances would have launched them.
		return &providers.Error{Kind: providers.KindUnavailable, Cloud: catalog.AWS, Op: "preflight", Offer: offer, Message: "a dry run of RunInstances answered as though it had launched"}
	}
	return classify("preflight", offer, err)
}
