package gcesim

import (
	"encoding/json"
	"fmt"
	"net/http"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"

	"github.com/gpufleet/gpufleet/providers/sim"
)

// aggregatedOperations serves globalOperations.aggregatedList, which
// gcloud's operations list reads: a project's zonal operations, keyed
// "zones/Z", and the operations on its networks and subnetworks, keyed
// "global" and "regions/R", in pages, with a NO_RESULTS_ON_PAGE warning
// for every scope without any on the page. The resource policies'
// operations, which the front keeps apart, are not among them.
func (s *Server) aggregatedOperations(w http.ResponseWriter, r *http.Request, project string) error {
	collection := "projects/" + project + "/aggregated/operations"
	q, invalid := parseListQuery(r, collection)
	fc := faultContext{Project: project, Permission: permissions[OpOperationsAggregatedList], Resource: "projects/" + project}
	out, err := s.intercept(r.Context(), sim.Call{Op: OpOperationsAggregatedList})
	if err != nil {
		return err
	}
	if out.Err != nil {
		return s.syncError(out.Err, fc)
	}
	if invalid != nil {
		return invalid
	}
	if !q.filter.only(operationFields...) {
		return invalidField("filter", r.URL.Query().Get("filter"), "Invalid list filter expression.")
	}
	l := linksOf(r)
	var ops []keyed[*computepb.Operation]
	for _, op := range s.zoneOperations(l, project, func(string) bool { return true }) {
		op.scope = "zones/" + op.scope
		ops = append(ops, op)
	}
	for _, rec := range s.world.Resources(cloud, kindOperation, nil) {
		var op resourceOp
		if json.Unmarshal(rec.Body, &op) != nil || op.Project != project {
			continue
		}
		key := "global"
		if op.Region != "" {
			key = "regions/" + op.Region
		}
		ops = append(ops, keyed[*computepb.Operation]{scope: key, name: fmt.Sprintf("%020d", rec.Seq), item: s.renderResourceOp(l, op)})
	}
	items, next := pageBy(r, collection, q, ops, operationField)
	resp := &computepb.OperationAggregatedList{
		Kind:          proto.String("compute#operationAggregatedList"),
		Id:            proto.String(collection),
		SelfLink:      proto.String(l.url(collection)),
		NextPageToken: next,
		Items:         map[string]*computepb.OperationsScopedList{},
	}
	for _, op := range items {
		scoped := resp.Items[op.scope]
		if scoped == nil {
			scoped = &computepb.OperationsScopedList{}
			resp.Items[op.scope] = scoped
		}
		scoped.Operations = append(scoped.Operations, op.item)
	}
	scopes := []string{"global"}
	for _, reg := range s.world.Catalog().RegionsOf(cloud) {
		scopes = append(scopes, "regions/"+reg.Name)
	}
	for _, z := range s.allZones() {
		scopes = append(scopes, "zones/"+z)
	}
	for _, key := range scopes {
		if resp.Items[key] == nil {
			resp.Items[key] = &computepb.OperationsScopedList{Warning: noResults(key)}
		}
	}
	return writeProto(w, resp)
}
