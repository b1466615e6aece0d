// SPDX-License-Identifier: Apache-2.0

package reconcile

import (
	"slices"
	"testing"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// Lambda Cloud retires instance types: its API stops listing one while
// nodes of it still run. Such nodes are held where they are, never
// deleted for it, and no node of the type is launched anew: the example's
// finetune nodes keep running on a type neither the API nor a catalog
// refreshed from it lists any more.
func TestALambdaTypeTheAPINoLongerListsIsHeld(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Config{Seed: 3})
	e.mustRun(nil)
	checkConverged(t, e)
	const retired = "gpu_8x_h100_sxm5"
	var running []string
	for _, inst := range e.World.List(catalog.Lambda, nil) {
		if inst.InstanceType == retired && inst.State == sim.StateRunning {
			running = append(running, inst.ID)
		}
	}
	if len(running) != 2 {
		t.Fatalf("%d finetune nodes of %s run on Lambda, want the example's 2", len(running), retired)
	}
	// The API lists the type no more, and neither does a catalog read
	// from it.
	for _, r := range e.World.Catalog().RegionsOf(catalog.Lambda) {
		for _, z := range r.Zones {
			e.World.SetOffered(catalog.Lambda, z, retired, false)
		}
	}
	cat := *catalog.Default()
	cat.Offers = slices.DeleteFunc(slices.Clone(cat.Offers), func(o catalog.Offer) bool {
		return o.Cloud == catalog.Lambda && o.InstanceType == retired
	})
	before := e.Mutations()
	c := e.checkout()
	res, err := runWith(t.Context(), c, e.optionsWith(c, &cat), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range res.Applied {
		if a.Workload == "finetune" {
			t.Errorf("the run changed finetune: %+v", a)
		}
	}
	if e.Mutations() != before {
		t.Errorf("the run made %d calls that change a cloud", e.Mutations()-before)
	}
	var still []string
	for _, inst := range e.World.List(catalog.Lambda, nil) {
		if inst.State == sim.StateRunning {
			still = append(still, inst.ID)
		}
	}
	slices.Sort(running)
	slices.Sort(still)
	if !slices.Equal(running, still) {
		t.Errorf("Lambda ran %v before and %v after", running, still)
	}
	w := res.Report.Plan.Workload("training", "finetune")
	if w == nil || w.Placed != 2 || len(w.Placements) != 1 || w.Placements[0].Kept != 2 || w.Placements[0].Offer.InstanceType != retired {
		t.Errorf("the plan places finetune %+v, want its 2 nodes kept on %s", w, retired)
	}
}
