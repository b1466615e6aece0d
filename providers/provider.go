// SPDX-License-Identifier: Apache-2.0

package providers

import (
	"context"

	"github.com/gpufleet/gpufleet/planner"
)

// Provider is what gpufleet needs from a cloud. Implementations touch only
// instances that carry gpufleet's ownership tags; anything else in an
// account is invisible to them.
type Provider interface {
	// Name is the cloud: "aws", "azure", "gcp", "lambda" or "oci".
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

// BatchCreator is a Provider that launches several nodes alike in one call
// (EC2 RunInstances with MinCount and MaxCount, GCE bulkInsert). The
// reconciler uses it where a provider has it, and Create elsewhere.
type BatchCreator interface {
	// CreateBatch launches up to req.Count nodes of one workload on one
	// offer, the nodes of the consecutive slots from req.Token's on
	// (planner.TokenAt), and returns those launched in slot order, each
	// with its own token. It is idempotent as Create is: a repeat of the
	// same batch returns what the first call launched.
	//
	// When the pool has room for fewer, it launches what fits and returns
	// them with a capacity or quota *Error saying how many did not fit;
	// when none fit, no instance and the error. A batch of a token without
	// a slot, or a count beyond MaxBatch, is invalid.
	CreateBatch(ctx context.Context, req BatchRequest) ([]Instance, error)
}

// MaxBatch bounds the nodes of one batch: a call that large stays well
// within what RunInstances and bulkInsert take (GCE's bulkInsert takes
// 1,000), and a failed one is retried whole.
const MaxBatch = 500

// BatchRequest is a batch of nodes to launch.
type BatchRequest struct {
	// CreateRequest describes the first node; its Token is the batch's.
	CreateRequest
	// Count is how many nodes to launch, at most MaxBatch.
	Count int
}

// Tokens are the tokens of the batch's nodes, in slot order; nil when the
// first token names no batch (an older token, with a count above one).
func (r BatchRequest) Tokens() []string {
	out := make([]string, 0, r.Count)
	for i := range r.Count {
		t, ok := planner.TokenAt(r.Token, i)
		if !ok {
			return nil
		}
		out = append(out, t)
	}
	return out
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
	// Bootstrap is what the node runs at first boot; nil for nothing.
	Bootstrap *Bootstrap
	// PlacementGroup, when set, is the name of the gpufleet placement
	// group (PlacementGroupName) the node is launched into; it exists.
	PlacementGroup string
	// EFA is how many Elastic Fabric Adapters the node gets, 0 for none.
	EFA int
}

// PlacementGroup is a group a zone gang's nodes are launched into, for the
// closest links between them: an EC2 cluster placement group, a GCE
// resource policy with collocated group placement, an Azure proximity
// placement group. gpufleet creates it, tags it as its own, and removes it
// once no node of its workload is left in its zone.
type PlacementGroup struct {
	// Name is PlacementGroupName of the rest.
	Name            string
	Region, Zone    string
	Fleet, Workload string
}

// PlacementGrouper is a Provider that keeps placement groups.
type PlacementGrouper interface {
	// EnsurePlacementGroup creates the group if it does not exist; a
	// group of that name that gpufleet owns already is success, one it
	// does not own is an invalid error.
	EnsurePlacementGroup(ctx context.Context, g PlacementGroup) error
	// PlacementGroups lists the groups gpufleet owns in the configured
	// regions, sorted by region and name.
	PlacementGroups(ctx context.Context) ([]PlacementGroup, error)
	// DeletePlacementGroup removes an owned group. One already gone is
	// success; one that still holds instances fails with the cloud's
	// error.
	DeletePlacementGroup(ctx context.Context, g PlacementGroup) error
}

// Preflighter is a Provider whose cloud can check a launch without making
// it, as EC2's dry runs do: whether the caller may launch, and whether
// the image, instance profile, network and type in the zone are ones the
// cloud takes. Capacity and quota are not checked.
type Preflighter interface {
	// Preflight returns nil when the cloud would take a launch on the
	// offer as configured; an error of the kind the launch would meet
	// (KindInvalid, KindAuth, KindCapacity for a type the zone does not
	// offer) when it would refuse it; and another, KindUnavailable or
	// KindThrottled, when the check itself could not be made.
	Preflight(ctx context.Context, offer planner.OfferKey) error
}

// Bootstrap is a node's first-boot file, rendered for it: EC2 user data,
// GCE metadata (user-data for cloud-init, startup-script for a script),
// Azure custom data.
type Bootstrap struct {
	// Format is schema.BootstrapCloudInit or schema.BootstrapScript.
	Format string
	// Data is the rendered file. It holds the values of secrets: it goes
	// to the cloud and nowhere else, never into an error, a log or a tag.
	Data []byte
	// Digest names the repository's file it was rendered from (its 12 hex
	// digits); the node is tagged with it.
	Digest string
}
