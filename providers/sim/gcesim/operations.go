// SPDX-License-Identifier: Apache-2.0

package gcesim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"

	"github.com/gpufleet/gpufleet/providers/sim"
)

// Zonal operations are the world's: inserts, bulkInserts and deletes of
// instances. A bulkInsert also stands for one insert a created instance,
// in the same operation group, as GCE lists them (gcloud's bulk create
// counts what it made by listing them): each is named after its
// bulkInsert with the instance's place in the batch, "NAME-I", and shares
// its status. The front records the operations it starts in the world's
// resource store, so that zoneOperations.list can find them after a
// restart; the world forgets an operation a day after it is done, and
// the record goes with it.

// waitWorldTime is how long operations.wait waits in the world's time
// before answering with the operation as it is, as the real API does after
// about two minutes.
const waitWorldTime = 2 * time.Minute

// kindZoneOperation is the world's resource kind of the records of zonal
// operations.
const kindZoneOperation = "zoneOperation"

// zoneOpRecord is the record of a zonal operation: the world has the
// operation itself.
type zoneOpRecord struct {
	Scope string `json:"scope"`
}

// zoneOp is a zonal operation: one of the world's, or with member ≥ 0 the
// insert of the member-th instance of a bulkInsert.
type zoneOp struct {
	op     *sim.Operation
	member int
}

// recordOperation keeps a zonal operation's name for zoneOperations.list.
func (s *Server) recordOperation(op *sim.Operation) {
	if _, ok := s.world.GetResource(cloud, kindZoneOperation, op.ID); ok {
		return
	}
	body, _ := json.Marshal(zoneOpRecord{Scope: op.Scope})
	s.world.PutResource(sim.Resource{Cloud: cloud, Kind: kindZoneOperation, ID: op.ID, Region: op.Zone, Body: body})
}

// recordPreemptions keeps the preemptions the world made for
// zoneOperations.list, as the operations the front starts are kept. They
// are recorded when first listed, in the order they happened: among
// themselves they list in that order, which is what a caller filtering on
// operationType sees.
func (s *Server) recordPreemptions() {
	for _, op := range s.world.Operations(cloud, sim.OperationPreempted) {
		s.recordOperation(op)
	}
}

// writeOperation answers a call that started or replayed an operation.
func (s *Server) writeOperation(w http.ResponseWriter, r *http.Request, op *sim.Operation) error {
	s.recordOperation(op)
	return writeProto(w, s.renderOperation(linksOf(r), op))
}

// getOperation serves zoneOperations.get.
func (s *Server) getOperation(w http.ResponseWriter, r *http.Request, project, zone, name string) error {
	if err := s.operationCall(r, OpOperationGet, project, zone, name); err != nil {
		return err
	}
	op, err := s.operation(project, zone, name)
	if err != nil {
		return err
	}
	return writeProto(w, s.renderZoneOp(linksOf(r), op))
}

// waitOperation serves zoneOperations.wait: it answers when the operation
// is DONE, after two minutes of world time, or after Options.WaitTimeout on
// the real clock, whichever comes first.
func (s *Server) waitOperation(w http.ResponseWriter, r *http.Request, project, zone, name string) error {
	if err := s.operationCall(r, OpOperationWait, project, zone, name); err != nil {
		return err
	}
	var op zoneOp
	var lost error
	err := s.waitUntil(r, func() bool {
		op, lost = s.operation(project, zone, name)
		return lost != nil || op.op.Done
	})
	if err != nil {
		return err
	}
	if lost != nil {
		return lost
	}
	return writeProto(w, s.renderZoneOp(linksOf(r), op))
}

// listOperations serves zoneOperations.list: a zone's operations in the
// order they began, filtered on their name, status, type, target or
// group.
func (s *Server) listOperations(w http.ResponseWriter, r *http.Request, project, zone string) error {
	collection := scope(project, zone) + "/operations"
	q, invalid := parseOperationQuery(r, collection)
	if err := admitted(s.operationCall(r, OpOperationsList, project, zone, ""), invalid); err != nil {
		return err
	}
	l := linksOf(r)
	ops := s.zoneOperations(l, project, func(z string) bool { return z == zone })
	items, next := pageBy(r, collection, q, ops, operationField)
	return writeList(w, l, collection, next, &computepb.OperationList{
		Kind:  proto.String("compute#operationList"),
		Items: renderAll(items, keyedOperation),
	})
}

// parseOperationQuery reads an operation list's parameters and refuses a
// filter on any field but operationFields.
func parseOperationQuery(r *http.Request, collection string) (listQuery, *apiError) {
	q, err := parseListQuery(r, collection)
	if err == nil && !q.filter.only(operationFields...) {
		err = invalidField("filter", r.URL.Query().Get("filter"), "Invalid list filter expression.")
	}
	return q, err
}

// newestFirstQuery refuses "creationTimestamp desc" on a list whose order
// is not the order its items began: every list but a zone's operations.
func newestFirstQuery(q listQuery, err *apiError) (listQuery, *apiError) {
	if err == nil && q.newestFirst {
		err = invalidField("orderBy", "creationTimestamp desc", "Sorting by this field is not supported.")
	}
	return q, err
}

// keyedOperation is an operation of a page, rendered when it was listed.
func keyedOperation(op keyed[*computepb.Operation]) *computepb.Operation { return op.item }

// zoneOperations lists a project's zonal operations of the zones keep
// accepts, keyed by zone and by the order they began, a bulkInsert's
// members after it. Records of operations the world has forgotten are
// dropped on the way.
func (s *Server) zoneOperations(l links, project string, keep func(zone string) bool) []keyed[*computepb.Operation] {
	s.recordPreemptions()
	var ops []keyed[*computepb.Operation]
	for _, rec := range s.world.Resources(cloud, kindZoneOperation, func(res sim.Resource) bool { return keep(res.Region) }) {
		var scoped zoneOpRecord
		if json.Unmarshal(rec.Body, &scoped) != nil || scoped.Scope != scope(project, rec.Region) {
			continue
		}
		op, ok := s.world.Operation(rec.ID)
		if !ok {
			s.world.DeleteResource(cloud, kindZoneOperation, rec.ID)
			continue
		}
		members := []int{-1}
		if op.Kind == sim.OperationBulkInsert {
			for i := range op.Batch {
				members = append(members, i)
			}
		}
		for _, m := range members {
			if out, ok := s.tryRender(l, zoneOp{op: op, member: m}); ok {
				key := fmt.Sprintf("%020d-%06d", rec.Seq, m+1)
				ops = append(ops, keyed[*computepb.Operation]{scope: rec.Region, name: key, item: out})
			}
		}
	}
	return ops
}

// operationFields are the fields zoneOperations.list filters on.
var operationFields = []string{"name", "status", "operationType", "targetLink", "targetId", "operationGroupId", "user", "zone", "region"}

func operationField(op *computepb.Operation, c condition) (string, bool) {
	switch c.Field {
	case "name":
		return op.GetName(), true
	case "status":
		return op.GetStatus().String(), true
	case "operationType":
		return op.GetOperationType(), true
	case "targetLink":
		return op.GetTargetLink(), op.TargetLink != nil
	case "targetId":
		return strconv.FormatUint(op.GetTargetId(), 10), op.TargetId != nil
	case "operationGroupId":
		return op.GetOperationGroupId(), op.OperationGroupId != nil
	case "user":
		return op.GetUser(), true
	case "zone":
		// A link, which gcloud's --filter=zone:Z matches as a regular
		// expression on the zone's name.
		return op.GetZone(), op.Zone != nil
	case "region":
		return op.GetRegion(), op.Region != nil
	}
	return "", false
}

// operationCall intercepts an operations call and checks its zone.
func (s *Server) operationCall(r *http.Request, op, project, zone, name string) error {
	resource := scope(project, zone) + "/operations/" + name
	if name == "" {
		resource = scope(project, zone)
	}
	return s.admitZone(r, op, project, zone, resource)
}

// operation finds a GCE operation of a project's zone: the world's, or a
// member insert of a bulkInsert whose instance is still there.
func (s *Server) operation(project, zone, name string) (zoneOp, error) {
	missing := notFound(scope(project, zone) + "/operations/" + name)
	ofZone := func(op *sim.Operation) bool {
		return op.Cloud == cloud && op.Zone == zone && projectOf(op.Scope) == project
	}
	if op, ok := s.world.Operation(name); ok {
		if !ofZone(op) {
			return zoneOp{}, missing
		}
		return zoneOp{op: op, member: -1}, nil
	}
	j := strings.LastIndexByte(name, '-')
	if j < 0 {
		return zoneOp{}, missing
	}
	index := name[j+1:]
	i, err := strconv.Atoi(index)
	if err != nil || i < 0 || strconv.Itoa(i) != index {
		return zoneOp{}, missing
	}
	op, ok := s.world.Operation(name[:j])
	if !ok || !ofZone(op) || op.Kind != sim.OperationBulkInsert || i >= len(op.Batch) {
		return zoneOp{}, missing
	}
	if _, ok := s.world.Get(op.Batch[i]); !ok {
		return zoneOp{}, missing
	}
	return zoneOp{op: op, member: i}, nil
}

// renderZoneOp renders a zonal operation; the member of a bulkInsert
// whose instance is gone renders as the bulkInsert, which cannot happen
// for one operation found.
func (s *Server) renderZoneOp(l links, op zoneOp) *computepb.Operation {
	out, ok := s.tryRender(l, op)
	if !ok {
		return s.renderOperation(l, op.op)
	}
	return out
}

// tryRender renders a zonal operation, and reports false for the member
// insert of an instance the world no longer has, whose name is gone with
// it.
func (s *Server) tryRender(l links, op zoneOp) (*computepb.Operation, bool) {
	out := s.renderOperation(l, op.op)
	if op.member < 0 {
		return out, true
	}
	inst, ok := s.world.Get(op.op.Batch[op.member])
	if !ok {
		return nil, false
	}
	project := projectOf(op.op.Scope)
	name := op.op.ID + "-" + strconv.Itoa(op.member)
	out.Name = proto.String(name)
	out.Id = proto.Uint64(operationID(name))
	out.OperationType = proto.String(string(sim.OperationInsert))
	out.TargetLink = proto.String(l.instance(project, op.op.Zone, inst.Name))
	out.TargetId = proto.Uint64(numericID(inst.ID))
	out.SelfLink = proto.String(l.zone(project, op.op.Zone) + "/operations/" + name)
	out.InstancesBulkInsertOperationMetadata = nil
	return out, true
}
