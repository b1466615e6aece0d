// SPDX-License-Identifier: Apache-2.0

package gcp

import (
	"context"
	"fmt"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"

	"github.com/gpufleet/gpufleet/providers"
)

// Delete deletes an owned instance and waits for the delete operation. It
// reads the instance first and refuses one without gpufleet's labels;
// deleting one that is already gone succeeds.
func (p *Provider) Delete(ctx context.Context, inst providers.Instance) error {
	zone, name := inst.Zone, inst.ID
	if zone == "" || name == "" {
		return &providers.Error{Kind: providers.KindInvalid, Cloud: Name, Op: "delete", Message: fmt.Sprintf("instance %q in zone %q: a delete needs both", name, zone)}
	}
	vm, err := p.get(ctx, zone, name)
	if err != nil {
		if e := classify("delete", err); e.Kind != providers.KindNotFound {
			return e
		}
		return nil
	}
	fleet, workload, token, owned := providers.Owned(vm.GetLabels())
	token = nodeToken(fleet, workload, token, name)
	if !owned {
		return &providers.Error{Kind: providers.KindInvalid, Cloud: Name, Op: "delete", Message: fmt.Sprintf("instance %s in %s is not owned by gpufleet", name, zone)}
	}
	if inst.Token != "" && token != inst.Token {
		return &providers.Error{Kind: providers.KindInvalid, Cloud: Name, Op: "delete",
			Message: fmt.Sprintf("instance %s in %s carries token %q, not %q", name, zone, token, inst.Token)}
	}

	key := zone + "/" + name
	p.markDeleting(key, true)
	op, err := p.instances.Delete(ctx, &computepb.DeleteInstanceRequest{
		Project:   p.cfg.Project,
		Zone:      zone,
		Instance:  name,
		RequestId: proto.String(deleteRequestID()),
	}, p.callOptions()...)
	if err != nil {
		e := classify("delete", err)
		if e.Kind == providers.KindNotFound {
			p.markDeleting(key, false)
			return nil
		}
		// A throttled or failed call may still have reached GCE, so the
		// instance stays marked as ours to delete; a refusal did not.
		if !providers.Retryable(e) {
			p.markDeleting(key, false)
		}
		return e
	}
	done, err := p.await(ctx, zone, op.Proto())
	if err != nil {
		return classify("delete", err)
	}
	p.markDeleting(key, false)
	if failed := operationError("delete", done); failed != nil && failed.Kind != providers.KindNotFound {
		return failed
	}
	return nil
}
