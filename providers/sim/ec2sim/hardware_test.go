package ec2sim

import (
	"testing"

	"github.com/gpufleet/gpufleet/schema/catalog"
)

// Every AWS type of the embedded catalog has its published hardware and
// GPU in the tables, so DescribeInstanceTypes never falls back to the
// defaults for it, and enough network cards for the EFAs it takes.
func TestHardwareCoversTheCatalog(t *testing.T) {
	for _, o := range catalog.Default().Offers {
		if o.Cloud != catalog.AWS {
			continue
		}
		h, ok := hardwareOf[o.InstanceType]
		if !ok {
			t.Errorf("%s has no hardware entry", o.InstanceType)
			continue
		}
		if _, ok := gpuDevices[o.GPUModel]; !ok {
			t.Errorf("%s: GPU %s has no device entry", o.InstanceType, o.GPUModel)
		}
		if efa := catalog.EFAInterfaces(o.InstanceType); h.cards < efa || h.interfaces < h.cards {
			t.Errorf("%s: %d cards and %d interfaces for %d EFAs", o.InstanceType, h.cards, h.interfaces, efa)
		}
	}
}
