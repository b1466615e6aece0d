package gcesim

import (
	"net/http"
	"time"

	"github.com/gpufleet/gpufleet/providers/sim"
)

// waitWorldTime is how long operations.wait waits in the world's time
// before answering with the operation as it is, as the real API does after
// about two minutes.
const waitWorldTime = 2 * time.Minute

// getOperation serves zoneOperations.get.
func (s *Server) getOperation(w http.ResponseWriter, r *http.Request, project, zone, name string) error {
	if err := s.operationCall(r, OpOperationGet, project, zone, name); err != nil {
		return err
	}
	op, err := s.operation(project, zone, name)
	if err != nil {
		return err
	}
	return writeProto(w, s.renderOperation(linksOf(r), op))
}

// waitOperation serves zoneOperations.wait: it answers when the operation
// is DONE, after two minutes of world time, or after Options.WaitTimeout on
// the real clock, whichever comes first.
func (s *Server) waitOperation(w http.ResponseWriter, r *http.Request, project, zone, name string) error {
	if err := s.operationCall(r, OpOperationWait, project, zone, name); err != nil {
		return err
	}
	until := s.world.Now().Add(waitWorldTime)
	timeout := time.NewTimer(s.opts.WaitTimeout)
	defer timeout.Stop()
	poll := time.NewTicker(s.opts.PollInterval)
	defer poll.Stop()
	for {
		op, err := s.operation(project, zone, name)
		if err != nil {
			return err
		}
		if op.Done || !s.world.Now().Before(until) {
			return writeProto(w, s.renderOperation(linksOf(r), op))
		}
		select {
		case <-r.Context().Done():
			return errClientGone
		case <-timeout.C:
			return writeProto(w, s.renderOperation(linksOf(r), op))
		case <-poll.C:
		}
	}
}

// operationCall intercepts an operations call and checks its zone.
func (s *Server) operationCall(r *http.Request, op, project, zone, name string) error {
	fc := faultContext{Project: project, Zone: zone, Region: s.region(zone), Permission: permissions[op], Resource: scope(project, zone) + "/operations/" + name}
	out, err := s.intercept(r.Context(), sim.Call{Op: op, Region: fc.Region, Zone: zone})
	if err != nil {
		return err
	}
	if out.Err != nil {
		return s.syncError(out.Err, fc)
	}
	if err := s.zoneExists(project, zone); err != nil {
		return err
	}
	return nil
}

// operation finds a GCE operation of a project's zone.
func (s *Server) operation(project, zone, name string) (*sim.Operation, error) {
	op, ok := s.world.Operation(name)
	if !ok || op.Cloud != cloud || op.Zone != zone || projectOf(op.Scope) != project {
		return nil, notFound(scope(project, zone) + "/operations/" + name)
	}
	return op, nil
}
