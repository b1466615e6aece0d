// SPDX-License-Identifier: Apache-2.0

package providers

import (
	"regexp"
	"strings"
	"testing"

	"github.com/gpufleet/gpufleet/planner"
)

var nameRE = regexp.MustCompile(`^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$`)

// The nodes of a batch are named apart, every name is one GCE and Azure
// take, and the name of a node gives its token back from the batch's.
func TestBatchNodesAreNamedApartAndKnownByName(t *testing.T) {
	offer := planner.OfferKey{Cloud: "gcp", Region: "us-central1", Zone: "us-central1-a", InstanceType: "g2-standard-4", Market: "spot"}
	fleet, workload := "a-fleet-with-a-rather-long-name", "and-a-long-workload-name"
	first := planner.Token(fleet, workload, offer, "r", 98)
	seen := map[string]bool{}
	for i := range 20 {
		token, _ := planner.TokenAt(first, i)
		name := InstanceName(fleet, workload, token)
		if !nameRE.MatchString(name) || seen[name] {
			t.Errorf("node %d: name %q is invalid or taken", i, name)
		}
		seen[name] = true
		if got, ok := NodeToken(fleet, workload, first, name); !ok || got != token {
			t.Errorf("NodeToken of %s = %q, %v; want %s", name, got, ok, token)
		}
	}
	for _, name := range []string{"someone-else-1", InstanceName(fleet, "other", first), InstanceName(fleet, workload, planner.Token(fleet, workload, offer, "r", 3))} {
		if got, ok := NodeToken(fleet, workload, first, name); ok {
			t.Errorf("NodeToken of %s = %s, want no node of the batch", name, got)
		}
	}
	old := "gf1-0123456789abcdef0123456789abcdef"
	if name := InstanceName(fleet, workload, old); !nameRE.MatchString(name) {
		t.Errorf("an old token's name %q is invalid", name)
	}
}

func TestPlacementGroupNamesFitEveryCloud(t *testing.T) {
	short := PlacementGroupName("ml", "train", "us-east-1a")
	long := PlacementGroupName("a-very-long-fleet-name-for-a-team", "and-a-long-workload-name-too", "us-central1-a")
	other := PlacementGroupName("a-very-long-fleet-name-for-a-team", "and-a-long-workload-name-too", "us-central1-b")
	for _, n := range []string{short, long, other} {
		if !nameRE.MatchString(n) {
			t.Errorf("%q is not a name every cloud takes", n)
		}
	}
	if !strings.HasPrefix(short, "gf-ml-train-us-east-1a-") || long == other {
		t.Errorf("names %q, %q, %q", short, long, other)
	}
	if PlacementGroupName("ml", "train", "us-east-1a") != short {
		t.Error("a name is not the same twice")
	}
}

// Fleet and workload names hold '-', so gangs whose parts join alike get
// groups named apart, in every zone; the names earlier versions gave are
// still known as the group's, the colliding one as either gang's (its tags
// tell whose).
func TestPlacementGroupNamesDoNotCollide(t *testing.T) {
	for _, tt := range []struct{ a, b [3]string }{
		{[3]string{"a-b", "c", "us-east-1a"}, [3]string{"a", "b-c", "us-east-1a"}},
		{[3]string{"a", "b-c", "d"}, [3]string{"a-b", "c-d", ""}},
		{[3]string{"ml", "train-us", "east-1a"}, [3]string{"ml", "train", "us-east-1a"}},
		{[3]string{strings.Repeat("f", 40), strings.Repeat("w", 40), "us-central1-a"}, [3]string{strings.Repeat("f", 40), strings.Repeat("w", 40) + "x", "us-central1-a"}},
	} {
		na, nb := PlacementGroupName(tt.a[0], tt.a[1], tt.a[2]), PlacementGroupName(tt.b[0], tt.b[1], tt.b[2])
		if na == nb {
			t.Errorf("%v and %v are both named %s", tt.a, tt.b, na)
		}
		for _, n := range []string{na, nb} {
			if !nameRE.MatchString(n) {
				t.Errorf("%q is not a name every cloud takes", n)
			}
		}
		if IsPlacementGroupName(na, tt.b[0], tt.b[1], tt.b[2]) {
			t.Errorf("%s is taken for %v's group", na, tt.b)
		}
	}
	if !IsPlacementGroupName("gf-a-b-c-us-east-1a", "a-b", "c", "us-east-1a") || !IsPlacementGroupName("gf-a-b-c-us-east-1a", "a", "b-c", "us-east-1a") {
		t.Error("a group named as earlier versions did is not known as its gang's")
	}
}
