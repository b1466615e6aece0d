// SPDX-License-Identifier: Apache-2.0

package armsim

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Long-running operations of the resources the front keeps (Network's
// writes, a resource group's deletion). The world's operations are its
// instances'; these are stored beside the resources they change, and
// finish when the world's operation time has passed. Network is polled at
// …/providers/Microsoft.Network/locations/{l}/operations/{id} (the
// Azure-AsyncOperation, {"status"}) and …/operationResults/{id} (the
// Location of a delete: 202 until done, then 204); a group's deletion at
// /subscriptions/{s}/operationresults/{id} (202, then 200).

// asyncOp is one such operation as stored.
type asyncOp struct {
	ID           string    `json:"id"`
	Namespace    string    `json:"namespace"`
	Subscription string    `json:"subscription"`
	Location     string    `json:"location"`
	Target       string    `json:"target"`
	Delete       bool      `json:"delete,omitempty"`
	Started      time.Time `json:"started"`
	Until        time.Time `json:"until"`
	// Failure is the error the operation ends with, nil for a success.
	Failure *operationFailure `json:"failure,omitempty"`
}

// operationFailure is a stored operation's error, as ARM reports it.
type operationFailure struct {
	Status  int    `json:"status"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// done reports whether the operation has finished by now.
func (op asyncOp) done(now time.Time) bool { return !now.Before(op.Until) }

// startOperation stores a new operation that finishes after the world's
// operation time.
func (s *Server) startOperation(op asyncOp) asyncOp {
	now := s.world.Now()
	op.ID = s.guid(op.Target)
	op.Started, op.Until = now, now.Add(s.world.Latency().Operation)
	s.save(kindOperation, op.ID, op.Location, op)
	return op
}

func (s *Server) findOperation(id string) (asyncOp, bool) {
	var op asyncOp
	return op, s.load(kindOperation, strings.ToLower(id), &op)
}

// writeNetworkAsync sets the polling headers Network answers a write with:
// Azure-AsyncOperation, and Location for a delete; Retry-After while the
// operation runs.
func (s *Server) writeNetworkAsync(w http.ResponseWriter, r *http.Request, op asyncOp, location bool) {
	base := fmt.Sprintf("%s/subscriptions/%s/providers/Microsoft.Network/locations/%s", baseURL(r), op.Subscription, op.Location)
	v := requestVersion(r, networkOpType)
	w.Header().Set("Azure-AsyncOperation", fmt.Sprintf("%s/operations/%s?api-version=%s", base, op.ID, v))
	if location {
		w.Header().Set("Location", fmt.Sprintf("%s/operationResults/%s?api-version=%s", base, op.ID, v))
	}
	if !op.done(s.world.Now()) {
		w.Header().Set("Retry-After", s.retryAfterUntil(op.Until))
	}
}

// networkOperation answers a poll of a Network operation: its
// Azure-AsyncOperation status, or with results, its Location.
func (s *Server) networkOperation(w http.ResponseWriter, r *http.Request, sub, location, id string, results bool) {
	if !s.admitSimple(w, r, OpNetworkOperation, subscriptionContext(sub, "Microsoft.Network/locations/operations/read")) {
		return
	}
	op, ok := s.findOperation(id)
	if !ok || op.Namespace != "Microsoft.Network" || !strings.EqualFold(op.Subscription, sub) || op.Location != normalizeLocation(location) {
		s.writeError(w, errOperationNotFound(id))
		return
	}
	now := s.world.Now()
	switch {
	case results && !op.done(now):
		s.writeStillRunning(w, r, op)
	case results:
		w.WriteHeader(http.StatusNoContent)
	case !op.done(now):
		w.Header().Set("Retry-After", s.retryAfterUntil(op.Until))
		writeJSON(w, http.StatusOK, map[string]string{"status": "InProgress"})
	default:
		writeJSON(w, http.StatusOK, map[string]string{"status": "Succeeded"})
	}
}

// groupOperation answers a poll of a resource group's deletion.
func (s *Server) groupOperation(w http.ResponseWriter, r *http.Request, sub, id string) {
	if !s.admitSimple(w, r, OpGroupOperation, subscriptionContext(sub, groupResourceType+"/read")) {
		return
	}
	op, ok := s.findOperation(id)
	if !ok || op.Namespace != groupType.namespace || !strings.EqualFold(op.Subscription, sub) {
		s.writeError(w, errOperationNotFound(id))
		return
	}
	if !op.done(s.world.Now()) {
		s.writeStillRunning(w, r, op)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// writeStillRunning answers a poll of an operation's Location while it
// runs: 202, to poll the same URL again.
func (s *Server) writeStillRunning(w http.ResponseWriter, r *http.Request, op asyncOp) {
	w.Header().Set("Location", baseURL(r)+r.URL.RequestURI())
	w.Header().Set("Retry-After", s.retryAfterUntil(op.Until))
	w.WriteHeader(http.StatusAccepted)
}

func errOperationNotFound(id string) armError {
	return armError{Status: http.StatusNotFound, Code: "NotFound",
		Message: fmt.Sprintf("The operation '%s' was not found.", id)}
}

// retryAfterUntil is a Retry-After for an operation due at t: whole
// seconds, at least one.
func (s *Server) retryAfterUntil(t time.Time) string {
	left := t.Sub(s.world.Now()).Seconds()
	return strconv.Itoa(max(1, int(math.Ceil(left))))
}

// sweep removes from the world's store what finished deleting, and
// operations past ARM's day of keeping them. The fixture's resources are
// kept when deleted: the stored deletion is what keeps them gone. The
// caller holds the store for writing.
func (s *Server) sweep() {
	now := s.world.Now()
	for _, kind := range []string{kindGroup, kindVNet, kindNIC} {
		for _, res := range s.world.Resources(cloud, kind, nil) {
			var h struct {
				header
			}
			if json.Unmarshal(res.Body, &h) != nil || !h.Change.gone(now) || s.isFixture(kind, res.ID) {
				continue
			}
			s.world.DeleteResource(cloud, kind, res.ID)
		}
	}
	// A VM's power state goes with the VM.
	for _, res := range s.world.Resources(cloud, kindPower, nil) {
		var c powerChange
		if json.Unmarshal(res.Body, &c) != nil {
			continue
		}
		if _, ok := s.world.Get(c.Instance); !ok {
			s.world.DeleteResource(cloud, kindPower, res.ID)
		}
	}
	for _, res := range s.world.Resources(cloud, kindOperation, nil) {
		var op asyncOp
		if json.Unmarshal(res.Body, &op) == nil && now.Sub(op.Until) > operationLifetime {
			s.world.DeleteResource(cloud, kindOperation, res.ID)
		}
	}
}

// operationLifetime is how long a finished operation can still be polled.
const operationLifetime = 24 * time.Hour

// isFixture reports whether a stored key is one of the fixture's.
func (s *Server) isFixture(kind, key string) bool {
	switch kind {
	case kindGroup:
		_, ok := s.fixtureGroup(groupOfKey(key))
		return ok && strings.HasSuffix(key, "/resourcegroups/"+fixtureGroupName)
	case kindVNet:
		id, ok := parseID(key)
		if !ok {
			return false
		}
		_, ok = s.fixtureVNet(id)
		return ok
	}
	return false
}

// requestVersion is the request's api-version, which serve has checked,
// for the URLs an answer hands out: clients poll with the version they
// called with.
func requestVersion(r *http.Request, t typeVersions) string {
	if v := r.URL.Query().Get("api-version"); v != "" {
		return v
	}
	return t.newest()
}
