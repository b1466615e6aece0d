// SPDX-License-Identifier: Apache-2.0

package gcp

import (
	"context"
	"fmt"
	"time"

	"cloud.google.com/go/compute/apiv1/computepb"
)

// await waits for a zonal operation to finish and returns it as it ended.
// It calls zoneOperations.wait, which blocks on the server until the
// operation is done or about two minutes pass, instead of the SDK's
// Operation.Wait, which polls with a backoff that starts at a second of
// real time and is bounded only by the context.
func (p *Provider) await(ctx context.Context, zone string, op *computepb.Operation) (*computepb.Operation, error) {
	return p.awaitWith(ctx, op, func(ctx context.Context) (*computepb.Operation, error) {
		return p.operations.Wait(ctx, &computepb.WaitZoneOperationRequest{
			Project:   p.cfg.Project,
			Zone:      zone,
			Operation: op.GetName(),
		}, p.callOptions()...)
	})
}

// awaitRegion is await for a regional operation (resource policies'),
// through regionOperations.wait.
func (p *Provider) awaitRegion(ctx context.Context, region string, op *computepb.Operation) (*computepb.Operation, error) {
	return p.awaitWith(ctx, op, func(ctx context.Context) (*computepb.Operation, error) {
		return p.regionOps.Wait(ctx, &computepb.WaitRegionOperationRequest{
			Project:   p.cfg.Project,
			Region:    region,
			Operation: op.GetName(),
		}, p.callOptions()...)
	})
}

// awaitWith calls wait until the operation is DONE, pausing between calls
// that answer early, within OperationTimeout.
func (p *Provider) awaitWith(ctx context.Context, op *computepb.Operation, wait func(context.Context) (*computepb.Operation, error)) (*computepb.Operation, error) {
	ctx, cancel := context.WithTimeout(ctx, p.opts.OperationTimeout)
	defer cancel()
	for op.GetStatus() != computepb.Operation_DONE {
		next, err := wait(ctx)
		if err != nil {
			return nil, fmt.Errorf("waiting for operation %s, %w", op.GetName(), err)
		}
		op = next
		if op.GetStatus() == computepb.Operation_DONE {
			break
		}
		t := time.NewTimer(p.opts.OperationPoll)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("waiting for operation %s, %w", op.GetName(), ctx.Err())
		case <-t.C:
		}
	}
	return op, nil
}
