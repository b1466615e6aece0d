package providers

import (
	"context"
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
