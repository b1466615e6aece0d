package providers

import (
	"context"

	"github.com/gpufleet/gpufleet/planner"
)

// Provider is what gpufleet needs from a cloud. Implementations touch only
// instances that carry gpufleet's ownership tags; anything else in an
// account is invisible to them.
type Provider interface {
	// Name is the cloud: "aws", "azure" or "gcp".
	Name() string
	// Offers returns the cloud's offers in its configured regions: the
	// catalog's prices with whatever live signals the cloud's API gives.
	Offers(ctx context.Context) ([]planner.Offer, error)
	// List returns the owned instances in every configured region, with
	// their state mapped to planner.State. Instances without ownership tags
	// are never returned.
	List(ctx context.Context, sel Selector) ([]Instance, error)
	// Create launches one instance. It is idempotent on req.Token: a repeat,
	// even from another process or after a crash, returns the instance the
	// first call launched and never a second one.
	Create(ctx context.Context, req CreateRequest) (Instance, error)
	// Delete removes an owned instance. Deleting one that is already gone
	// succeeds.
	Delete(ctx context.Context, inst Instance) error
	// Capacity reads the account's quotas and which instance types each
	// zone offers, in the configured regions, for the quotas and types the
	// catalog knows. A quota or offerings API that is denied, fails, or
	// answers what cannot be read does not fail the call: that limit or
	// zone is left out (never guessed) and a warning says what and why,
	// naming the permission a denial lacked. Only a cancelled context
	// fails it.
	Capacity(ctx context.Context) (Capacity, error)
}

// Capacity is what a cloud says limits the account, beside prices.
type Capacity struct {
	// Quotas are the limits read, with their use where the cloud reports
	// it, sorted by region and name.
	Quotas []planner.Quota
	// Offerings lists, for each zone the cloud answered for, the instance
	// types of the catalog it offers there, sorted. A zone not listed is
	// not known: every type is planned there as before.
	Offerings []ZoneOffering
	// Warnings say what could not be read, and why.
	Warnings []string
}

// ZoneOffering is what one zone offers.
type ZoneOffering struct {
	Zone  string   `json:"zone"`
	Types []string `json:"types"`
}

// Instance is an instance gpufleet owns, as the planner sees it.
type Instance = planner.Instance

// Selector narrows List; the zero value selects every owned instance.
type Selector struct {
	// Fleet, when set, selects that fleet's instances only.
	Fleet string
}

// Matches reports whether an instance passes the selector.
func (s Selector) Matches(inst Instance) bool {
	return s.Fleet == "" || s.Fleet == inst.Fleet
}

// CreateRequest is one node to launch.
type CreateRequest struct {
	// Token makes the create idempotent (planner.Token).
	Token    string
	Offer    planner.OfferKey
	Fleet    string
	Workload string
	// Labels are the workload's labels, put on the instance beside the
	// ownership tags.
	Labels map[string]string
}
