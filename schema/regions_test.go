// SPDX-License-Identifier: Apache-2.0

package schema

import (
	"strings"
	"testing"

	"github.com/gpufleet/gpufleet/schema/catalog"
)

// A place rule matches a cloud's regions by their country, whatever the
// cloud calls them; a glob matches names, as before.
func TestRegionRulesMatchByPlace(t *testing.T) {
	tests := []struct {
		rule, cloud, region string
		want                bool
	}{
		{"geo:eu", "aws", "eu-west-3", true},
		{"geo:eu", "azure", "swedencentral", true},
		{"geo:eu", "gcp", "europe-west9", true},
		{"geo:eu", "aws", "eu-west-2", false},    // London: not in the European Union
		{"geo:eu", "gcp", "europe-west6", false}, // Zurich
		{"geo:europe", "gcp", "europe-west6", true},
		{"geo:eea", "azure", "norwayeast", true},
		{"geo:eu", "aws", "us-east-1", false},
		{"geo:eu", "aws", "eu-made-up-1", false}, // no country known: no place rule matches
		{"country:de", "aws", "eu-central-1", true},
		{"country:DE", "gcp", "europe-west3", true},
		{"country:de", "azure", "germanywestcentral", true},
		{"country:de", "azure", "westeurope", false},
		{"geo:apac", "azure", "japaneast", true},
		{"eu-*", "aws", "eu-west-3", true},
		{"eu-*", "gcp", "europe-west9", false},
	}
	for _, tt := range tests {
		if got := matchRegion(tt.rule, tt.cloud, tt.region); got != tt.want {
			t.Errorf("%s on %s %s: %v, want %v", tt.rule, tt.cloud, tt.region, got, tt.want)
		}
	}
	if !MatchRegion("gcp", "europe-west9", []string{"geo:eu"}, []string{"country:de"}) || MatchRegion("gcp", "europe-west3", []string{"geo:eu"}, []string{"country:de"}) {
		t.Error("a deny by country does not take a region out of an allowed geography")
	}
}

// Rules prepared once match every region of every cloud as MatchRegion
// does, whatever mix of names, globs and places they hold.
func TestPreparedRegionRulesMatchAsMatchRegionDoes(t *testing.T) {
	rules := [][2][]string{
		{{"us-east-1", "eu-west-3"}, nil},
		{{"us-*"}, {"us-east-1"}},
		{{"geo:eu", "us-west-2"}, {"country:de", "europe-west9"}},
		{{"europe-west?", "[a-c]*"}, {"eastus"}},
		{{`us\-east-1`}, nil},
		{{"*"}, {"geo:eea", "westus2"}},
		{nil, nil},
	}
	matched := 0
	for _, r := range rules {
		prepared := NewRegionRules(r[0], r[1])
		for _, cloud := range []string{catalog.AWS, catalog.Azure, catalog.GCP} {
			for _, region := range append(catalog.RegionNames(cloud), "made-up-1") {
				want := MatchRegion(cloud, region, r[0], r[1])
				if got := prepared.Match(cloud, region); got != want {
					t.Errorf("allow %q deny %q on %s %s: %v, want %v", r[0], r[1], cloud, region, got, want)
				}
				if want {
					matched++
				}
			}
		}
	}
	if matched == 0 {
		t.Fatal("no rule matched any region: the comparison says nothing")
	}
}

func TestRegionRulesThatAreWrongSayHowToWriteThem(t *testing.T) {
	tests := []struct{ rule, want string }{
		{"geo:europ", `unknown geography "europ" in "geo:europ": did you mean "europe"`},
		{"geo:EU", `unknown geography "EU"`},
		{"country:deu", `bad country "deu" in "country:deu": name it by its two-letter ISO 3166 code`},
		{"country:zz", `no cloud region gpufleet knows is in country "ZZ"`},
		{"continent:europe", `unknown region rule "continent:europe"`},
		{"eu-[", `bad region pattern "eu-["`},
	}
	for _, tt := range tests {
		err := checkRegionPattern(tt.rule)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.rule, err, tt.want)
		}
	}
	for _, ok := range []string{"geo:eu", "country:fr", "country:FR", "us-*", "*"} {
		if err := checkRegionPattern(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}
