// SPDX-License-Identifier: Apache-2.0

package planner

import (
	"strings"
	"time"
)

// State is an observed instance's state, the same for every cloud.
type State string

const (
	StatePending   State = "pending"
	StateRunning   State = "running"
	StateStopping  State = "stopping"
	StatePreempted State = "preempted"
	// StateFailed is an instance whose creation failed after the cloud
	// accepted it, and that is still there (an Azure VM in provisioning
	// state Failed): it never works, and holds quota and disks until it is
	// deleted.
	StateFailed State = "failed"
	// StateTerminated covers instances that are gone, or on their way out
	// by themselves, for reasons other than preemption.
	StateTerminated State = "terminated"
)

// Live reports whether an instance is, or is about to be, a working node.
func (s State) Live() bool { return s == StatePending || s == StateRunning }

// Leftover reports whether an instance is not a working node yet is still
// there, holding quota or billing for disks, until someone deletes it.
func (s State) Leftover() bool { return s == StateFailed || s == StateStopping }

// Instance is an instance gpufleet owns, as observed in a cloud.
type Instance struct {
	// ID is the cloud's own id (EC2 instance id, GCE/Azure resource name).
	ID string `json:"id"`
	OfferKey
	Fleet    string `json:"fleet"`
	Workload string `json:"workload"`
	// Token is the idempotency token the instance was created with.
	Token string `json:"token,omitempty"`
	// Bootstrap is the digest of the first-boot file it was launched
	// with (Bootstrap.Tag), "" for none, BootstrapUnknown where the cloud
	// cannot say.
	Bootstrap  string    `json:"bootstrap,omitempty"`
	State      State     `json:"state"`
	LaunchedAt time.Time `json:"launchedAt,omitzero"`
}

// CompareInstances orders instances by offer, then id: the order plans,
// diffs and status files list them in.
func CompareInstances(a, b Instance) int {
	if c := a.OfferKey.Compare(b.OfferKey); c != 0 {
		return c
	}
	return strings.Compare(a.ID, b.ID)
}

// BootstrapUnknown is the Bootstrap of a node whose cloud cannot say which
// first-boot file it was launched with: Lambda Cloud keeps no tags, returns
// no user data, and its names have no room for a digest. Such a node is
// never replaced for its bootstrap, since nothing says it is outdated; a
// changed bootstrap reaches the nodes launched after the change.
const BootstrapUnknown = "unknown"
