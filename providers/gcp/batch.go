// SPDX-License-Identifier: Apache-2.0

package gcp

import (
	"context"
	"fmt"
	"slices"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/api/iterator"
	"google.golang.org/protobuf/proto"

	"github.com/gpufleet/gpufleet/providers"
)

// CreateBatch launches up to req.Count instances with one bulkInsert: each
// named from its own token, all labelled with the batch's, minCount 1 so
// GCE creates what the zone holds. The requestId is derived from the first
// token and the count, and the names from the tokens, so a repeat gets the
// first batch's operation, and a batch that overlaps one already made is
// refused for the names it shares rather than making them twice.
func (p *Provider) CreateBatch(ctx context.Context, req providers.BatchRequest) ([]providers.Instance, error) {
	o := req.Offer
	if err := p.checkRequest(req.CreateRequest); err != nil {
		return nil, err
	}
	tokens := req.Tokens()
	if req.Count < 1 || req.Count > providers.MaxBatch || tokens == nil {
		return nil, withOffer(&providers.Error{Kind: providers.KindInvalid, Cloud: Name, Op: "create",
			Message: fmt.Sprintf("token %q and count %d name no batch of 1 to %d", req.Token, req.Count, providers.MaxBatch)}, o)
	}
	names := make([]string, len(tokens))
	per := make(map[string]*computepb.BulkInsertInstanceResourcePerInstanceProperties, len(tokens))
	for i, t := range tokens {
		names[i] = providers.InstanceName(req.Fleet, req.Workload, t)
		per[names[i]] = &computepb.BulkInsertInstanceResourcePerInstanceProperties{}
	}
	vm := p.instanceResource(names[0], req.CreateRequest, true)
	op, err := p.instances.BulkInsert(ctx, &computepb.BulkInsertInstanceRequest{
		Project:   p.cfg.Project,
		Zone:      o.Zone,
		RequestId: proto.String(requestID(fmt.Sprintf("%s*%d", req.Token, req.Count))),
		BulkInsertInstanceResourceResource: &computepb.BulkInsertInstanceResource{
			Count:                 proto.Int64(int64(req.Count)),
			MinCount:              proto.Int64(1),
			PerInstanceProperties: per,
			InstanceProperties: &computepb.InstanceProperties{
				MachineType:       proto.String(o.InstanceType),
				Disks:             vm.Disks,
				NetworkInterfaces: vm.NetworkInterfaces,
				Scheduling:        vm.Scheduling,
				Labels:            vm.Labels,
				Metadata:          vm.Metadata,
				ServiceAccounts:   vm.ServiceAccounts,
				ResourcePolicies:  vm.ResourcePolicies,
			},
		},
	}, p.callOptions()...)
	if err != nil {
		return nil, p.insertError(ctx, err, o)
	}
	done, err := p.await(ctx, o.Zone, op.Proto())
	if err != nil {
		return nil, withOffer(classify("create", err), o)
	}
	if failed := operationError("create", done); failed != nil {
		// Below minCount GCE creates nothing, and rolls back what it made.
		return nil, withOffer(failed, o)
	}
	made, err := p.batchMembers(ctx, req, names)
	if err != nil {
		return nil, err
	}
	created := done.GetInstancesBulkInsertOperationMetadata().GetPerLocationStatus()["zones/"+o.Zone].GetCreatedVmCount()
	if int(created) > len(made) {
		// A replayed bulk insert: some of the nodes it made have ended.
		return nil, withOffer(&providers.Error{Kind: providers.KindTokenSpent, Cloud: Name, Op: "create",
			Message: fmt.Sprintf("token %s already made %d instances, of which %d are left", req.Token, created, len(made))}, o)
	}
	if len(made) < req.Count {
		return made, withOffer(&providers.Error{Kind: providers.KindCapacity, Cloud: Name, Op: "create", Code: "ZONE_RESOURCE_POOL_EXHAUSTED",
			Message: fmt.Sprintf("bulkInsert created %d of %d: %s had room for no more", len(made), req.Count, o.Zone)}, o)
	}
	return made, nil
}

// batchMembers reads back which of a batch's instances exist, in slot
// order: the operation says how many GCE made, not which.
func (p *Provider) batchMembers(ctx context.Context, req providers.BatchRequest, names []string) ([]providers.Instance, error) {
	o := req.Offer
	it := p.instances.List(ctx, &computepb.ListInstancesRequest{
		Project:    p.cfg.Project,
		Zone:       o.Zone,
		Filter:     proto.String(fmt.Sprintf(`labels.%s = "%s"`, providers.TagToken, req.Token)),
		MaxResults: proto.Uint32(pageSize),
	}, p.callOptions()...)
	byName := map[string]providers.Instance{}
	for {
		vm, err := it.Next()
		if err == iterator.Done {
			break
		}
		if err != nil {
			return nil, withOffer(classify("create", err), o)
		}
		inst, ok := p.toInstance(vm)
		if ok && inst.Fleet == req.Fleet && inst.Workload == req.Workload && slices.Contains(names, vm.GetName()) {
			byName[vm.GetName()] = inst
		}
	}
	var out []providers.Instance
	for _, name := range names {
		if inst, ok := byName[name]; ok {
			if !inst.State.Live() {
				// A replayed bulk insert whose nodes have since ended.
				return nil, withOffer(&providers.Error{Kind: providers.KindTokenSpent, Cloud: Name, Op: "create",
					Message: fmt.Sprintf("token %s already made instance %s, which is %s", req.Token, name, inst.State)}, o)
			}
			out = append(out, inst)
		}
	}
	return out, nil
}
