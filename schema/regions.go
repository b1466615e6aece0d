// SPDX-License-Identifier: Apache-2.0

package schema

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/gpufleet/gpufleet/schema/catalog"
)

// A region rule of placement.regions is a glob over region names
// ("us-*", "europe-west?"), or names a place, so that one residency rule
// serves every cloud whatever its regions are called: "geo:eu" matches the
// regions in the European Union's countries (catalog.Geos lists the
// geographies), "country:de" those in Germany. A region whose country
// gpufleet does not know matches no place rule.
const (
	geoRule     = "geo:"
	countryRule = "country:"
)

// MatchRegion reports whether a cloud's region passes a workload's allow
// and deny rules: it matches an allow rule and no deny rule.
func MatchRegion(cloud, region string, allow, deny []string) bool {
	return slices.ContainsFunc(allow, func(r string) bool { return matchRegion(r, cloud, region) }) &&
		!slices.ContainsFunc(deny, func(r string) bool { return matchRegion(r, cloud, region) })
}

// RegionRules are a workload's allow and deny rules made ready to match
// many regions: a rule that is a plain region name, as most are, is looked
// up rather than matched as a glob.
type RegionRules struct {
	allowNames, denyNames map[string]bool
	allow, deny           []string
}

// NewRegionRules prepares allow and deny rules for Match.
func NewRegionRules(allow, deny []string) *RegionRules {
	r := &RegionRules{allowNames: map[string]bool{}, denyNames: map[string]bool{}}
	split := func(rules []string, names map[string]bool) []string {
		var rest []string
		for _, rule := range rules {
			if strings.ContainsAny(rule, `*?[\:`) {
				rest = append(rest, rule)
			} else {
				names[rule] = true
			}
		}
		return rest
	}
	r.allow = split(allow, r.allowNames)
	r.deny = split(deny, r.denyNames)
	return r
}

// Match is MatchRegion for the prepared rules.
func (r *RegionRules) Match(cloud, region string) bool {
	in := r.allowNames[region] || slices.ContainsFunc(r.allow, func(rule string) bool { return matchRegion(rule, cloud, region) })
	return in && !r.denyNames[region] && !slices.ContainsFunc(r.deny, func(rule string) bool { return matchRegion(rule, cloud, region) })
}

func matchRegion(rule, cloud, region string) bool {
	if geo, ok := strings.CutPrefix(rule, geoRule); ok {
		country, known := catalog.CountryOf(cloud, region)
		countries, _ := catalog.GeoCountries(geo)
		return known && slices.Contains(countries, country)
	}
	if code, ok := strings.CutPrefix(rule, countryRule); ok {
		country, known := catalog.CountryOf(cloud, region)
		return known && strings.EqualFold(country, code)
	}
	ok, _ := path.Match(rule, region)
	return ok
}

// checkRegionPattern says what is wrong with a region rule, naming the
// geographies or suggesting the closest where a place is misspelt.
func checkRegionPattern(rule string) error {
	if geo, ok := strings.CutPrefix(rule, geoRule); ok {
		if _, known := catalog.GeoCountries(geo); !known {
			return fmt.Errorf("unknown geography %q in %q%s; the geographies are %s", geo, rule,
				didYouMean(geo, catalog.Geos()), strings.Join(catalog.Geos(), ", "))
		}
		return nil
	}
	if code, ok := strings.CutPrefix(rule, countryRule); ok {
		switch {
		case len(code) != 2 || strings.ToUpper(code) == strings.ToLower(code):
			return fmt.Errorf("bad country %q in %q: name it by its two-letter ISO 3166 code, such as country:de", code, rule)
		case !catalog.KnownCountry(strings.ToUpper(code)):
			return fmt.Errorf("no cloud region gpufleet knows is in country %q (%q)", strings.ToUpper(code), rule)
		}
		return nil
	}
	if kind, _, ok := strings.Cut(rule, ":"); ok {
		return fmt.Errorf("unknown region rule %q: a rule is a glob over region names, or geo:NAME or country:CODE, not %s:", rule, kind)
	}
	if _, err := path.Match(rule, ""); err != nil {
		return fmt.Errorf("bad region pattern %q: %v", rule, err)
	}
	return nil
}
