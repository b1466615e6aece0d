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
)

var _ providers.Adopter = (*Provider)(nil)

// Unowned lists the project's instances in the configured regions that
// carry no ownership labels, through one aggregatedList. Label selectors
// go to GCE as a filter and are checked again here, as are names; a
// Limit stops the listing once it has Limit+1.
func (p *Provider) Unowned(ctx context.Context, sel providers.UnownedSelector) ([]providers.Unowned, error) {
	req := &computepb.AggregatedListInstancesRequest{Project: p.cfg.Project, MaxResults: proto.Uint32(pageSize)}
	var terms []string
	for _, k := range slices.Sorted(maps.Keys(sel.Tags)) {
		if !labelKeyRE.MatchString(k) || !labelValueRE.MatchString(sel.Tags[k]) {
			// No instance can carry a label GCE refuses.
			return nil, nil
		}
		terms = append(terms, fmt.Sprintf(`(labels.%s = "%s")`, k, sel.Tags[k]))
	}
	if len(terms) > 0 {
		req.Filter = proto.String(strings.Join(terms, " "))
	}
	it := p.instances.AggregatedList(ctx, req, p.callOptions()...)
	var out []providers.Unowned
	for !sel.Full(len(out)) {
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
			if _, _, _, owned := providers.Owned(vm.GetLabels()); owned || !sel.Selects(vm.GetName(), vm.GetLabels()) {
				continue
			}
			u := p.unownedOf(vm)
			if u.State == planner.StateTerminated {
				continue
			}
			out = append(out, u)
		}
	}
	providers.SortUnowned(out)
	if sel.Full(len(out)) {
		out = out[:sel.Limit+1]
	}
	return out, nil
}

func (p *Provider) unownedOf(vm *computepb.Instance) providers.Unowned {
	zone := lastSegment(vm.GetZone())
	launched, _ := time.Parse(time.RFC3339, vm.GetCreationTimestamp())
	return providers.Unowned{
		ID: vm.GetName(),
		Offer: planner.OfferKey{
			Cloud: Name, Region: regionOf(zone), Zone: zone,
			InstanceType: lastSegment(vm.GetMachineType()), Market: marketOf(vm.GetScheduling()),
		},
		State:      stateOf(vm.GetStatus(), false, false),
		Tags:       maps.Clone(vm.GetLabels()),
		Account:    p.cfg.Project,
		LaunchedAt: launched,
	}
}

// adoptAttempts bounds how often Adopt reads the labels again after GCE
// refused a fingerprint someone else's change made stale.
const adoptAttempts = 3

// Adopt labels an unowned instance with the ownership labels of req,
// keeping the labels it has. setLabels replaces them all and takes the
// fingerprint of the labels it replaces: one that changed since they were
// read fails 412 conditionNotMet, and Adopt reads them again, so an
// instance somebody else took meanwhile is refused, never taken over.
func (p *Provider) Adopt(ctx context.Context, u providers.Unowned, req providers.CreateRequest) (providers.Instance, error) {
	const op = "adopt"
	fail := func(format string, args ...any) error {
		return &providers.Error{Kind: providers.KindInvalid, Cloud: Name, Op: op, Offer: u.Offer, Message: fmt.Sprintf(format, args...)}
	}
	if u.ID == "" || u.Offer.Zone == "" || req.Fleet == "" || req.Workload == "" || req.Token == "" {
		return providers.Instance{}, fail("an adoption needs an instance name and zone, a fleet, a workload and a token")
	}
	want := providers.OwnershipTags(req)
	for k, v := range want {
		if !labelKeyRE.MatchString(k) || !labelValueRE.MatchString(v) {
			return providers.Instance{}, fail("label %s=%q is not one GCE takes", k, v)
		}
	}
	for attempt := 1; ; attempt++ {
		vm, err := p.get(ctx, u.Offer.Zone, u.ID)
		if err != nil {
			return providers.Instance{}, classify(op, err)
		}
		done, err := providers.CheckAdoptable(u.ID, vm.GetLabels(), want)
		switch {
		case err != nil:
			return providers.Instance{}, fail("%v", err)
		case done:
			return p.adopted(vm)
		}
		labels := maps.Clone(vm.GetLabels())
		if labels == nil {
			labels = map[string]string{}
		}
		maps.Copy(labels, want)
		started, err := p.instances.SetLabels(ctx, &computepb.SetLabelsInstanceRequest{
			Project: p.cfg.Project, Zone: u.Offer.Zone, Instance: u.ID,
			InstancesSetLabelsRequestResource: &computepb.InstancesSetLabelsRequest{
				Labels: labels, LabelFingerprint: proto.String(vm.GetLabelFingerprint()),
			},
		}, p.callOptions()...)
		if err != nil {
			e := classify(op, err)
			if e.Code == "conditionNotMet" && attempt < adoptAttempts {
				continue
			}
			return providers.Instance{}, e
		}
		finished, err := p.await(ctx, u.Offer.Zone, started.Proto())
		if err != nil {
			return providers.Instance{}, classify(op, err)
		}
		if finished.GetError() != nil {
			return providers.Instance{}, operationError(op, finished)
		}
		vm, err = p.get(ctx, u.Offer.Zone, u.ID)
		if err != nil {
			return providers.Instance{}, classify(op, err)
		}
		return p.adopted(vm)
	}
}

// adopted is an instance as List returns it once labelled.
func (p *Provider) adopted(vm *computepb.Instance) (providers.Instance, error) {
	inst, ok := p.toInstance(vm)
	if !ok {
		return providers.Instance{}, &providers.Error{Kind: providers.KindUnavailable, Cloud: Name, Op: "adopt", Message: fmt.Sprintf("instance %s does not show its ownership labels after labelling", vm.GetName())}
	}
	return inst, nil
}
