// SPDX-License-Identifier: Apache-2.0

package gcesim

import (
	"encoding/json"
	"fmt"
	"net/http"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"
)

// aggregatedOperations serves globalOperations.aggregatedList, which
// gcloud's operations list reads: a project's zonal operations, keyed
// "zones/Z", and the operations on its networks and subnetworks, keyed
// "global" and "regions/R", in pages, with a NO_RESULTS_ON_PAGE warning
// for every scope without any on the page. The resource policies'
// operations, which the front keeps apart, are not among them.
func (s *Server) aggregatedOperations(w http.ResponseWriter, r *http.Request, project string) error {
	collection := "projects/" + project + "/aggregated/operations"
	// Aggregated, they are in order of scope first, not of when they
	// began.
	q, invalid := newestFirstQuery(parseOperationQuery(r, collection))
	if err := admitted(s.admit(r, OpOperationsAggregatedList, project, "", "", "projects/"+project), invalid); err != nil {
		return err
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
	scopes := []string{"global"}
	for _, reg := range s.allRegions() {
		scopes = append(scopes, "regions/"+reg)
	}
	for _, z := range s.allZones() {
		scopes = append(scopes, "zones/"+z)
	}
	return writeList(w, l, collection, next, &computepb.OperationAggregatedList{
		Kind: proto.String("compute#operationAggregatedList"),
		// An operation's scope is its key already.
		Items: aggregate(items, "", scopes, keyedOperation,
			func(ops []*computepb.Operation, warning *computepb.Warning) *computepb.OperationsScopedList {
				return &computepb.OperationsScopedList{Operations: ops, Warning: warning}
			}),
	})
}
