// SPDX-License-Identifier: Apache-2.0

package gcp

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/api/iterator"
	"google.golang.org/protobuf/proto"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// pageSize is the most GCE's list methods return per page.
const pageSize = 500

// List returns the owned instances in the configured regions.
//
// It makes one aggregatedList call per project, which pages through every
// zone of the project at once, and keeps the zones of the configured
// regions. The regions therefore have no calls of their own to run
// concurrently, and a listing's pages cannot be fetched in parallel either:
// each needs the token of the page before it.
func (p *Provider) List(ctx context.Context, sel providers.Selector) ([]providers.Instance, error) {
	// GCE filters on labels server-side; the labels are checked again
	// below, as the filter is an optimisation and not the guard.
	filter := fmt.Sprintf("(labels.%s:*) (labels.%s:*)", providers.TagFleet, providers.TagWorkload)
	if sel.Fleet != "" {
		if !labelValueRE.MatchString(sel.Fleet) {
			// No instance can carry a label value GCE refuses.
			return nil, nil
		}
		filter += fmt.Sprintf(` (labels.%s = "%s")`, providers.TagFleet, sel.Fleet)
	}
	it := p.instances.AggregatedList(ctx, &computepb.AggregatedListInstancesRequest{
		Project:    p.cfg.Project,
		Filter:     proto.String(filter),
		MaxResults: proto.Uint32(pageSize),
		// ReturnPartialSuccess stays off: a listing that silently missed
		// an unreachable zone would make its instances look gone, and the
		// reconciler would replace them.
	}, p.callOptions()...)
	var out []providers.Instance
	// stopped are the spot VMs GCE is stopping or has stopped that this
	// process is not deleting, by index in out, with their ids: whether
	// GCE preempted them is in its operations.
	stopped := map[int]uint64{}
	zones := map[string]bool{}
	for {
		scoped, err := it.Next()
		if err == iterator.Done {
			break
		}
		if err != nil {
			return nil, classify("list", err)
		}
		zone, ok := strings.CutPrefix(scoped.Key, "zones/")
		if !ok || !p.regions[regionOf(zone)] {
			continue
		}
		for _, vm := range scoped.Value.GetInstances() {
			inst, ok := p.toInstance(vm)
			if !ok || !sel.Matches(inst) {
				continue
			}
			if inst.Market == catalog.Spot && inst.State == planner.StateStopping {
				stopped[len(out)] = vm.GetId()
				zones[zone] = true
			}
			out = append(out, inst)
		}
	}
	if len(stopped) == 0 {
		return out, nil
	}
	preempted, err := p.preemptions(ctx, zones)
	if err != nil {
		return nil, err
	}
	for i, id := range stopped {
		if preempted[id] {
			out[i].State = planner.StatePreempted
		}
	}
	return out, nil
}

// preemptionType is the operation GCE records on a VM it preempts.
const preemptionType = "compute.instances.preempted"

// preemptions lists the ids of the VMs GCE preempted in the zones given.
// A preempted VM's status is the one of a VM someone stops or deletes
// (STOPPING, then TERMINATED or gone); what tells them apart is the
// operation of type compute.instances.preempted that GCE records on the
// VM, which names it by id.
func (p *Provider) preemptions(ctx context.Context, zones map[string]bool) (map[uint64]bool, error) {
	out := map[uint64]bool{}
	for _, zone := range slices.Sorted(maps.Keys(zones)) {
		it := p.operations.List(ctx, &computepb.ListZoneOperationsRequest{
			Project:    p.cfg.Project,
			Zone:       zone,
			Filter:     proto.String(fmt.Sprintf("operationType=%q", preemptionType)),
			MaxResults: proto.Uint32(pageSize),
		}, p.callOptions()...)
		for {
			op, err := it.Next()
			if err == iterator.Done {
				break
			}
			if err != nil {
				return nil, classify("list", fmt.Errorf("listing the preemptions in %s, %w", zone, err))
			}
			if op.GetOperationType() == preemptionType {
				out[op.GetTargetId()] = true
			}
		}
	}
	return out, nil
}

// toInstance maps a GCE instance to gpufleet's view of it, or reports false
// when it lacks the ownership labels.
func (p *Provider) toInstance(vm *computepb.Instance) (providers.Instance, bool) {
	fleet, workload, token, ok := providers.Owned(vm.GetLabels())
	if !ok {
		return providers.Instance{}, false
	}
	token = nodeToken(fleet, workload, token, vm.GetName())
	zone := lastSegment(vm.GetZone())
	market := marketOf(vm.GetScheduling())
	launched, _ := time.Parse(time.RFC3339, vm.GetCreationTimestamp())
	return providers.Instance{
		ID: vm.GetName(),
		OfferKey: planner.OfferKey{
			Cloud:        Name,
			Region:       regionOf(zone),
			Zone:         zone,
			InstanceType: lastSegment(vm.GetMachineType()),
			Market:       market,
		},
		Fleet:      fleet,
		Workload:   workload,
		Token:      token,
		Bootstrap:  vm.GetLabels()[providers.TagBootstrap],
		State:      stateOf(vm.GetStatus(), p.isDeleting(zone+"/"+vm.GetName()), false),
		LaunchedAt: launched,
	}, true
}

// nodeToken is an instance's own token. A bulk insert labels every node of
// a batch with the batch's token, its first node's, and names each node by
// its slot: the name picks the node's token.
func nodeToken(fleet, workload, label, name string) string {
	if own, ok := providers.NodeToken(fleet, workload, label, name); ok {
		return own
	}
	return label
}

// stateOf maps a GCE status. A VM's status does not say who stops it: a
// VM that is stopping or stopped is stopped (not a working node, and still
// billing for its disks) unless this process is deleting it, or GCE says
// it preempted it (List looks that up for spot VMs, see preemptions).
func stateOf(status string, deletedByUs, preempted bool) planner.State {
	switch computepb.Instance_Status(computepb.Instance_Status_value[status]) {
	case computepb.Instance_RUNNING:
		return planner.StateRunning
	case computepb.Instance_PROVISIONING, computepb.Instance_STAGING, computepb.Instance_PENDING,
		computepb.Instance_REPAIRING:
		// REPAIRING returns to RUNNING by itself; replacing the VM
		// meanwhile would pay for two.
		return planner.StatePending
	case computepb.Instance_STOPPING, computepb.Instance_PENDING_STOP, computepb.Instance_SUSPENDING,
		computepb.Instance_DEPROVISIONING, computepb.Instance_TERMINATED, computepb.Instance_STOPPED,
		computepb.Instance_SUSPENDED:
		switch {
		case preempted:
			return planner.StatePreempted
		case deletedByUs:
			return planner.StateTerminated
		}
		// Stopped, not deleted: a TERMINATED VM is still there, and its
		// disks still bill, until someone deletes it.
		return planner.StateStopping
	}
	// A status newer than this code is most likely a transition; counting
	// it live avoids launching a second VM beside it.
	return planner.StatePending
}

// marketOf reads the market from the scheduling the VM was created with;
// preemptible is the older form of spot.
func marketOf(s *computepb.Scheduling) catalog.Market {
	if s.GetProvisioningModel() == computepb.Scheduling_SPOT.String() || s.GetPreemptible() {
		return catalog.Spot
	}
	return catalog.OnDemand
}

// regionOf is a zone's region: GCE zones are the region and a one-letter
// suffix ("us-central1-a").
func regionOf(zone string) string {
	i := strings.LastIndexByte(zone, '-')
	if i <= 0 {
		return ""
	}
	return zone[:i]
}

// lastSegment is the name at the end of a resource URL.
func lastSegment(url string) string {
	return url[strings.LastIndexByte(url, '/')+1:]
}
