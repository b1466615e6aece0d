// SPDX-License-Identifier: Apache-2.0

package providers

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gpufleet/gpufleet/planner"
)

// Adopter is a Provider that can see instances gpufleet did not launch and
// take them over: drift reports the foreign ones in gpufleet's name space,
// adoption tags the chosen ones so that from then on they are listed, kept
// and counted like any other node.
type Adopter interface {
	// Unowned lists the instances in the configured regions that carry no
	// ownership tags (Owned is false) and match sel, sorted by region, zone
	// and id. It returns at most sel.Limit+1 of them when sel.Limit is set,
	// so a caller can tell "too many" from "exactly the limit".
	Unowned(ctx context.Context, sel UnownedSelector) ([]Unowned, error)
	// Adopt puts the ownership tags OwnershipTags(req) on an unowned
	// instance and returns it as it is listed from then on. It refuses
	// (KindInvalid) an instance that is owned by now, and is idempotent: an
	// instance that carries exactly these tags already is success.
	Adopt(ctx context.Context, u Unowned, req CreateRequest) (Instance, error)
}

// UnownedSelector narrows Adopter.Unowned. Set fields must all match.
type UnownedSelector struct {
	// IDs selects these instances (EC2 instance ids, Azure VM names, GCE
	// instance names).
	IDs []string
	// Tags selects instances carrying every one of these tags (labels on
	// GCE) with these values.
	Tags map[string]string
	// Namespace selects instances that look like gpufleet's without being
	// owned: a tag or label key with gpufleet's prefix ("gpufleet-"), or a
	// name gpufleet gives (InstanceName's "gf-" form).
	Namespace bool
	// Limit, when above zero, bounds the answer at Limit+1 instances.
	Limit int
}

// Unowned is an instance without ownership tags, as a cloud lists it.
type Unowned struct {
	ID string `json:"id"`
	// Offer is where it runs and on what: cloud, region, zone, type and
	// market (spot or on-demand).
	Offer planner.OfferKey  `json:"offer"`
	State planner.State     `json:"state"`
	Tags  map[string]string `json:"tags,omitempty"`
	// Account is the AWS account id, Azure subscription or GCP project the
	// instance belongs to.
	Account    string    `json:"account,omitempty"`
	LaunchedAt time.Time `json:"launchedAt,omitzero"`
}

// AdoptedToken is the token an adopted instance is tagged with, in place
// of a create's: "gfa-" and 24 hex digits of the fleet, the workload, the
// cloud and the instance's id. It never equals a planner.Token (those
// start "gf2-"), so no create is ever taken for an adopted node, nor an
// adopted node for a create; it has no slot, so no batch is read into it;
// and the same instance adopted again gets the same token, which makes a
// repeated adoption a no-op.
func AdoptedToken(fleet, workload, cloud, id string) string {
	h := sha256.New()
	for _, part := range []string{fleet, workload, cloud, id} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return adoptedPrefix + hex.EncodeToString(h.Sum(nil))[:24]
}

const adoptedPrefix = "gfa-"

// Adopted reports whether a token is one AdoptedToken gives.
func Adopted(token string) bool { return strings.HasPrefix(token, adoptedPrefix) }

// Selects reports whether an unowned instance with this id (or name) and
// these tags passes sel, Limit aside: the one reading of a selector every
// provider shares.
func (sel UnownedSelector) Selects(id string, tags map[string]string) bool {
	if len(sel.IDs) > 0 && !slices.Contains(sel.IDs, id) {
		return false
	}
	for k, v := range sel.Tags {
		if got, ok := tags[k]; !ok || got != v {
			return false
		}
	}
	if sel.Namespace && !inNamespace(id, tags) {
		return false
	}
	return true
}

// inNamespace is an instance that looks like gpufleet's: a tag key with
// gpufleet's prefix, or a name InstanceName could have given.
func inNamespace(id string, tags map[string]string) bool {
	if strings.HasPrefix(id, "gf-") {
		return true
	}
	for k := range tags {
		if strings.HasPrefix(k, tagPrefix) {
			return true
		}
	}
	return false
}

// tagPrefix starts the key of every tag gpufleet puts on what it owns.
const tagPrefix = "gpufleet-"

// Full reports whether a listing of n unowned instances reached sel's
// Limit+1, so that a provider stops reading pages it would not return.
func (sel UnownedSelector) Full(n int) bool { return sel.Limit > 0 && n > sel.Limit }

// CheckAdoptable is what an Adopt finds on an instance before it tags it:
// done when the instance carries want's ownership already (an adoption
// repeated), an error when it is owned otherwise.
func CheckAdoptable(id string, have, want map[string]string) (done bool, err error) {
	fleet, workload, token, owned := Owned(have)
	switch {
	case !owned:
		return false, nil
	case fleet == want[TagFleet] && workload == want[TagWorkload] && token == want[TagToken]:
		return true, nil
	}
	return false, fmt.Errorf("instance %s is owned by fleet %q (workload %q) already", id, fleet, workload)
}

// SortUnowned orders instances as Unowned returns them: by region, zone
// and id.
func SortUnowned(list []Unowned) {
	slices.SortFunc(list, func(a, b Unowned) int {
		return cmp.Or(cmp.Compare(a.Offer.Cloud, b.Offer.Cloud), cmp.Compare(a.Offer.Region, b.Offer.Region), cmp.Compare(a.Offer.Zone, b.Offer.Zone), cmp.Compare(a.ID, b.ID))
	})
}
