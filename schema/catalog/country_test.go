// SPDX-License-Identifier: Apache-2.0

package catalog

import (
	"slices"
	"testing"
)

// Every region of the embedded catalog has a country, and every geography
// a rule may name holds only countries written as ISO codes.
func TestEveryRegionHasACountry(t *testing.T) {
	for _, r := range Default().Regions {
		if _, ok := CountryOf(r.Cloud, r.Name); !ok {
			t.Errorf("%s %s has no country", r.Cloud, r.Name)
		}
	}
	for _, g := range Geos() {
		countries, _ := GeoCountries(g)
		if len(countries) == 0 || !slices.IsSorted(countries) {
			t.Errorf("geography %s: %v, want sorted country codes", g, countries)
		}
		for _, c := range countries {
			if len(c) != 2 || c[0] < 'A' || c[0] > 'Z' || c[1] < 'A' || c[1] > 'Z' {
				t.Errorf("geography %s: %q is not a country code", g, c)
			}
		}
	}
	eu, _ := GeoCountries("eu")
	for _, notEU := range []string{"GB", "CH", "NO"} {
		if slices.Contains(eu, notEU) {
			t.Errorf("%s is not in the European Union", notEU)
		}
	}
}
