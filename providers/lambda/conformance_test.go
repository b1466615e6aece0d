// SPDX-License-Identifier: Apache-2.0

package lambda

import (
	"context"
	"strconv"
	"testing"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/providers/conformance"
	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/providers/sim/lambdasim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

func TestConformance(t *testing.T) {
	b := newBackend(t, sim.Config{}, nil)
	conformance.Run(t, conformance.Harness{
		Provider: b.provider,
		Offer:    testOffer,
		World:    b.world,
		Seed:     b.seed,
		Foreign:  b.foreign,
		Alive:    b.alive,
		// Lambda Cloud sells on-demand instances only: there is no spot
		// instance to preempt, and the suite says so instead of passing
		// the case.
		NoSpot: true,
		// Lambda Cloud has no tags: a node is gpufleet's by its name,
		// which carries its token, and a foreign instance is one whose
		// name does not read as a node's.
		TokenOf: func(i *sim.Instance) (string, bool) {
			_, _, token, ok := ParseNodeName(i.Properties["name"])
			return token, ok
		},
		CreateCalls: []string{"lambda " + lambdasim.OpLaunch},
		DeleteCalls: []string{"lambda " + lambdasim.OpTerminate},
	})
}

// seed launches owned instances straight into the world, named as
// Create names them, in the region the suite does not stock out.
func (b backend) seed(ctx context.Context, fleet string, n int) error {
	offer := testOffer
	offer.Region, offer.Zone = otherRegion, otherRegion
	for i := range n {
		name, err := NodeName(fleet, "w", planner.Token(fleet, "w", offer, "seed", i))
		if err != nil {
			return err
		}
		if _, err := b.world.Launch(sim.LaunchSpec{Cloud: Name, Zone: offer.Zone, InstanceType: offer.InstanceType, Market: catalog.OnDemand,
			Properties: map[string]string{"name": name, "sshKey": testSSHKey}}); err != nil {
			return err
		}
	}
	return nil
}

// foreign launches, through the API, an instance whose name is not a
// node's.
func (b backend) foreign(ctx context.Context) (string, error) {
	var launched struct {
		IDs []string `json:"instance_ids"`
	}
	err := b.provider.call(ctx, "test", "POST", "/instance-operations/launch", launchRequest{
		RegionName: testOffer.Region, InstanceTypeName: testOffer.InstanceType, SSHKeyNames: []string{testSSHKey},
		FileSystemNames: []string{}, Quantity: 1, Name: "notebook-" + strconv.Itoa(b.world.Rand(1_000_000)),
	}, &launched)
	if err != nil {
		return "", err
	}
	return launched.IDs[0], nil
}

func (b backend) alive(ctx context.Context, id string) (bool, error) {
	in, err := b.provider.instance(ctx, "test", id)
	if providers.KindOf(err) == providers.KindNotFound {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return in.Status != statusTerminating && in.Status != statusTerminated, nil
}
