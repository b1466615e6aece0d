package gcp

import (
	"context"
	"fmt"
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
			if ok && sel.Matches(inst) {
				out = append(out, inst)
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
		State:      stateOf(vm.GetStatus(), market, p.isDeleting(zone+"/"+vm.GetName())),
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

// stateOf maps a GCE status. GCE does not say who stops a VM: a spot VM
// that is stopping or stopped, and that this process is not deleting, was
// reclaimed. (gpufleet never stops VMs, it only deletes them; a VM another
// process is deleting reads as preempted, which is not live either.)
func stateOf(status string, market catalog.Market, deletedByUs bool) planner.State {
	reclaimed := market == catalog.Spot && !deletedByUs
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
		case reclaimed:
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
