// SPDX-License-Identifier: Apache-2.0

package providers

import (
	"strings"
	"testing"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

func TestUnownedSelectorSelects(t *testing.T) {
	tags := map[string]string{"team": "ml", "env": "prod"}
	tests := []struct {
		name string
		sel  UnownedSelector
		id   string
		tags map[string]string
		want bool
	}{
		{"the zero selector takes everything", UnownedSelector{}, "i-1", nil, true},
		{"an id listed", UnownedSelector{IDs: []string{"i-0", "i-1"}}, "i-1", nil, true},
		{"an id not listed", UnownedSelector{IDs: []string{"i-0"}}, "i-1", tags, false},
		{"every tag matches", UnownedSelector{Tags: map[string]string{"team": "ml", "env": "prod"}}, "i-1", tags, true},
		{"a tag of another value", UnownedSelector{Tags: map[string]string{"team": "web"}}, "i-1", tags, false},
		{"a tag the instance lacks", UnownedSelector{Tags: map[string]string{"owner": ""}}, "i-1", tags, false},
		{"the name space: a gpufleet- tag key", UnownedSelector{Namespace: true}, "i-1", map[string]string{"gpufleet-token": "x"}, true},
		{"the name space: a gf- name", UnownedSelector{Namespace: true}, "gf-ml-chat-0123456789ab-0", nil, true},
		{"the name space: neither", UnownedSelector{Namespace: true}, "foreign-1", tags, false},
		{"the name space and an id", UnownedSelector{Namespace: true, IDs: []string{"gf-a"}}, "gf-b", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.sel.Selects(tt.id, tt.tags); got != tt.want {
				t.Errorf("Selects(%q, %v) = %v, want %v", tt.id, tt.tags, got, tt.want)
			}
		})
	}
}

func TestUnownedSelectorFull(t *testing.T) {
	for _, tt := range []struct {
		limit, n int
		want     bool
	}{{0, 5000, false}, {3, 3, false}, {3, 4, true}, {1, 2, true}} {
		if got := (UnownedSelector{Limit: tt.limit}).Full(tt.n); got != tt.want {
			t.Errorf("Limit %d, %d listed: Full = %v, want %v", tt.limit, tt.n, got, tt.want)
		}
	}
}

// An adopted node's token is stable, its own per fleet, workload, cloud and
// id, never a create's, and names no batch.
func TestAdoptedToken(t *testing.T) {
	a := AdoptedToken("ml", "chat", catalog.AWS, "i-0abc")
	if a != AdoptedToken("ml", "chat", catalog.AWS, "i-0abc") {
		t.Error("the same instance got two tokens")
	}
	for _, other := range []string{
		AdoptedToken("ml", "chat", catalog.AWS, "i-0abd"),
		AdoptedToken("ml", "embed", catalog.AWS, "i-0abc"),
		AdoptedToken("web", "chat", catalog.AWS, "i-0abc"),
		AdoptedToken("ml", "chat", catalog.GCP, "i-0abc"),
	} {
		if other == a {
			t.Errorf("%s is the token of two instances", a)
		}
	}
	if !Adopted(a) || Adopted(planner.Token("ml", "chat", planner.OfferKey{Cloud: catalog.AWS}, "adopted", 0)) {
		t.Errorf("Adopted tells adopted tokens from created ones wrongly (%s)", a)
	}
	if _, _, ok := planner.TokenSlot(a); ok {
		t.Errorf("%s reads as a token with a slot", a)
	}
	if len(a) > 63 || strings.ToLower(a) != a {
		t.Errorf("%s is not a valid GCE label value", a)
	}
}

func TestCheckAdoptable(t *testing.T) {
	want := OwnershipTags(CreateRequest{Fleet: "ml", Workload: "chat", Token: "gfa-1"})
	tests := []struct {
		name    string
		have    map[string]string
		done    bool
		refused string
	}{
		{"unowned", map[string]string{"team": "ml"}, false, ""},
		{"adopted already", map[string]string{TagFleet: "ml", TagWorkload: "chat", TagToken: "gfa-1", "team": "ml"}, true, ""},
		{"another fleet's", map[string]string{TagFleet: "web", TagWorkload: "chat", TagToken: "gf2-x"}, false, `owned by fleet "web"`},
		{"another token", map[string]string{TagFleet: "ml", TagWorkload: "chat", TagToken: "gf2-x"}, false, `owned by fleet "ml"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			done, err := CheckAdoptable("i-1", tt.have, want)
			if done != tt.done || (err == nil) != (tt.refused == "") || (err != nil && !strings.Contains(err.Error(), tt.refused)) {
				t.Errorf("CheckAdoptable = %v, %v; want %v, refusal %q", done, err, tt.done, tt.refused)
			}
		})
	}
}
