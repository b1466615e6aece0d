// SPDX-License-Identifier: Apache-2.0

package gcesim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"

	"github.com/gpufleet/gpufleet/providers/sim"
)

// Networks and subnetworks change through global and regional
// operations, which the front keeps in the world's resource store beside
// the resources themselves, so that both outlive a restart. A change is
// applied when its call is answered; its operation runs for the world's
// operation latency and is DONE after, so that clients go through their
// polling as they do against GCE. Finished operations are forgotten after
// a day, as GCE's are.

// kindOperation is the world's resource kind of the front's operations.
const kindOperation = "operation"

// resourceOp is a global or regional operation on a resource other than
// an instance.
type resourceOp struct {
	Name    string `json:"name"`
	Project string `json:"project"`
	// Region is empty for a global operation.
	Region   string    `json:"region,omitempty"`
	Type     string    `json:"type"`   // "insert" or "delete"
	Target   string    `json:"target"` // the resource's path
	TargetID uint64    `json:"targetId"`
	Started  time.Time `json:"started"`
	Done     time.Time `json:"done"`
}

// path is the operation's own path.
func (op resourceOp) path() string { return opPath(op.Project, op.Region, op.Name) }

func opPath(project, region, name string) string {
	if region == "" {
		return "projects/" + project + "/global/operations/" + name
	}
	return regionOpPath(project, region, name)
}

// startResourceOp records an operation on the resource at target, begun
// now, and forgets the finished ones older than a day.
func (s *Server) startResourceOp(project, region, kind, target string, targetID uint64) resourceOp {
	now := s.world.Now()
	op := resourceOp{
		Name:    fmt.Sprintf("operation-%d-%08x", now.UnixMilli(), s.world.Rand(1<<31)),
		Project: project, Region: region, Type: kind, Target: target, TargetID: targetID,
		Started: now, Done: now.Add(s.world.Latency().Operation),
	}
	body, _ := json.Marshal(op)
	s.world.PutResource(sim.Resource{Cloud: cloud, Kind: kindOperation, ID: op.path(), Region: region, Body: body})
	for _, old := range s.world.Resources(cloud, kindOperation, nil) {
		var o resourceOp
		if json.Unmarshal(old.Body, &o) == nil && now.Sub(o.Done) > operationLifetime {
			s.world.DeleteResource(cloud, kindOperation, old.ID)
		}
	}
	return op
}

// operationLifetime is how long a finished operation can still be read.
const operationLifetime = 24 * time.Hour

// resourceOpAt finds an operation by path.
func (s *Server) resourceOpAt(path string) (resourceOp, bool) {
	r, ok := s.world.GetResource(cloud, kindOperation, path)
	if !ok {
		return resourceOp{}, false
	}
	var op resourceOp
	if err := json.Unmarshal(r.Body, &op); err != nil {
		return resourceOp{}, false
	}
	return op, true
}

// renderResourceOp is an operation as globalOperations and
// regionOperations return it.
func (s *Server) renderResourceOp(l links, op resourceOp) *computepb.Operation {
	now := s.world.Now()
	status := operationStatus(!now.Before(op.Done), op.Started, now)
	out := &computepb.Operation{
		Kind:          proto.String("compute#operation"),
		Id:            proto.Uint64(operationID(op.Name)),
		Name:          proto.String(op.Name),
		OperationType: proto.String(op.Type),
		TargetLink:    proto.String(l.url(op.Target)),
		TargetId:      proto.Uint64(op.TargetID),
		Status:        status.Enum(),
		Progress:      proto.Int32(0),
		InsertTime:    proto.String(timestamp(op.Started)),
		SelfLink:      proto.String(l.url(op.path())),
		User:          proto.String(s.opts.User),
	}
	if op.Region != "" {
		out.Region = proto.String(l.region(op.Project, op.Region))
	}
	if status != computepb.Operation_PENDING {
		out.StartTime = proto.String(timestamp(op.Started))
	}
	if status == computepb.Operation_DONE {
		out.Progress = proto.Int32(100)
		out.EndTime = proto.String(timestamp(op.Done))
	}
	return out
}

// operationStatus is an operation's status: DONE once done, PENDING until
// it has started, RUNNING in between.
func operationStatus(done bool, started, now time.Time) computepb.Operation_Status {
	switch {
	case done:
		return computepb.Operation_DONE
	case !now.After(started):
		return computepb.Operation_PENDING
	}
	return computepb.Operation_RUNNING
}

// getGlobalOperation serves globalOperations.get.
func (s *Server) getGlobalOperation(w http.ResponseWriter, r *http.Request, project, name string) error {
	return s.serveResourceOp(w, r, OpGlobalOperationGet, project, "", name, false)
}

// waitGlobalOperation serves globalOperations.wait.
func (s *Server) waitGlobalOperation(w http.ResponseWriter, r *http.Request, project, name string) error {
	return s.serveResourceOp(w, r, OpGlobalOperationWait, project, "", name, true)
}

// serveResourceOp answers a get or wait of a global or regional
// operation; a wait blocks as zonal waits do.
func (s *Server) serveResourceOp(w http.ResponseWriter, r *http.Request, call, project, region, name string, wait bool) error {
	path := opPath(project, region, name)
	if err := s.admitRegion(r, call, project, region, path); err != nil {
		return err
	}
	op, ok := s.resourceOpAt(path)
	if !ok {
		return notFound(path)
	}
	l := linksOf(r)
	if !wait {
		return writeProto(w, s.renderResourceOp(l, op))
	}
	if err := s.waitUntil(r, func() bool { return !s.world.Now().Before(op.Done) }); err != nil {
		return err
	}
	return writeProto(w, s.renderResourceOp(l, op))
}

// waitUntil blocks until done holds, two minutes of world time have
// passed, Options.WaitTimeout has passed on the real clock, or the client
// has gone.
func (s *Server) waitUntil(r *http.Request, done func() bool) error {
	until := s.world.Now().Add(waitWorldTime)
	timeout := time.NewTimer(s.opts.WaitTimeout)
	defer timeout.Stop()
	poll := time.NewTicker(s.opts.PollInterval)
	defer poll.Stop()
	for !done() && s.world.Now().Before(until) {
		select {
		case <-r.Context().Done():
			return errClientGone
		case <-timeout.C:
			return nil
		case <-poll.C:
		}
	}
	return nil
}

// isResourceOp reports whether a regional operation is one the front
// keeps in the world rather than in the policies' store.
func (s *Server) isResourceOp(project, region, name string) bool {
	_, ok := s.resourceOpAt(opPath(project, region, name))
	return ok
}
