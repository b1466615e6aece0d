// SPDX-License-Identifier: Apache-2.0

package gcp

import (
	"regexp"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// TestRequestIDs pins the UUIDv5 namespace: the expected ids were computed
// with Python's uuid.uuid5, an independent implementation. If this test
// fails, the namespace changed, and every create repeated across that
// change would look new to GCE.
func TestRequestIDs(t *testing.T) {
	const token = "gf1-0123456789abcdef0123456789abcdef"
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"insert", requestID(token), "2a8448cd-ece6-5f49-bcfa-5fbb60dd93ec"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("got %s, want %s", tt.got, tt.want)
			}
			id, err := uuid.Parse(tt.got)
			if err != nil || id.Version() != 5 || id.Variant() != uuid.RFC4122 || id == uuid.Nil {
				t.Errorf("%s is not a non-zero RFC 4122 version 5 UUID (%v)", tt.got, err)
			}
		})
	}
	if requestID(token) == requestID(token+"x") {
		t.Errorf("two tokens share a requestId")
	}
}

// gceNameRE is RFC 1035 as GCE applies it to instance names.
var gceNameRE = regexp.MustCompile(`^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$`)

// TestOwnershipLabelsFitGCE checks that the labels of the longest fleet and
// workload names the schema allows, with a planner token and workload
// labels, pass GCE's label rules, and that the rules catch what GCE
// refuses.
func TestOwnershipLabelsFitGCE(t *testing.T) {
	long := strings.Repeat("a", 38) + "-z" // the schema's longest name, 40 characters
	offer := planner.OfferKey{Cloud: Name, Region: "us-central1", Zone: "us-central1-a", InstanceType: "a3-highgpu-8g", Market: catalog.Spot}
	req := providers.CreateRequest{
		Token:    planner.Token(long, long, offer, "rev-1", 7),
		Offer:    offer,
		Fleet:    long,
		Workload: long,
		Labels:   map[string]string{"team": "ml-platform", "cost_center": "4711", "empty": ""},
	}
	labels := providers.OwnershipTags(req)
	if err := checkLabels(labels); err != nil {
		t.Fatalf("ownership labels break GCE's rules: %v", err)
	}
	name := providers.InstanceName(req.Fleet, req.Workload, req.Token)
	if !gceNameRE.MatchString(name) {
		t.Errorf("instance name %q is not a valid GCE name", name)
	}

	bad := []map[string]string{
		{"Team": "x"},
		{"1team": "x"},
		{"team.name": "x"},
		{strings.Repeat("k", 64): "x"},
		{"team": "ML"},
		{"team": "a b"},
		{"team": strings.Repeat("v", 64)},
	}
	for _, labels := range bad {
		if err := checkLabels(labels); err == nil {
			t.Errorf("%v passed, GCE refuses it", labels)
		}
	}
	many := map[string]string{}
	for i := range maxLabels + 1 {
		many["l"+strings.Repeat("x", i)] = ""
	}
	if err := checkLabels(many); err == nil {
		t.Errorf("%d labels passed, GCE allows %d", len(many), maxLabels)
	}
}
