// SPDX-License-Identifier: Apache-2.0

package ec2sim

import (
	"testing"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// Every AWS type of the embedded catalog is described by its own
// published hardware or its family's, has its GPU's facts, and has enough
// network cards for the EFAs it takes; a family the catalog brings that
// the tables lack fails here rather than passing as a default Intel box.
func TestHardwareCoversTheCatalog(t *testing.T) {
	for _, o := range catalog.Default().Offers {
		if o.Cloud != catalog.AWS {
			continue
		}
		_, typed := hardwareOf[o.InstanceType]
		if _, inFamily := familyOf(o.InstanceType); !typed && !inFamily {
			t.Errorf("%s has no hardware or family entry", o.InstanceType)
		}
		if _, ok := sim.LookupGPU(o.GPUModel); !ok {
			t.Errorf("%s: GPU %s has no facts", o.InstanceType, o.GPUModel)
		}
		h := hardwareFor(o.InstanceType)
		if efa := catalog.EFAInterfaces(o.InstanceType); h.cards < efa || h.interfaces < h.cards {
			t.Errorf("%s: %d cards and %d interfaces for %d EFAs", o.InstanceType, h.cards, h.interfaces, efa)
		}
	}
}
