package planner

import "time"

// State is an observed instance's state, the same for every cloud.
type State string

const (
	StatePending   State = "pending"
	StateRunning   State = "running"
	StateStopping  State = "stopping"
	StatePreempted State = "preempted"
	// StateTerminated covers instances that are gone or going for reasons
	// other than preemption, including a failed creation.
	StateTerminated State = "terminated"
)

// Live reports whether an instance is, or is about to be, a working node.
func (s State) Live() bool { return s == StatePending || s == StateRunning }

// Instance is an instance gpufleet owns, as observed in a cloud.
type Instance struct {
	// ID is the cloud's own id (EC2 instance id, GCE/Azure resource name).
	ID string `json:"id"`
	OfferKey
	Fleet    string `json:"fleet"`
	Workload string `json:"workload"`
	// Token is the idempotency token the instance was created with.
	Token      string    `json:"token,omitempty"`
	State      State     `json:"state"`
	LaunchedAt time.Time `json:"launchedAt,omitzero"`
}
