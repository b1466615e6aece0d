// SPDX-License-Identifier: Apache-2.0

package sim

import (
	"maps"
	"time"

	"github.com/gpufleet/gpufleet/schema/catalog"
)

// State is where an instance is in its life, in the world's own terms;
// fronts render it in their cloud's vocabulary.
type State string

const (
	StatePending      State = "pending"
	StateRunning      State = "running"
	StateShuttingDown State = "shutting-down"
	StateTerminated   State = "terminated"
	// StateStopping and StateStopped are an instance stopped by its
	// owner, which holds no capacity until it is started again.
	StateStopping State = "stopping"
	StateStopped  State = "stopped"
	// StateFailed is an Azure VM whose creation failed after ARM accepted
	// it: the resource stays, holding nothing, until deleted.
	StateFailed State = "failed"
)

// Instance is one simulated virtual machine.
type Instance struct {
	ID     string `json:"id"`
	Cloud  string `json:"cloud"`
	Region string `json:"region"`
	Zone   string `json:"zone"`
	// Scope and Name identify named instances (GCE project, Azure resource
	// group id).
	Scope        string            `json:"scope,omitempty"`
	Name         string            `json:"name,omitempty"`
	InstanceType string            `json:"instanceType"`
	Market       catalog.Market    `json:"market"`
	GPUModel     string            `json:"gpuModel"`
	GPUs         int               `json:"gpus"`
	Tags         map[string]string `json:"tags"`
	Properties   map[string]string `json:"properties,omitempty"`
	Token        string            `json:"token,omitempty"`
	LaunchedAt   time.Time         `json:"launchedAt"`
	EndedAt      time.Time         `json:"endedAt,omitzero"`
	// StoppedAt is when a stopping or stopped instance was asked to stop.
	StoppedAt time.Time `json:"stoppedAt,omitzero"`
	State     State     `json:"state"`
	// Preempted is set when the cloud took a spot instance back.
	Preempted bool `json:"preempted,omitempty"`
	// LaunchIndex is the instance's place in the batch that launched it
	// (EC2's AmiLaunchIndex); 0 for one launched alone.
	LaunchIndex int `json:"launchIndex,omitempty"`
	// CreateOp is the long-running operation that created the instance,
	// for clouds that have them.
	CreateOp string `json:"createOp,omitempty"`
	// Seq orders instances by creation; lists page in this order.
	Seq uint64 `json:"seq"`
}

// snapshot copies an instance with its state as of now, so callers can
// read it without the world's lock.
func (w *World) snapshot(i *Instance, now time.Time) *Instance {
	c := *i
	c.Tags = maps.Clone(i.Tags)
	c.Properties = maps.Clone(i.Properties)
	c.State = w.stateAt(i, now)
	return &c
}

// ec2TerminatedVisible is how long EC2 keeps listing terminated instances.
const ec2TerminatedVisible = time.Hour

// stateAt is an instance's state at a moment: pending becomes running after
// PendingFor, and an EC2 instance shutting down is terminated after
// OperationTime (fronts that model deletes as operations keep theirs
// until the operation removes them).
func (w *World) stateAt(i *Instance, now time.Time) State {
	switch i.State {
	case StatePending:
		if !now.Before(i.LaunchedAt.Add(w.cfg.PendingFor)) {
			return StateRunning
		}
	case StateShuttingDown:
		if i.Cloud == catalog.AWS && !now.Before(i.EndedAt.Add(w.cfg.OperationTime)) {
			return StateTerminated
		}
	case StateStopping:
		if !now.Before(i.StoppedAt.Add(w.cfg.OperationTime)) {
			return StateStopped
		}
	}
	return i.State
}

func (w *World) visible(i *Instance, now time.Time) bool {
	state := w.stateAt(i, now)
	if state != StateTerminated {
		return true
	}
	switch {
	case i.Cloud == catalog.AWS:
		return now.Before(i.EndedAt.Add(ec2TerminatedVisible))
	case i.Preempted:
		return now.Before(i.EndedAt.Add(w.cfg.PreemptedVisibleFor))
	}
	return false
}

func (w *World) holdsCapacity(i *Instance, now time.Time) bool {
	s := w.stateAt(i, now)
	return s == StatePending || s == StateRunning
}

// StateOf is an instance's state now.
func (w *World) StateOf(i *Instance) State { return w.stateAt(i, w.clock.Now()) }
