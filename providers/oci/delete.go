// SPDX-License-Identifier: Apache-2.0

package oci

import (
	"context"

	"github.com/oracle/oci-go-sdk/v65/common"
	"github.com/oracle/oci-go-sdk/v65/core"

	"github.com/gpufleet/gpufleet/providers"
)

// Delete terminates an owned instance, and its boot volume with it. It
// reads the instance first and refuses one without gpufleet's tags, of
// another fleet or token, or in another compartment, whatever the caller
// believes; one already gone, or going, is success.
func (p *Provider) Delete(ctx context.Context, inst providers.Instance) error {
	o := inst.OfferKey
	if inst.ID == "" {
		return p.invalid("delete", o, "a delete needs the instance's id")
	}
	c, err := p.client("delete", o, inst.Region)
	if err != nil {
		return err
	}
	callCtx, md := p.call(ctx)
	resp, err := c.compute.GetInstance(callCtx, core.GetInstanceRequest{InstanceId: &inst.ID, RequestMetadata: md})
	if err != nil {
		if e := p.classify("delete", o, err); e.Kind != providers.KindNotFound {
			return e
		}
		return nil
	}
	fleet, _, token, owned := providers.Owned(resp.FreeformTags)
	switch {
	case !owned:
		return p.invalid("delete", o, "instance %s is not owned by gpufleet", inst.ID)
	case inst.Fleet != "" && fleet != inst.Fleet:
		return p.invalid("delete", o, "instance %s belongs to fleet %q, not %q", inst.ID, fleet, inst.Fleet)
	case inst.Token != "" && token != inst.Token:
		return p.invalid("delete", o, "instance %s carries token %q, not %q", inst.ID, token, inst.Token)
	case deref(resp.CompartmentId) != p.cfg.Compartment:
		return p.invalid("delete", o, "instance %s is in compartment %s, not the configured %s", inst.ID, deref(resp.CompartmentId), p.cfg.Compartment)
	case ended(resp.LifecycleState):
		return nil
	}
	callCtx, md = p.call(ctx)
	_, err = c.compute.TerminateInstance(callCtx, core.TerminateInstanceRequest{
		InstanceId:         &inst.ID,
		PreserveBootVolume: common.Bool(false),
		RequestMetadata:    md,
	})
	if err != nil {
		if e := p.classify("delete", o, err); e.Kind != providers.KindNotFound {
			return e
		}
	}
	return nil
}
