// SPDX-License-Identifier: Apache-2.0

package armsim

import (
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// zonalCatalog is the emulator's small test catalog: in eastus the A100
// size is sold in zone 2 only, the T4 size in every zone.
func zonalCatalog(t *testing.T) *catalog.Catalog {
	t.Helper()
	f, err := os.Open("../testdata/zonal-catalog.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cat, err := catalog.Read(f)
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

// Resource SKUs lists a size in the zones the catalog sells it in; a VM
// of it pinned to another zone is refused with SkuNotAvailable, and one
// pinned to its zone, or to none, is created there.
func TestZonalSizes(t *testing.T) {
	f := newFront(t, frontConfig{world: sim.Config{Catalog: zonalCatalog(t)}})
	skus, _, err := f.skusIn(t, "location eq 'eastus'")
	if err != nil {
		t.Fatal(err)
	}
	zonesOf := map[string][]string{}
	for _, s := range skus {
		if str(s.ResourceType) != "virtualMachines" {
			continue
		}
		for _, li := range s.LocationInfo {
			for _, z := range li.Zones {
				zonesOf[str(s.Name)] = append(zonesOf[str(s.Name)], str(z))
			}
		}
		if len(s.Restrictions) != 0 {
			t.Errorf("%s is restricted: %+v", str(s.Name), s.Restrictions)
		}
	}
	for _, tt := range []struct {
		size string
		want []string
	}{{a100, []string{"2"}}, {t4, []string{"1", "2", "3"}}} {
		got := slices.Clone(zonesOf[tt.size])
		slices.Sort(got)
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s in zones %v, want %v", tt.size, got, tt.want)
		}
	}

	_, err = f.create(t, "a100-in-1", vmRequest("eastus", a100, inZone("1")))
	msg := refusal(t, err, "SkuNotAvailable", http.StatusConflict, "")
	if !strings.Contains(msg, "is currently not available in location 'eastus' zones '1'") {
		t.Errorf("message %q", msg)
	}
	if vm := f.mustCreate(t, "a100-in-2", vmRequest("eastus", a100, inZone("2"))); len(vm.Zones) != 1 || str(vm.Zones[0]) != "2" {
		t.Errorf("pinned to zone 2, created in %v", vm.Zones)
	}
	f.mustCreate(t, "a100-anywhere", vmRequest("eastus", a100))
	for _, inst := range f.world.List(catalog.Azure, nil) {
		if inst.InstanceType == a100 && inst.Zone != "eastus-2" {
			t.Errorf("%s placed in %s, where the catalog does not sell it", inst.Name, inst.Zone)
		}
	}
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
